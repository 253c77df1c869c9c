"""Shared fixtures: the anyio backend and fresh PostgreSQL databases.

Tests that need PostgreSQL take the ``make_postgres_database`` (or ``postgres_database_url``)
fixture and are marked ``postgres`` automatically. They run when ``CLARION_TEST_POSTGRES_URL``
is set. With ``CLARION_REQUIRE_POSTGRES=1`` (what ``.ci/run`` sets) a skipped or missing
PostgreSQL test fails the run, so CI can never pass without exercising PostgreSQL.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterator

import pytest
from hypothesis import HealthCheck, settings

# The machines are shared and noisy: timing must never fail a property test (speed is measured
# by benchmarks/, not asserted here).
settings.register_profile("clarion", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("clarion")

POSTGRES_FIXTURES = frozenset({"make_postgres_database", "postgres_database_url"})
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


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if POSTGRES_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.postgres)


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if "postgres" not in report.keywords:
        return
    if report.when == "call" or (report.when == "setup" and not report.passed):
        _postgres_outcomes[report.outcome] += 1


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if not _require_postgres() or session.config.option.collectonly:
        return
    ran = _postgres_outcomes["passed"] + _postgres_outcomes["failed"]
    if _postgres_outcomes["skipped"] or ran == 0:
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        message = (
            f"CLARION_REQUIRE_POSTGRES=1 but {_postgres_outcomes['skipped']} PostgreSQL test(s) "
            f"were skipped and {ran} ran"
        )
        if reporter is not None:
            reporter.write_line(message, red=True)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def _admin_url() -> str:
    url = os.environ.get("CLARION_TEST_POSTGRES_URL", "")
    if not url:
        if _require_postgres():
            pytest.fail("CLARION_REQUIRE_POSTGRES=1 needs CLARION_TEST_POSTGRES_URL")
        pytest.skip("CLARION_TEST_POSTGRES_URL is not set")
    return url


@pytest.fixture(name="make_postgres_database")
def fixture_make_postgres_database() -> Iterator[Callable[[], str]]:
    """A factory of fresh, empty PostgreSQL databases, each dropped after the test."""
    import psycopg
    from sqlalchemy.engine import make_url

    admin = make_url(_admin_url())
    created: list[str] = []

    def connect() -> psycopg.Connection[tuple[object, ...]]:
        return psycopg.connect(
            host=admin.host or "127.0.0.1",
            port=admin.port or 5432,
            user=admin.username or "postgres",
            password=admin.password,
            dbname=admin.database or "postgres",
            autocommit=True,
        )

    def make() -> str:
        name = f"clarion_test_{uuid.uuid4().hex[:16]}"
        with connect() as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        created.append(name)
        return admin.set(database=name).render_as_string(hide_password=False)

    yield make
    if created:
        with connect() as conn:
            for name in created:
                conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture(name="postgres_database_url")
def fixture_postgres_database_url(make_postgres_database: Callable[[], str]) -> str:
    """One fresh PostgreSQL database for this test."""
    return make_postgres_database()
