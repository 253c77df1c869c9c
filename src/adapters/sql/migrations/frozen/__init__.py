"""Frozen copies of the helpers the migrations use (issue #32).

A migration is history: upgrading an old database must do tomorrow exactly what it did the day
the migration was written. So no file of ``versions/`` imports the live adapter modules
(``records``, ``metadata_sql``, ``types``, ``schema``, ...), whose next edit would silently
change every past migration that used them; they import these copies instead, taken at
revision 0016_closed_history, and an import-linter contract and
``tests/architecture/test_migrations.py`` keep it that way.

Never edit a function here: the test pins each file's digest. When a new migration needs a
helper that has changed since, copy the new version into a new module (``<name>_<revision>.py``)
and import that one; the old copies stay as they are for the migrations that use them.

The copies may import :mod:`clarion.domain` (the stored rows' reading: ``parse_row``, the
question digest), never an adapter module.
"""
