"""#29 S11 on the databases: the bound on a user's live login sessions holds when many logins
of one user race over two connection pools (two processes' worth): the user's row is locked
while the oldest sessions are ended, so no interleaving leaves more than the bound live."""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Iterator

import pytest
from sqlalchemy.engine import Engine

from clarion.adapters.sql import SqlTokenStore, create_engine
from clarion.adapters.system import SystemClock, UuidIds
from clarion.domain.host import LOGIN_SESSION
from tests.integration.sql.test_races import run_together

RACERS = 12
ROUNDS = 5
KEEP = 3


@pytest.fixture(name="second_engine")
def fixture_second_engine(engine: Engine) -> Iterator[Engine]:
    other = create_engine(engine.url)
    try:
        yield other
    finally:
        other.dispose()


def test_racing_logins_of_one_user_leave_at_most_the_bound_live(
    engine: Engine, second_engine: Engine
) -> None:
    clock = SystemClock()
    stores = [SqlTokenStore(pool, clock, UuidIds()) for pool in (engine, second_engine)]
    user = stores[0].create_user("ann")
    for round_ in range(ROUNDS):
        racers = [
            functools.partial(
                stores[n % 2].create_login_session,
                user.id,
                token_id=f"s-{round_}-{n}",
                token_hash=hashlib.sha256(f"s-{round_}-{n}".encode()).hexdigest(),
                parent_id="",
                expires_at=None,
                keep=KEEP,
            )
            for n in range(RACERS)
        ]
        run_together(list(racers))
        now = clock.now()
        live = [
            token
            for token in stores[0].list_tokens(user.id)
            if token.kind == LOGIN_SESSION and token.usable_at(now)
        ]
        assert len(live) == KEEP, (round_, [t.id for t in live])
