"""``python -m clarion`` runs the ``clarion`` command."""

from clarion.app.cli import main

raise SystemExit(main())
