"""The outermost ring: the composition root, settings, the CLI, the demo and serving.

Only this package imports concrete adapters. It depends on every other ring; nothing but the
lazy entry points of :mod:`clarion.app` imports it.
"""
