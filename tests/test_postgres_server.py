"""The embedded PostgreSQL the suite starts when ``CLARION_TEST_POSTGRES_URL`` is unset."""

from __future__ import annotations

import subprocess
from pathlib import Path

import psycopg
import pytest
from sqlalchemy.engine import make_url

from tests.postgres_server import (
    ENV_URL,
    EmbeddedPostgres,
    EmbeddedPostgresUnavailable,
    admin_connection,
)


class FakeServer:
    def __init__(self, uri: str, *, cleanup_fails: bool = False) -> None:
        self.uri = uri
        self.cleanup_fails = cleanup_fails
        self.cleanups = 0

    def get_uri(self, database: str | None = None) -> str:
        return self.uri

    def cleanup(self) -> None:
        self.cleanups += 1
        if self.cleanup_fails:
            raise subprocess.CalledProcessError(1, ["pg_ctl", "stop"])


def test_a_server_that_cannot_start_fails_in_one_line_naming_the_variable_and_leaves_nothing() -> (
    None
):
    tried: list[Path] = []

    def unsupported(pgdata: Path) -> FakeServer:
        tried.append(pgdata)
        (pgdata / "PG_VERSION").write_text("18\n")
        raise subprocess.CalledProcessError(1, ["initdb", "-D", str(pgdata)], "no\nluck")

    with pytest.raises(EmbeddedPostgresUnavailable) as raised:
        EmbeddedPostgres.start(unsupported)

    message = str(raised.value)
    assert "\n" not in message
    assert f"{ENV_URL}=postgresql+psycopg://" in message
    assert isinstance(raised.value.__cause__, subprocess.CalledProcessError)
    assert len(tried) == 1
    assert not tried[0].exists()


def test_the_url_names_the_servers_socket_for_psycopg_without_a_password() -> None:
    server = FakeServer("postgresql://postgres:@/postgres?host=/tmp/clarion-test-postgres-x")
    embedded = EmbeddedPostgres.start(lambda pgdata: server)
    try:
        url = make_url(embedded.url)
        assert (url.drivername, url.username, url.password) == (
            "postgresql+psycopg",
            "postgres",
            None,
        )
        assert (url.host, url.database) == (None, "postgres")
        assert url.query == {"host": "/tmp/clarion-test-postgres-x"}
    finally:
        embedded.stop()
    assert server.cleanups == 1


def test_stopping_removes_the_directory_even_when_the_server_fails_to_stop() -> None:
    server = FakeServer("postgresql://postgres:@/postgres?host=/tmp/x", cleanup_fails=True)
    embedded = EmbeddedPostgres.start(lambda pgdata: server)
    assert embedded.directory.is_dir()

    with pytest.raises(subprocess.CalledProcessError):
        embedded.stop()

    assert not embedded.directory.exists()


@pytest.mark.postgres
@pytest.mark.embedded_postgres
def test_a_real_embedded_server_serves_sql_and_is_gone_after_stopping() -> None:
    embedded = EmbeddedPostgres.start()
    try:
        with admin_connection(embedded.url) as connection:
            connection.execute('CREATE DATABASE "clarion_probe"')
            cursor = connection.execute(
                "SELECT datname FROM pg_database WHERE datname LIKE 'clarion%'"
            )
            assert cursor.fetchall() == [("clarion_probe",)]
    finally:
        embedded.stop()

    assert not embedded.directory.exists()
    with pytest.raises(psycopg.OperationalError):
        admin_connection(embedded.url).close()
