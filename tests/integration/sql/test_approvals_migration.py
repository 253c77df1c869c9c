"""The approvals migration (issue #33) on both databases: it only adds tables, so a bundle
stored before it reads exactly as before (no terms, no candidates) and can be claimed; a
request asked after it keeps its terms; and it downgrades cleanly to ``0017_outbox_origins``."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa
from alembic import command
from sqlalchemy.engine import Engine

from clarion.adapters.sql import upgrade_database
from clarion.adapters.sql.engine import write_transaction
from clarion.adapters.sql.migrate import alembic_config
from clarion.domain.approvals import Candidates
from clarion.ports.testing import claim
from clarion.ports.testing.approvals import DEPLOY, ask_approval
from tests.integration.sql.revisions import BACKENDS, engine_at_revision
from tests.integration.sql.support import sql_world

PREVIOUS = "0017_outbox_origins"
NEW_TABLES = {
    "bundle_extras",
    "bundle_candidates",
    "approval_votes",
    "groups",
    "group_members",
    "standing_approvals",
}


@pytest.fixture(name="old_engine", params=BACKENDS)
def fixture_old_engine(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Engine]:
    """A database migrated to the revision before approvals."""
    with engine_at_revision(request, tmp_path, PREVIOUS) as engine:
        yield engine


def _tables(engine: Engine) -> set[str]:
    return set(sa.inspect(engine).get_table_names())


def test_bundles_stored_before_read_as_before_and_the_tables_come_and_go(
    old_engine: Engine,
) -> None:
    assert not NEW_TABLES & _tables(old_engine)
    world = sql_world(old_engine)
    session = world.session()
    world.ask(session.id, "old")
    upgrade_database(old_engine)
    assert _tables(old_engine) >= NEW_TABLES
    old = world.bundle("old")
    assert (old.approval, old.candidates) == (None, Candidates())
    assert claim(world, "old").claimed
    ask_approval(world, "new", candidates=Candidates(user_ids=("u1",)))
    new = world.bundle("new")
    assert new.approval is not None
    assert new.approval.action_digest == DEPLOY.digest
    assert new.candidates == Candidates(user_ids=("u1",))
    config = alembic_config()
    with write_transaction(old_engine) as connection:
        config.attributes["connection"] = connection
        command.downgrade(config, PREVIOUS)
    assert not NEW_TABLES & _tables(old_engine)
