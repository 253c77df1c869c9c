"""Shared fixtures: the anyio backend, the PostgreSQL server and fresh databases on it.

Tests that need PostgreSQL take ``make_postgres_database``, ``postgres_database_url`` or
``postgres_server_url`` and are marked ``postgres`` automatically. They run on the server
``CLARION_TEST_POSTGRES_URL`` names or, without it, on one embedded server that the first of
them starts (:mod:`tests.postgres_server`); they are never skipped for want of a server, and a
skipped PostgreSQL test fails the run. With ``CLARION_REQUIRE_POSTGRES=1`` (what ``.ci/run``
sets) a run in which no PostgreSQL test ran fails too, so CI can never pass without exercising
PostgreSQL. Tests under ``tests/e2e`` are marked ``browser``; those marked
``embedded_postgres`` (the embedded server's own) are left out when a server is named.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings
from sqlalchemy.engine import Engine, make_url

from tests.integration.sql.support import (
    empty_database,
    migrated_postgres_engine,
    migrated_sqlite_engine,
)
from tests.postgres_server import (
    ENV_URL,
    EmbeddedPostgres,
    EmbeddedPostgresUnavailable,
    admin_connection,
)

# The machines are shared and noisy: timing must never fail a property test (speed is measured
# by benchmarks/, not asserted here).
settings.register_profile("clarion", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("clarion")

POSTGRES_FIXTURES = frozenset(
    {"make_postgres_database", "postgres_database_url", "postgres_server_url"}
)
BROWSER_TESTS = Path(__file__).resolve().parent / "e2e"
_postgres_outcomes: dict[str, int] = {"passed": 0, "skipped": 0, "failed": 0}


def _require_postgres() -> bool:
    return os.environ.get("CLARION_REQUIRE_POSTGRES") == "1"


def pytest_configure(config: pytest.Config) -> None:
    """Send structlog through the standard library, where pytest captures it per test (the
    library never configures logging; unconfigured structlog would print to stdout, including
    from server threads between tests)."""
    import structlog

    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.stdlib.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.JSONRenderer(),
        ],
        logger_factory=structlog.stdlib.LoggerFactory(),
        cache_logger_on_first_use=False,
    )


@pytest.fixture(name="anyio_backend")
def fixture_anyio_backend() -> str:
    return "asyncio"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if POSTGRES_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.postgres)
        if item.path.is_relative_to(BROWSER_TESTS):
            item.add_marker(pytest.mark.browser)
    if os.environ.get(ENV_URL):
        # A named server replaces the embedded one entirely: its own tests start none either.
        embedded = [item for item in items if "embedded_postgres" in item.keywords]
        if embedded:
            config.hook.pytest_deselected(items=embedded)
            items[:] = [item for item in items if item not in embedded]


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if "postgres" not in report.keywords:
        return
    if report.when == "call" or (report.when == "setup" and not report.passed):
        _postgres_outcomes[report.outcome] += 1


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if session.config.option.collectonly or hasattr(session.config, "workerinput"):
        # Under pytest-xdist each worker sees only its share; the controller receives every
        # worker's reports through pytest_runtest_logreport and judges the whole run.
        return
    ran = _postgres_outcomes["passed"] + _postgres_outcomes["failed"]
    skipped = _postgres_outcomes["skipped"]
    if skipped or (_require_postgres() and ran == 0):
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        message = f"{skipped} PostgreSQL test(s) were skipped and {ran} ran"
        if not skipped:
            message = f"CLARION_REQUIRE_POSTGRES=1 but {message}"
        if reporter is not None:
            # After -q's progress dots the line is still open.
            reporter.write("\n")
            reporter.write_line(message, red=True)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


@pytest.fixture(name="postgres_server_url", scope="session")
def fixture_postgres_server_url() -> Iterator[str]:
    """The server to create test databases on: ``CLARION_TEST_POSTGRES_URL``'s or, without it,
    an embedded one started now and stopped when the session ends."""
    url = os.environ.get(ENV_URL, "")
    if url:
        yield url
        return
    try:
        server = EmbeddedPostgres.start()
    except EmbeddedPostgresUnavailable as error:
        pytest.exit(str(error), returncode=pytest.ExitCode.TESTS_FAILED)
    try:
        yield server.url
    finally:
        server.stop()


@pytest.fixture(name="make_postgres_database")
def fixture_make_postgres_database(
    request: pytest.FixtureRequest, postgres_server_url: str
) -> Iterator[Callable[[], str]]:
    """A factory of fresh, empty PostgreSQL databases, each dropped after the test.

    The test must carry the ``postgres`` marker (automatic when it names this fixture; a
    parameter that reaches it through ``request.getfixturevalue`` must be a
    ``pytest.param(..., marks=pytest.mark.postgres)``): the marker is how ``make quick``
    leaves PostgreSQL out and how CI counts the PostgreSQL tests that ran."""
    if request.node.get_closest_marker("postgres") is None:
        pytest.fail(
            f"{request.node.nodeid} uses PostgreSQL without the postgres marker; mark its "
            "PostgreSQL parameter with pytest.mark.postgres"
        )
    admin = make_url(postgres_server_url)
    created: list[str] = []

    def make() -> str:
        name = f"clarion_test_{uuid.uuid4().hex[:16]}"
        with admin_connection(postgres_server_url) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        created.append(name)
        return admin.set(database=name).render_as_string(hide_password=False)

    yield make
    if created:
        with admin_connection(postgres_server_url) as conn:
            for name in created:
                conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture(name="postgres_database_url")
def fixture_postgres_database_url(make_postgres_database: Callable[[], str]) -> str:
    """One fresh PostgreSQL database for this test."""
    return make_postgres_database()


@pytest.fixture(name="sqlite_engine")
def fixture_sqlite_engine(tmp_path: Path) -> Iterator[Engine]:
    """A fresh, migrated SQLite file database."""
    with migrated_sqlite_engine(tmp_path) as engine:
        yield engine


@pytest.fixture(name="shared_postgres_engine", scope="module")
def fixture_shared_postgres_engine(postgres_server_url: str) -> Iterator[Engine]:
    """One migrated PostgreSQL database per test module (created once: migrating is slow)."""
    with migrated_postgres_engine(postgres_server_url) as engine:
        yield engine


@pytest.fixture(name="postgres_engine")
def fixture_postgres_engine(shared_postgres_engine: Engine) -> Engine:
    """The module's migrated PostgreSQL database, emptied for this test."""
    empty_database(shared_postgres_engine)
    return shared_postgres_engine
