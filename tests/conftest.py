"""Shared fixtures: the anyio backend, the PostgreSQL server and fresh databases on it.

Tests that need PostgreSQL take ``make_postgres_database``, ``postgres_database_url`` or
``postgres_server_url`` and are marked ``postgres`` automatically. They run on the server
``CLARION_TEST_POSTGRES_URL`` names or, without it, on one embedded server that the first of
them starts (:mod:`tests.postgres_server`); they are never skipped for want of a server, and a
skipped PostgreSQL test fails the run. With ``CLARION_REQUIRE_POSTGRES=1`` (what ``.ci/run``
sets) a run in which no PostgreSQL test ran fails too, so CI can never pass without exercising
PostgreSQL. Tests under ``tests/e2e`` are marked ``browser``; those marked
``embedded_postgres`` (the embedded server's own) are left out when a server is named.

``make quick`` runs only in-process tests: a test that starts a server on a loopback port or a
child process is marked ``server`` (every test in :data:`SERVER_TESTS`, or by its own mark), and
one that does so without the mark fails, naming what it started (:class:`InProcessGuard`).
"""

from __future__ import annotations

import logging
import multiprocessing.process
import os
import socket
import subprocess
import threading
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import structlog
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
# `make quick` (--hypothesis-profile=quick): a tenth of the examples for the property tests that
# leave the count to the profile; `make test` runs them in full.
settings.register_profile("quick", parent=settings.get_profile("clarion"), max_examples=10)
settings.load_profile("clarion")

POSTGRES_FIXTURES = frozenset(
    {"make_postgres_database", "postgres_database_url", "postgres_server_url"}
)
TESTS = Path(__file__).resolve().parent
BROWSER_TESTS = TESTS / "e2e"
# Every test under these starts a server on a loopback port or a child process: they are marked
# ``server`` here (make test runs them, make quick does not). A test elsewhere that does carries
# its own ``pytest.mark.server``.
SERVER_TESTS = tuple(
    TESTS / path
    for path in (
        "integration/cli/test_serve.py",
        "integration/cli/test_serving.py",
        "integration/cli/test_startup_errors.py",
        "integration/crash",
        "integration/mcp",
        "integration/multiprocess",
        "integration/notifications/test_email_without_user.py",
        "integration/notifications/test_local_recipe.py",
        "integration/postgres_notify",
        "integration/rest/test_load.py",
        "integration/slack",
        "golden/test_wire.py",
        "packaging/test_wheel.py",
        "test_postgres_server.py",
    )
)
# The marks that keep a test out of make quick: only a test with one may listen or spawn.
NOT_QUICK = ("postgres", "browser", "slow", "server")
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


@pytest.fixture(autouse=True)
def logging_restored() -> Iterator[None]:
    """Put the logging configuration back after each test. ``clarion``'s ``main`` configures
    logging as a command line does (a handler on the test's captured standard error, structlog
    through it); left in place, a warning logged by a later test in the same process went to
    that closed stream and printed "Logging error" into the later test's own output."""
    config = structlog.get_config()
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    try:
        yield
    finally:
        structlog.configure(**config)
        for handler in root.handlers[:]:
            # pytest's own capture handlers come and go with each phase: leave them be.
            if handler not in handlers and not type(handler).__module__.startswith("_pytest"):
                root.removeHandler(handler)
        root.setLevel(level)


@pytest.fixture(name="anyio_backend")
def fixture_anyio_backend() -> str:
    return "asyncio"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if POSTGRES_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.postgres)
        if item.path.is_relative_to(BROWSER_TESTS):
            item.add_marker(pytest.mark.browser)
        if any(item.path.is_relative_to(path) for path in SERVER_TESTS):
            item.add_marker(pytest.mark.server)
    if os.environ.get(ENV_URL):
        # A named server replaces the embedded one entirely: its own tests start none either.
        embedded = [item for item in items if "embedded_postgres" in item.keywords]
        if embedded:
            config.hook.pytest_deselected(items=embedded)
            items[:] = [item for item in items if item not in embedded]


class InProcessGuard:
    """Notes each loopback server and child process started while a test that ``make quick``
    runs (one with none of :data:`NOT_QUICK`'s marks) is set up or running: such a test fails,
    so ``make quick`` stays in-process (and quick) as tests are added.

    It wraps ``socket.socket.listen`` (uvicorn, asyncio servers, ``http.server``),
    ``subprocess.Popen`` (``subprocess.run``, asyncio subprocesses) and
    ``multiprocessing``'s ``Process.start``; the wrappers only take a note, from any thread.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._watching = False
        self._started: list[str] = []

    def install(self) -> None:
        guard = self
        listen = socket.socket.listen
        popen_init = subprocess.Popen.__init__
        process_start = multiprocessing.process.BaseProcess.start

        def guarded_listen(sock: socket.socket, *args: Any) -> None:
            guard.note(f"a server listening on {sock.getsockname()!r}")
            listen(sock, *args)

        def guarded_popen_init(
            popen: subprocess.Popen[Any], args: Any, *rest: Any, **kw: Any
        ) -> None:
            guard.note(f"a child process {args!r}")
            popen_init(popen, args, *rest, **kw)

        def guarded_start(process: multiprocessing.process.BaseProcess) -> None:
            guard.note(f"a multiprocessing process {process.name}")
            process_start(process)

        socket.socket.listen = guarded_listen  # type: ignore[method-assign,assignment]
        subprocess.Popen.__init__ = guarded_popen_init  # type: ignore[method-assign,assignment]
        multiprocessing.process.BaseProcess.start = guarded_start  # type: ignore[method-assign,assignment]

    def note(self, what: str) -> None:
        with self._lock:
            if self._watching:
                self._started.append(what)

    def watch(self, item: pytest.Item) -> None:
        with self._lock:
            self._watching = not any(item.get_closest_marker(name) for name in NOT_QUICK)
            self._started = []

    def check(self, item: pytest.Item) -> None:
        """Fail ``item`` if it started a server or a child process without a mark.

        Raises:
            pytest.fail.Exception: naming the first thing it started.
        """
        with self._lock:
            started, self._started, self._watching = self._started, [], False
        if started:
            pytest.fail(
                f"{item.nodeid} started {started[0]} but is not marked server: make quick runs "
                "in-process tests only; mark it pytest.mark.server (or list its directory in "
                "tests/conftest.py SERVER_TESTS)",
                pytrace=False,
            )


guard = InProcessGuard()
guard.install()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Iterator[None]:
    guard.watch(item)
    return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    result = yield  # a failing test raises here: its own failure is the one to report
    guard.check(item)
    return result


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
