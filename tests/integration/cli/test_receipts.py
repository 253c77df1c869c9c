"""Issue #34 from a shell: ``clarion receipts keys / verify / new-key``, the audit export's
receipts, and the documented recipe (docs/examples/verify_receipt.py) run in a separate process
against a real receipt from a running server on SQLite (its key file beside the database)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest

from clarion.adapters.receipts import parse_receipt_keys
from clarion.app.root.cli import main
from clarion.app.root.compose import build_clarion
from clarion.app.root.settings import Settings
from clarion.domain.receipts import asked_digest
from tests.integration.cli.support import run_cli
from tests.sockets import serving_in_thread

ROOT = Path(__file__).resolve().parents[3]
RECIPE = ROOT / "docs" / "examples" / "verify_receipt.py"
KEYS_PATH = "/.well-known/clarion-receipt-keys"


@pytest.fixture(name="resolved", scope="module")
def fixture_resolved(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """A served SQLite database with one bundle answered over REST: its receipt, the published
    keys, the digest of what was asked, and the files the commands read."""
    folder = tmp_path_factory.mktemp("receipts")
    database_url = f"sqlite:///{folder / 'clarion.db'}"
    clarion = build_clarion(Settings(database_url=database_url, auth_enabled=False))
    try:
        with serving_in_thread(clarion.asgi_app) as url:
            workspace = httpx2.post(f"{url}/api/v1/workspaces", json={"name": "w"}).json()
            task = httpx2.post(
                f"{url}/api/v1/tasks", json={"title": "t", "workspace_id": workspace["id"]}
            ).json()
            session = httpx2.post(f"{url}/api/v1/tasks/{task['id']}/sessions", json={}).json()
            options = [
                {"label": "Yes", "description": "ship"},
                {"label": "No", "description": "wait"},
            ]
            question = {"prompt": "Deploy v2?", "options": options}
            body = {"session_id": session["id"], "questions": [question], "context": "ctx"}
            pending_id = httpx2.post(f"{url}/api/v1/clarification/request", json=body).json()[
                "pending_id"
            ]
            answer = {"answers": [{"question_id": "q1", "selected_options": ["q1_opt1"]}]}
            respond = f"{url}/api/v1/clarification/{pending_id}/respond"
            assert httpx2.post(respond, json=answer).status_code == 200
            receipt = httpx2.get(f"{url}/api/v1/clarification/{pending_id}/receipt").json()
            keys = httpx2.get(f"{url}{KEYS_PATH}").json()
            bundle = clarion.storage.claims.load_bundle(pending_id)
            assert bundle is not None
            files = {"receipt_file": folder / "receipt.json", "keys_file": folder / "keys.json"}
            files["receipt_file"].write_text(json.dumps(receipt), encoding="utf-8")
            files["keys_file"].write_text(json.dumps(keys), encoding="utf-8")
            yield {
                "url": url,
                "database_url": database_url,
                "folder": folder,
                "pending_id": pending_id,
                "receipt": receipt,
                "keys": keys,
                "digest": asked_digest(bundle.questions, bundle.context),
                **files,
            }
    finally:
        clarion.close()


def _tampered(resolved: dict[str, Any], name: str, change: dict[str, Any]) -> Path:
    receipt = json.loads(json.dumps(resolved["receipt"]))
    receipt["payload"].update(change)
    path = Path(resolved["folder"]) / name
    path.write_text(json.dumps(receipt), encoding="utf-8")
    return path


@pytest.mark.server
def test_the_server_keeps_its_key_beside_the_database_and_the_cli_publishes_it(
    resolved: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    key_file = Path(resolved["folder"]) / "clarion.db.receipt-key"
    assert key_file.stat().st_mode & 0o077 == 0
    code, out, _ = run_cli(capsys, "receipts", "keys", "--database-url", resolved["database_url"])
    assert code == 0
    assert json.loads(out) == resolved["keys"]


@pytest.mark.server
def test_verify_accepts_the_receipt_with_the_published_keys_from_any_source(
    resolved: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    receipt = str(resolved["receipt_file"])
    for keys in (
        ["--database-url", resolved["database_url"]],
        ["--keys", f"{resolved['url']}{KEYS_PATH}"],
        ["--keys", str(resolved["keys_file"]), "--action-digest", resolved["digest"]],
    ):
        code, out, err = run_cli(capsys, "receipts", "verify", receipt, *keys)
        assert (code, err) == (0, "")
        assert out.startswith(f"valid: {resolved['pending_id']} answered by ")


@pytest.mark.server
@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"outcome": {"status": "rejected"}}, "signature"),
        ({"resolved_by": {"identity_id": "x", "kind": "user", "display_name": "Eve"}}, "signature"),
        ({"resolved_at": "2030-01-01T00:00:00.000000Z"}, "signature"),
        ({"request_id": "another"}, "signature"),
    ],
)
def test_verify_refuses_a_changed_receipt_naming_the_failure(
    resolved: dict[str, Any], capsys: pytest.CaptureFixture[str], change: Any, field: str
) -> None:
    changed = _tampered(resolved, "changed.json", change)
    code, _, err = run_cli(
        capsys, "receipts", "verify", str(changed), "--keys", str(resolved["keys_file"])
    )
    assert code == 1
    assert f"receipt invalid ({field})" in err


@pytest.mark.server
def test_verify_refuses_a_receipt_for_another_action_or_an_unknown_key(
    resolved: dict[str, Any], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    receipt, keys = str(resolved["receipt_file"]), str(resolved["keys_file"])
    other = "0" * 64
    code, _, err = run_cli(
        capsys, "receipts", "verify", receipt, "--keys", keys, "--action-digest", other
    )
    assert code == 1
    assert "receipt invalid (payload.asked_digest)" in err
    rotated = tmp_path / "rotated.json"
    rotated.write_text(json.dumps({"keys": []}), encoding="utf-8")
    code, _, err = run_cli(capsys, "receipts", "verify", receipt, "--keys", str(rotated))
    assert code == 1
    assert "receipt invalid (kid)" in err
    code, _, err = run_cli(
        capsys, "receipts", "verify", str(tmp_path / "nope.json"), "--keys", keys
    )
    assert code == 1
    assert "cannot read the receipt" in err


@pytest.mark.server
def test_the_audit_export_carries_each_resolutions_receipt(
    resolved: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run_cli(capsys, "audit", "export", "--database-url", resolved["database_url"])
    assert code == 0
    [line] = [json.loads(text) for text in out.splitlines()]
    assert line["receipt"] == resolved["receipt"]


def test_without_lasting_keys_the_cli_refuses_to_publish_a_throwaway_key(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("CLARION_RECEIPT_KEYS", raising=False)
    code, _, err = run_cli(capsys, "receipts", "keys", "--database-url", "memory://")
    assert code == 1
    assert "CLARION_RECEIPT_KEYS" in err
    code, out, _ = run_cli(capsys, "receipts", "new-key", "--kid", "2027-01")
    assert code == 0
    monkeypatch.setenv("CLARION_RECEIPT_KEYS", out.strip())
    code, out, _ = run_cli(capsys, "receipts", "keys", "--database-url", "memory://")
    assert code == 0
    assert [key["kid"] for key in json.loads(out)["keys"]] == ["2027-01"]
    assert main(["receipts", "new-key", "--kid", "bad kid"]) == 1
    [(kid, _)] = parse_receipt_keys(run_cli(capsys, "receipts", "new-key")[1], "new-key")
    assert kid.startswith("k-")


def _recipe(*arguments: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(RECIPE), *arguments],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@pytest.mark.server
def test_the_documented_recipe_verifies_a_real_receipt_in_a_separate_process(
    resolved: dict[str, Any],
) -> None:
    receipt, keys = str(resolved["receipt_file"]), str(resolved["keys_file"])
    valid = _recipe(receipt, keys, resolved["digest"])
    assert valid.returncode == 0, valid.stderr
    assert valid.stdout == f"valid: {resolved['pending_id']} answered\n"
    other_action = _recipe(receipt, keys, "f" * 64)
    assert other_action.returncode != 0
    assert "different action" in other_action.stderr
    for name, change in (
        ("status.json", {"outcome": {"status": "rejected"}}),
        ("digest.json", {"asked_digest": "f" * 64}),
        (
            "who.json",
            {"resolved_by": {**resolved["receipt"]["payload"]["resolved_by"], "kind": "agent"}},
        ),
    ):
        changed = _recipe(str(_tampered(resolved, name, change)), keys)
        assert changed.returncode != 0
        assert "InvalidSignature" in changed.stderr


def test_the_recipe_in_the_docs_is_the_example_file_itself() -> None:
    text = (ROOT / "docs" / "receipts.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.DOTALL)
    assert RECIPE.read_text(encoding="utf-8") in blocks
    code = [line for line in RECIPE.read_text(encoding="utf-8").splitlines() if line.strip()]
    assert len(code) <= 30  # "about 20 lines" (blank lines not counted)
