"""How ``clarion questions answer`` and ``clarion questions history`` print a response: the
one printer both commands share (#32), pinned line for line."""

from __future__ import annotations

from typing import Any

import pytest

from clarion.app.root.cli.questions import _print_response


def _response(*, rejected: bool = False, reason: str = "") -> dict[str, Any]:
    return {
        "rejected": rejected,
        "reject_reason": reason,
        "answers": [
            {"question_id": "q1", "selected_options": ["q1_opt1", "q1_opt2"], "custom_text": ""},
            {"question_id": "q2", "selected_options": [], "custom_text": 'say "why"'},
            {"question_id": "q3", "selected_options": [], "custom_text": ""},
        ],
    }


def test_answer_lines_without_prompts(capsys: pytest.CaptureFixture[str]) -> None:
    _print_response(_response())
    assert capsys.readouterr().out.splitlines() == [
        "  q1: q1_opt1, q1_opt2",
        '  q2: "say \\"why\\""',
        "  q3: (no answer)",
    ]


def test_history_lines_carry_the_prompt_and_the_rejection(
    capsys: pytest.CaptureFixture[str],
) -> None:
    _print_response(_response(rejected=True, reason="not now"), {"q1": "Ship it?"})
    assert capsys.readouterr().out.splitlines() == [
        "  rejected: not now",
        "  q1: Ship it? → q1_opt1, q1_opt2",
        '  q2:  → "say \\"why\\""',  # a question the bundle no longer lists: no prompt
        "  q3:  → (no answer)",
    ]


def test_a_rejection_without_a_reason_is_one_word(capsys: pytest.CaptureFixture[str]) -> None:
    _print_response({"rejected": True, "reject_reason": "", "answers": []})
    assert capsys.readouterr().out.splitlines() == ["  rejected"]
