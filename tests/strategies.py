"""Hypothesis strategies shared by every test suite (the one module of them).

Questions and option sets, bundles of durable rows built through
``clarion.domain.rows.parse_row(MessageRecord(...))`` (so every test reads rows the way the
repositories do), outcomes valid for a question set, permuted-but-equivalent outcomes (N3a),
text with astral characters (N8b), and microsecond timestamps (L9/L13).
"""

from __future__ import annotations

import string
import types
import typing
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import attrs
from hypothesis import strategies as st

from clarion.domain import (
    CLARIFICATION_REQUEST,
    Answer,
    ClarificationRow,
    MessageRecord,
    Option,
    Outcome,
    Question,
    clarification_metadata,
    parse_row,
    trim,
)

# N8b: characters outside the Basic Multilingual Plane and CJK, which are one code point each
# but several UTF-8 bytes (and two UTF-16 units for the astral ones).
ASTRAL_SAMPLES = ("😀", "𠀋", "本", "é", "a", "Z", " ")
# Leading/trailing whitespace that N3a trimming removes (Unicode White_Space, as Go's TrimSpace).
TRIMMABLE_WHITESPACE = " \t\n\r\x0b\x0c\x85\xa0\u1680\u2003\u2028\u2029\u202f\u205f\u3000"

BASE_TIME = datetime(2024, 5, 1, 12, 0, 0, tzinfo=UTC)

_ID_ALPHABET = string.ascii_lowercase + string.digits + "_-"

# Offsets other than UTC prove that encoding normalizes to UTC without losing the instant.
_OFFSETS = (
    UTC,
    timezone(timedelta(hours=5, minutes=30)),
    timezone(timedelta(hours=-8)),
    timezone(timedelta(hours=14)),
)


def identifiers(*, max_size: int = 12) -> st.SearchStrategy[str]:
    """Non-empty, ASCII identifier-like strings (question ids, option ids, message ids)."""
    return st.text(alphabet=_ID_ALPHABET, min_size=1, max_size=max_size)


def astral_text(*, min_size: int = 0, max_size: int = 40) -> st.SearchStrategy[str]:
    """Text mixing astral/CJK samples with arbitrary non-surrogate characters other than NUL
    (which every text field refuses, #29)."""
    return st.text(
        alphabet=st.sampled_from(ASTRAL_SAMPLES)
        | st.characters(codec="utf-8", exclude_characters="\x00"),
        min_size=min_size,
        max_size=max_size,
    )


def whitespace_padding(*, max_size: int = 3) -> st.SearchStrategy[str]:
    """A run of trimmable whitespace (possibly empty)."""
    return st.text(alphabet=TRIMMABLE_WHITESPACE, max_size=max_size)


def labels(*, min_size: int = 0, max_size: int = 12) -> st.SearchStrategy[str]:
    """Cheap display text (prompts, titles, labels) with some astral/CJK characters."""
    return st.text(
        alphabet=st.sampled_from(ASTRAL_SAMPLES + tuple('bcdxyz?"-')),
        min_size=min_size,
        max_size=max_size,
    )


@st.composite
def options(draw: st.DrawFn, *, min_size: int = 2, max_size: int = 6) -> tuple[Option, ...]:
    """An option set with unique option ids."""
    ids = draw(st.lists(identifiers(), min_size=min_size, max_size=max_size, unique=True))
    return tuple(
        Option(
            option_id=option_id,
            label=draw(labels(min_size=1)),
            description=draw(labels()),
        )
        for option_id in ids
    )


@st.composite
def questions(
    draw: st.DrawFn,
    question_id: str | None = None,
    *,
    min_options: int = 2,
    max_options: int = 6,
) -> Question:
    """One question with unique option ids; ``question_id`` fixes its id when given."""
    return Question(
        id=question_id if question_id is not None else draw(identifiers()),
        prompt=draw(labels(min_size=1, max_size=20)),
        title=draw(labels()),
        options=draw(options(min_size=min_options, max_size=max_options)),
    )


