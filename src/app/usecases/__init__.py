"""Use cases: the application operations every surface (REST, MCP, web, CLI) calls.

This sub-package is the application ring: its modules import ports and the domain only, never an
adapter or :mod:`clarion.app.root`; :func:`clarion.app.usecases.services.build_services` wires one
instance of each.
"""
