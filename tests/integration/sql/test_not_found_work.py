"""``load_bundle`` answers a missing bundle after the same statements as an existing one, and
``load_visible_bundle`` a foreign one after the same statement and rows as a missing one, so a
caller cannot tell "someone else's" from "none" by the time taken (issue #14)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from clarion.adapters.sql.statements import visible_bundle_with_sessions
from clarion.adapters.sql.visibility import Seen
from clarion.domain.listing import Visibility
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


def test_a_foreign_bundle_reads_zero_rows_like_a_fabricated_one(engine: Engine) -> None:
    """Issue #14: visibility is judged inside the statement that loads the bundle, so a bundle
    the caller may not see returns no row from the database (nothing decoded), exactly like an
    id nobody issued — one SELECT each, the same statement."""
    world = sql_world(engine)
    theirs = world.workspace("theirs", owner_id="alice")
    world.bundle_in_new_session("p-1", workspace_id=theirs.id, questions=2)
    bob, alice = Visibility.owned_by("bob"), Visibility.owned_by("alice")
    with statements(engine) as foreign:
        assert world.claims.load_visible_bundle("p-1", bob) is None
    with statements(engine) as fabricated:
        assert world.claims.load_visible_bundle("never-issued", bob) is None
    assert foreign == fabricated
    assert foreign.count("SELECT") == 1
    seen = Seen.of(bob)
    with engine.connect() as connection:
        for pending_id in ("p-1", "never-issued"):
            params = {"pending_id": pending_id, **Seen.parameters(bob)}
            result = connection.execute(visible_bundle_with_sessions(seen), params)
            assert result.all() == []
    mine = world.claims.load_visible_bundle("p-1", alice)
    assert mine is not None
    assert len(mine.rows) == 2
