"""Benchmark scripts: each prints figures; none runs inside the test suite."""
