"""Adapters: the in-memory, SQL, REST, MCP and web implementations of Clarion's ports."""
