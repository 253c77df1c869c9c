"""``clarion notify add|list|remove`` (issue #17): routes are stored in the server's database,
read back by the server's own store, and bad input is refused naming the problem."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from clarion.app.root.cli import main
from clarion.app.root.compose import Clarion, build_clarion
from clarion.app.root.settings import Settings


@pytest.fixture(
    name="database_url", params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)]
)
def fixture_database_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'notify.db'}"
    return str(request.getfixturevalue("postgres_database_url"))


@pytest.fixture(name="clarion")
def fixture_clarion(database_url: str) -> Iterator[Clarion]:
    clarion = build_clarion(Settings(database_url=database_url, live_delivery="memory"))
    clarion.upgrade()  # the server's start-up step: the schema the CLI and the server share
    try:
        yield clarion
    finally:
        clarion.close()


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_added_routes_are_listed_and_read_by_the_server_and_removed(
    capsys: pytest.CaptureFixture[str], database_url: str, clarion: Clarion
) -> None:
    db = ["--database-url", database_url]
    code, out, _ = _run(capsys, "notify", "add", "--workspace", "W", "email:alice@example.com", *db)
    assert code == 0
    email_id = out.strip()
    code, out, _ = _run(
        capsys,
        "notify",
        "add",
        "webhook:https://hooks.example/x",
        "--remind-after",
        "600",
        "--deadline-after",
        "3600",
        "--on-deadline",
        "default:q1_opt1",
        *db,
    )
    assert code == 0
    hook_id = out.strip()
    code, out, _ = _run(capsys, "notify", "list", "--json", *db)
    listed = {route["id"]: route for route in json.loads(out)}
    assert listed[email_id]["workspace_id"] == "W"
    assert listed[hook_id]["on_deadline"] == "default:q1_opt1"
    store = clarion.storage.notifications
    assert store is not None
    assert [r.id for r in store.routes_for("W")] == [email_id]
    assert [r.remind_after_s for r in store.routes_for("")] == [600.0]
    code, out, _ = _run(capsys, "notify", "remove", email_id, *db)
    assert code == 0
    assert store.get_route(email_id) is None
    code, _, err = _run(capsys, "notify", "remove", email_id, *db)
    assert code != 0
    assert email_id in err


@pytest.mark.parametrize(
    "argv",
    [
        ["bogus:x"],
        ["email:not-an-address"],
        ["webhook:ftp://x"],
        ["webhook:https://h.example/x", "--on-deadline", "expire"],
        ["webhook:https://h.example/x", "--events", "answerable,bogus"],
        ["webhook:https://h.example/x", "--escalate-after", "60"],
    ],
)
def test_a_bad_route_is_refused_and_nothing_is_stored(
    capsys: pytest.CaptureFixture[str], database_url: str, clarion: Clarion, argv: list[str]
) -> None:
    code, _, err = _run(capsys, "notify", "add", *argv, "--database-url", database_url)
    assert code != 0
    assert err.startswith("clarion: error:")
    store = clarion.storage.notifications
    assert store is not None
    assert store.list_routes() == ()