@st.composite
def question_sets(
    draw: st.DrawFn, *, min_size: int = 1, max_size: int = 4, min_options: int = 2
) -> tuple[Question, ...]:
    """A bundle's question set: unique question ids, in bundle (D2) order."""
    ids = draw(st.lists(identifiers(), min_size=min_size, max_size=max_size, unique=True))
    return tuple(
        draw(questions(question_id, min_options=min_options, max_options=6)) for question_id in ids
    )


def clarification_record(
    question: Question,
    *,
    index: int,
    total: int,
    pending_id: str = "bundle-1",
    message_id: str | None = None,
    session_id: str = "session-1",
    task_id: str = "task-1",
    turn_id: str = "turn-1",
    context: str = "",
    created_at: datetime | None = None,
    updated_at: datetime | None = None,
    extra: Mapping[str, Any] | None = None,
) -> MessageRecord:
    """A stored clarification message exactly as creation writes it (upstream facts §1.3).

    ``extra`` overrides or adds metadata keys (a status, a response, a legacy shape...).
    """
    metadata = clarification_metadata(
        pending_id=pending_id, question=question, index=index, total=total, context=context
    )
    metadata.update(extra or {})
    created = created_at if created_at is not None else BASE_TIME + timedelta(seconds=index)
    return MessageRecord(
        id=message_id if message_id is not None else f"msg-{pending_id}-{index}",
        session_id=session_id,
        task_id=task_id,
        turn_id=turn_id,
        type=CLARIFICATION_REQUEST,
        metadata=metadata,
        created_at=created,
        updated_at=updated_at if updated_at is not None else created,
        content=question.prompt,
    )


def bundle_row_list(
    question_set: Sequence[Question],
    *,
    pending_id: str = "bundle-1",
    context: str = "",
    session_id: str = "session-1",
    task_id: str = "task-1",
    turn_id: str = "turn-1",
) -> list[ClarificationRow]:
    """The rows creation writes for ``question_set``, parsed, in creation (and D2) order."""
    return [
        parse_row(
            clarification_record(
                question,
                index=index,
                total=len(question_set),
                pending_id=pending_id,
                context=context,
                session_id=session_id,
                task_id=task_id,
                turn_id=turn_id,
            )
        )
        for index, question in enumerate(question_set)
    ]


@st.composite
def bundles(
    draw: st.DrawFn, *, min_questions: int = 1, max_questions: int = 4
) -> tuple[tuple[Question, ...], list[ClarificationRow]]:
    """A question set and its parsed rows, the rows in an arbitrary (shuffled) order."""
    question_set = draw(question_sets(min_size=min_questions, max_size=max_questions))
    pending_id = draw(identifiers(max_size=36))
    rows = bundle_row_list(question_set, pending_id=pending_id)
    return question_set, draw(st.permutations(rows))


@st.composite
def valid_answers(draw: st.DrawFn, question: Question) -> Answer:
    """An answer N6–N8b accept for ``question``: any options (repeats allowed), short text."""
    option_ids = question.option_ids()
    selected = draw(st.lists(st.sampled_from(option_ids), max_size=8)) if option_ids else []
    text = draw(st.one_of(st.just(""), astral_text(max_size=20)))
    padded = draw(whitespace_padding()) + text + draw(whitespace_padding())
    return Answer(question_id=question.id, selected_options=tuple(selected), custom_text=padded)


@st.composite
def valid_outcomes(draw: st.DrawFn, question_set: Sequence[Question]) -> Outcome:
    """An outcome valid for ``question_set``: one answer per question in any order, or a rejection.

    The answers path sometimes carries a stray ``reject_reason`` (valid, discarded by N3a).
    """
    if draw(st.booleans()):
        reason = draw(whitespace_padding()) + draw(astral_text(max_size=20))
        return Outcome(rejected=True, reject_reason=reason)
    answers = [draw(valid_answers(question)) for question in question_set]
    stray = draw(st.one_of(st.just(""), astral_text(max_size=10)))
    return Outcome(answers=tuple(draw(st.permutations(answers))), reject_reason=stray)


