"""``load_bundle`` answers a missing bundle after the same statements as an existing one, so a
caller cannot tell "someone else's" from "none" by the time taken (issue #14)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from tests.integration.sql.support import sql_world


@contextmanager
def statements(engine: Engine) -> Iterator[list[str]]:
    """The SQL statements ``engine`` executes inside the block (first word of each)."""
    seen: list[str] = []

    def record(*args: Any) -> None:
        seen.append(str(args[2]).split(None, 1)[0].upper())

    sa.event.listen(engine, "before_cursor_execute", record)
    try:
        yield seen
    finally:
        sa.event.remove(engine, "before_cursor_execute", record)


def test_a_missing_bundle_is_read_with_the_same_statements_as_an_existing_one(
    engine: Engine,
) -> None:
    world = sql_world(engine)
    world.bundle_in_new_session("p-1", questions=2)
    with statements(engine) as existing:
        assert world.claims.load_bundle("p-1") is not None
    with statements(engine) as missing:
        assert world.claims.load_bundle("never-issued") is None
    assert existing.count("SELECT") == 1  # issue 15: the bundle and its sessions in one read
    assert missing == existing
