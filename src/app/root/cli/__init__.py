"""The ``clarion`` command (``clarion.app.root.cli:main`` is the console script): the parser and
``main`` in :mod:`.main`, ``serve`` in :mod:`.serve`, the database, user and token commands in
:mod:`.admin`, and the REST client commands in :mod:`.questions`."""

from clarion.app.root.cli.main import build_parser, main

__all__ = ["build_parser", "main"]
