"""The half of each store that does not depend on where records are kept (issue #32).

The memory and SQL adapters implement the same store ports; what a new record is made of (its
id, its timestamps, the domain's rules for it) is the same for both, so it is written here once,
and each adapter supplies only how it checks and keeps the record (its ``_insert_…``,
``_add_…`` and ``_finish`` methods). This package imports no technology adapter.
"""
