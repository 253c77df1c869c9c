"""The golden comparison itself: key order never matters, any other byte does, and a
regeneration is never mistaken for a pass (the promise of ``tests/golden/test_wire.py``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.golden.scenario import UPDATE_VARIABLE, canonical, check_golden, scrub


def _golden(directory: Path, name: str, value: object) -> None:
    (directory / f"{name}.json").write_text(canonical(value), encoding="utf-8")


def test_key_order_is_not_a_difference(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(UPDATE_VARIABLE, raising=False)
    _golden(tmp_path, "rest", [{"case": "a", "body": {"x": 1, "y": [1, 2]}}])
    check_golden({"rest": [{"body": {"y": [1, 2], "x": 1}, "case": "a"}]}, tmp_path)


@pytest.mark.parametrize(
    "changed",
    [
        {"x": 2},  # a value
        {"x": 1, "z": None},  # an added key, even a null one
        {},  # a dropped key
        {"x": 1.0},  # 1 and 1.0 are different bytes on the wire
    ],
    ids=["value", "added-key", "dropped-key", "number-form"],
)
def test_any_other_change_fails_naming_the_case(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, changed: dict[str, object]
) -> None:
    """R12, L4a: an always-present key that goes missing (or appears) is a wire change."""
    monkeypatch.delenv(UPDATE_VARIABLE, raising=False)
    _golden(tmp_path, "rest", [{"case": "ok", "body": {}}, {"case": "a", "body": {"x": 1}}])
    with pytest.raises(AssertionError, match=r"^a$"):
        check_golden(
            {"rest": [{"case": "ok", "body": {}}, {"case": "a", "body": changed}]}, tmp_path
        )


def test_a_missing_golden_file_fails(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(UPDATE_VARIABLE, raising=False)
    with pytest.raises(AssertionError, match="missing"):
        check_golden({"openapi": {"openapi": "3.1.0"}}, tmp_path)


def test_regenerating_rewrites_the_files_and_still_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(UPDATE_VARIABLE, "1")
    with pytest.raises(pytest.fail.Exception, match="rewrote"):
        check_golden({"openapi": {"b": 1, "a": 2}}, tmp_path)
    assert (tmp_path / "openapi.json").read_text(encoding="utf-8") == '{\n  "a": 2,\n  "b": 1\n}\n'


def test_only_the_random_secrets_are_scrubbed() -> None:
    body = {
        "agent_token": "clarion_agt_s3cr3t",
        "csrf_token": "abc",
        "nested": [{"csrf_token": ""}],
        "id": "00000000-0000-4000-8001-000000000001",
    }
    assert scrub(body) == {
        "agent_token": "clarion_agt_<random>",
        "csrf_token": "<random>",
        "nested": [{"csrf_token": ""}],
        "id": "00000000-0000-4000-8001-000000000001",
    }