@st.composite
def equivalent_outcomes(draw: st.DrawFn, outcome: Outcome) -> Outcome:
    """A submission semantically identical to ``outcome`` under N3a.

    Answers re-ordered; selected options permuted with extra repeats; free text re-padded with
    different whitespace; a different stray reason on the answers path.
    """
    if outcome.rejected:
        reason = draw(whitespace_padding()) + trim(outcome.reject_reason)
        return Outcome(rejected=True, reject_reason=reason + draw(whitespace_padding()))
    answers = []
    for answer in outcome.answers:
        repeats = (
            draw(st.lists(st.sampled_from(answer.selected_options), max_size=3))
            if answer.selected_options
            else []
        )
        selected = draw(st.permutations([*answer.selected_options, *repeats]))
        text = draw(whitespace_padding()) + trim(answer.custom_text) + draw(whitespace_padding())
        answers.append(
            Answer(
                question_id=answer.question_id, selected_options=tuple(selected), custom_text=text
            )
        )
    stray = draw(st.one_of(st.just(""), astral_text(max_size=10)))
    return Outcome(answers=tuple(draw(st.permutations(answers))), reject_reason=stray)


def utc_datetimes() -> st.SearchStrategy[datetime]:
    """Aware UTC datetimes with microsecond precision across the whole calendar."""
    return st.datetimes(
        min_value=datetime(1, 1, 2),
        max_value=datetime(9999, 12, 30),
        timezones=st.just(UTC),
    )


def aware_datetimes() -> st.SearchStrategy[datetime]:
    """Aware datetimes with microseconds in UTC or a fixed non-UTC offset."""
    return st.datetimes(
        min_value=datetime(1, 1, 2),
        max_value=datetime(9999, 12, 30),
        timezones=st.sampled_from(_OFFSETS),
    )


def pending_ids() -> st.SearchStrategy[str]:
    """Arbitrary non-empty pending ids, including ``|`` and astral characters."""
    return st.one_of(
        st.text(min_size=1, max_size=40),
        st.builds(lambda a, b: f"{a}|{b}", st.text(max_size=10), st.text(max_size=10)),
        st.uuids().map(str),
    )


def wire_models(kind: type[Any]) -> st.SearchStrategy[Any]:
    """Any instance of the attrs wire model ``kind`` (``clarion.adapters.wire.models``), its
    fields drawn from their annotated types, nested models and lists included."""
    hints = typing.get_type_hints(kind)
    return st.builds(
        kind, **{field.name: _wire_field(field, hints[field.name]) for field in attrs.fields(kind)}
    )


def _wire_field(field: attrs.Attribute[Any], kind: Any) -> st.SearchStrategy[Any]:
    # A field whose schema names its values (an ``enum`` the type cannot state) draws from them.
    stated = field.metadata.get("schema", {}).get("*", {}).get("replace", {})
    if field.metadata.get("omit_none") and "mcp" in field.metadata.get("hidden", ()):
        # Issue #33's additive ``approval`` object: absent from the MCP shapes these are
        # checked against (ApprovalSummary is checked on its own).
        return st.none()
    if "enum" in stated:
        return st.sampled_from(stated["enum"])
    return _wire_values(kind)


def _wire_values(kind: Any) -> st.SearchStrategy[Any]:
    if kind is Any:
        return st.none() | st.booleans() | st.integers() | st.text(max_size=5)
    origin = typing.get_origin(kind)
    arguments = typing.get_args(kind)
    if origin is typing.Literal:
        return st.sampled_from(arguments)
    if origin is list:
        return st.lists(_wire_values(arguments[0]), max_size=3)
    if origin is dict:
        json_values = st.none() | st.booleans() | st.integers() | st.text(max_size=5)
        return st.dictionaries(st.text(max_size=5), json_values, max_size=3)
    if origin in (types.UnionType, typing.Union):
        return st.one_of(*(_wire_values(argument) for argument in arguments))
    if attrs.has(kind):
        return st.deferred(lambda: wire_models(kind))
    simple: dict[Any, st.SearchStrategy[Any]] = {
        str: st.text(max_size=10),
        bool: st.booleans(),
        int: st.integers(min_value=0, max_value=2**53),
        float: st.floats(min_value=0.001, max_value=1e9, allow_nan=False),
        datetime: utc_datetimes(),
        type(None): st.none(),
    }
    return simple[kind]
