"""Abuse benches of issue #29: each prints before/after figures for a clarion executable."""
