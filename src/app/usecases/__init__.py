"""Use cases: the application operations every surface (REST, MCP, web, CLI) calls.

They import ports and the domain only, never an adapter; :func:`clarion.app.services.build_services`
wires one instance of each.
"""
