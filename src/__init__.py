"""Clarion: agents ask people structured clarification questions; anyone allowed answers once.

The package is layered as rings (see ``docs/architecture.md``):

- :mod:`clarion.domain` — pure values and rules (no I/O);
- :mod:`clarion.ports` — the protocols adapters implement, with their contract suites;
- :mod:`clarion.adapters` — in-memory, SQL, REST, MCP and web adapters;
- :mod:`clarion.app` — use cases, the composition root and the CLI.
"""

__version__ = "0.1.0"
