"""``python -m clarion`` runs the ``clarion`` command."""

from clarion.app.root.cli import main

raise SystemExit(main())
