"""The domain's public API and its layering rule (stdlib + attrs only)."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import clarion.domain

DOMAIN_DIR = Path(clarion.domain.__file__).parent

PUBLIC_API = frozenset(
    {
        "ANSWERED",
        "ASKED_BY_ASK",
        "ASKED_BY_REQUEST",
        "CANCELLED",
        "CLARIFICATION_REQUEST",
        "DEFAULT_LIMIT",
        "EXPIRED",
        "MAX_LIMIT",
        "MAX_TEXT_CODE_POINTS",
        "NOT_ACTIVE_MESSAGE",
        "NOT_FOUND_MESSAGE",
        "PENDING",
        "REJECTED",
        "AccessToken",
        "Answer",
        "Asker",
        "Bundle",
        "ClaimError",
        "ClarificationRow",
        "ClarionError",
        "DeliveryError",
        "Identity",
        "InvalidArgument",
        "InvalidOutcome",
        "InvalidQuestions",
        "LimitExceeded",
        "Limits",
        "ListPage",
        "ListQuery",
        "ListedBundle",
        "ListedQuestion",
        "MessageRecord",
        "NotActive",
        "NotFound",
        "Option",
        "OptionDraft",
        "Outcome",
        "Question",
        "QuestionDraft",
        "Resolution",
        "Session",
        "SessionState",
        "Task",
        "Turn",
        "User",
        "ValidationError",
        "Visibility",
        "Workspace",
        "answer_summary",
        "bundle_is_well_formed",
        "bundle_questions",
        "clamp_limit",
        "clarification_metadata",
        "current_turn_id",
        "decode_cursor",
        "encode_cursor",
        "is_pendingish",
        "is_terminal_state",
        "listed_bundle",
        "make_bundle",
        "normalize_outcome",
        "order_rows",
        "parse_row",
        "parse_timestamp",
        "pending_action_for_session",
        "primary_session_pending_action",
        "question_id_from_metadata",
        "question_summary",
        "replay_winner",
        "resolve_task_id",
        "response_metadata",
        "responses_by_question",
        "resume_prompt",
        "row_is_active",
        "same_questions",
        "task_pending_action",
        "task_visible",
        "trim",
        "validate_outcome",
        "validate_context",
        "validate_questions",
        "workspace_visible_to",
    }
)


def test_domain_public_api_is_exactly_the_pinned_names() -> None:
    assert set(clarion.domain.__all__) == PUBLIC_API
    assert len(clarion.domain.__all__) == len(PUBLIC_API)


def test_every_public_name_resolves() -> None:
    for name in clarion.domain.__all__:
        assert getattr(clarion.domain, name) is not None, name


def _imported_modules(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    names: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            # Relative imports stay inside the package; absolute ones are checked by name.
            names.append("clarion.domain" if node.level else node.module or "")
    return names


def _allowed(module: str) -> bool:
    top = module.split(".")[0]
    return (
        top in sys.stdlib_module_names
        or top == "__future__"
        or top == "attrs"
        or module == "clarion.domain"
        or module.startswith("clarion.domain.")
    )


def test_domain_modules_import_only_stdlib_attrs_and_the_domain() -> None:
    modules = sorted(DOMAIN_DIR.glob("*.py"))
    assert len(modules) >= 10
    offenders = {
        f"{path.name}: {module}"
        for path in modules
        for module in _imported_modules(path)
        if not _allowed(module)
    }
    assert offenders == set()


def test_import_check_recognises_a_forbidden_import(tmp_path: Path) -> None:
    module = tmp_path / "bad.py"
    module.write_text(
        "import sqlalchemy\nfrom clarion.ports import claims\nfrom . import rows\n",
        encoding="utf-8",
    )
    assert [m for m in _imported_modules(module) if not _allowed(m)] == [
        "sqlalchemy",
        "clarion.ports",
    ]
