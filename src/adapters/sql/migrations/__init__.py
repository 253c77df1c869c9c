"""Alembic migrations shipped inside the package and run programmatically
(:func:`clarion.adapters.sql.upgrade_database`); no ``alembic.ini`` is needed."""
