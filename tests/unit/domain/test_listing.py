"""Listing helpers: L1a/L1c visibility, L3/L4/L4a shape, L6 order, L8/L9 position, L10 limit."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

from clarion.domain import (
    DEFAULT_LIMIT,
    MAX_LIMIT,
    ClarificationRow,
    Identity,
    ListedBundle,
    ListedQuestion,
    ListPage,
    ListQuery,
    Option,
    Question,
    Visibility,
    clamp_limit,
    decode_cursor,
    listed_bundle,
    parse_row,
    task_visible,
    workspace_visible_to,
)
from clarion.domain.listing import after_position, bundle_order_key, listed_bundle_from_metadata
from tests.strategies import BASE_TIME, clarification_record

QUESTION = Question(
    id="q1",
    prompt="Which?",
    title="Pick",
    options=(Option("a", "A", "first"), Option("b", "B", "second")),
)


@pytest.mark.parametrize(
    ("limit", "expected"),
    [(None, 50), (0, 50), (-5, 50), (1, 1), (10, 10), (200, 200), (201, 200), (500, 200)],
)
def test_l10_limit_defaults_to_50_and_is_capped_at_200(limit: int | None, expected: int) -> None:
    assert clamp_limit(limit) == expected
    assert (DEFAULT_LIMIT, MAX_LIMIT) == (50, 200)


def test_l1a_visibility_constructors() -> None:
    assert Visibility.everything() == Visibility(unscoped=True, workspace_ids=frozenset())
    assert Visibility.only(["w1", "w2", "w1"]) == Visibility(
        unscoped=False, workspace_ids=frozenset({"w1", "w2"})
    )


@pytest.mark.parametrize(
    ("owner_id", "identity", "visible"),
    [
        ("", Identity.user("u1"), True),
        ("u1", Identity.user("u1"), True),
        ("u2", Identity.user("u1"), False),
        ("u2", Identity.user("u1", is_admin=True), False),
        ("u2", Identity.synthetic_admin(), True),
        ("u2", Identity.internal(), True),
    ],
)
def test_l1a_a_workspace_is_visible_when_unowned_or_owned_or_the_caller_is_unscoped(
    owner_id: str, identity: Identity, visible: bool
) -> None:
    assert workspace_visible_to(owner_id, identity) is visible


SCOPED = Visibility.only({"w1"})


@pytest.mark.parametrize(
    ("visibility", "workspace_id", "exists", "visible"),
    [
        pytest.param(Visibility.everything(), "w9", True, True, id="unscoped"),
        pytest.param(SCOPED, "", True, True, id="disjunct-1-empty-workspace"),
        pytest.param(SCOPED, "gone", False, True, id="disjunct-2-dangling-workspace"),
        pytest.param(SCOPED, "w1", True, True, id="disjunct-3-visible-set"),
        pytest.param(SCOPED, "w2", True, False, id="foreign-workspace"),
        pytest.param(Visibility.only(()), "w2", True, False, id="l1b-empty-set-foreign"),
        pytest.param(Visibility.only(()), "", True, True, id="l1b-empty-set-empty-workspace"),
        pytest.param(Visibility.only(()), "gone", False, True, id="l1b-empty-set-dangling"),
    ],
)
def test_l1c_task_visibility_is_the_three_way_disjunction(
    visibility: Visibility, workspace_id: str, exists: bool, visible: bool
) -> None:
    assert task_visible(visibility, workspace_id, exists) is visible


def row(question: Question, index: int, **kw: Any) -> ClarificationRow:
    return parse_row(clarification_record(question, index=index, total=2, **kw))


def test_l3_l4_a_listed_bundle_carries_its_rows_in_d2_order() -> None:
    second = Question(id="q2", prompt="Why?")
    rows = [
        row(second, 1, context="later", extra={"status": "answered"}),
        row(QUESTION, 0, context="ctx", created_at=BASE_TIME + timedelta(seconds=5)),
    ]
    listed = listed_bundle("p1", "t1", rows)
    assert listed == ListedBundle(
        pending_id="p1",
        task_id="t1",
        session_id="session-1",
        created_at=BASE_TIME + timedelta(seconds=1),
        context="later",
        questions=(
            ListedQuestion("q1", "Pick", "Which?", "pending", QUESTION.options),
            ListedQuestion("q2", "", "Why?", "answered", ()),
        ),
    )


def test_l4a_a_question_without_parseable_metadata_lists_empty_strings_and_arrays() -> None:
    rows = [row(QUESTION, 0, extra={"question": 42, "status": None})]
    (question,) = listed_bundle("p1", "t1", rows).questions
    assert question == ListedQuestion(
        question_id="q1", title="", prompt="", status="pending", options=()
    )


@pytest.mark.parametrize(
    ("stored", "shown"),
    [(None, "pending"), ("", "pending"), ("expired", "expired"), ("odd", "odd")],
)
def test_l4a_display_status(stored: str | None, shown: str) -> None:
    (question,) = listed_bundle("p1", "t1", [row(QUESTION, 0, extra={"status": stored})]).questions
    assert question.status == shown


def _listed(created_at: datetime, pending_id: str) -> ListedBundle:
    return ListedBundle(
        pending_id=pending_id,
        task_id="t1",
        session_id="s1",
        created_at=created_at,
        context="",
        questions=(),
    )


def test_d7_age_is_floored_at_zero() -> None:
    listed = _listed(BASE_TIME, "p")
    assert listed.age_seconds(BASE_TIME + timedelta(seconds=90, milliseconds=900)) == 90
    assert listed.age_seconds(BASE_TIME - timedelta(hours=1)) == 0


def test_l9_a_listed_bundles_cursor_decodes_to_its_position() -> None:
    listed = _listed(BASE_TIME + timedelta(microseconds=5), "p|1")
    assert decode_cursor(listed.cursor) == (listed.created_at, "p|1")


def test_l6_order_is_created_at_then_pending_id() -> None:
    bundles = [
        _listed(BASE_TIME, "b"),
        _listed(BASE_TIME - timedelta(1), "z"),
        _listed(BASE_TIME, "a"),
    ]
    assert [b.pending_id for b in sorted(bundles, key=bundle_order_key)] == ["z", "a", "b"]


def test_l9_next_cursor_only_when_more_results_exist() -> None:
    page = (_listed(BASE_TIME, "a"), _listed(BASE_TIME, "b"))
    assert ListPage(bundles=page, has_more=True).next_cursor == page[-1].cursor
    assert ListPage(bundles=page, has_more=False).next_cursor == ""
    assert ListPage(bundles=(), has_more=True).next_cursor == ""


EVERYONE = Visibility.everything()


def test_l8_created_since_is_inclusive() -> None:
    query = ListQuery(visibility=EVERYONE, created_since=BASE_TIME)
    assert after_position(_listed(BASE_TIME, "p"), query) is True
    assert after_position(_listed(BASE_TIME + timedelta(microseconds=1), "p"), query) is True
    assert after_position(_listed(BASE_TIME - timedelta(microseconds=1), "p"), query) is False


def test_l9_cursor_position_is_strictly_after() -> None:
    query = ListQuery(visibility=EVERYONE, after=(BASE_TIME, "m"))
    assert after_position(_listed(BASE_TIME, "m"), query) is False
    assert after_position(_listed(BASE_TIME, "a"), query) is False
    assert after_position(_listed(BASE_TIME, "n"), query) is True
    assert after_position(_listed(BASE_TIME + timedelta(microseconds=1), "a"), query) is True
    assert after_position(_listed(BASE_TIME - timedelta(microseconds=1), "z"), query) is False


def test_l14_cursor_and_created_since_both_apply() -> None:
    query = ListQuery(
        visibility=EVERYONE,
        created_since=BASE_TIME + timedelta(seconds=10),
        after=(BASE_TIME, "m"),
    )
    assert after_position(_listed(BASE_TIME + timedelta(seconds=5), "z"), query) is False
    assert after_position(_listed(BASE_TIME + timedelta(seconds=10), "a"), query) is True


def test_without_constraints_every_bundle_is_in_position() -> None:
    query = ListQuery(visibility=EVERYONE)
    assert after_position(_listed(datetime(1970, 1, 1, tzinfo=UTC), ""), query) is True
    assert (query.limit, query.workspace_id) == (DEFAULT_LIMIT, "")


# -- the list page's reader: listed_bundle_from_metadata ------------------------------------

_SCALARS = st.one_of(
    st.none(), st.booleans(), st.integers(-3, 3), st.floats(allow_nan=True), st.text(max_size=4)
)
_OPTION = st.one_of(
    _SCALARS,
    st.fixed_dictionaries(
        {}, optional={key: _SCALARS for key in ("option_id", "label", "description")}
    ),
)
_QUESTION = st.one_of(
    _SCALARS,
    st.fixed_dictionaries(
        {},
        optional={
            "id": _SCALARS,
            "prompt": _SCALARS,
            "title": _SCALARS,
            "options": st.one_of(_SCALARS, st.lists(_OPTION, max_size=3)),
        },
    ),
)
_METADATA = st.fixed_dictionaries(
    {"pending_id": st.just("p-1")},
    optional={
        "question_id": _SCALARS,
        "question": _QUESTION,
        "question_index": _SCALARS,
        "status": st.one_of(_SCALARS, st.sampled_from(["pending", "answered", ""])),
        "context": _SCALARS,
        "response": st.one_of(_SCALARS, st.fixed_dictionaries({"selected_options": _SCALARS})),
    },
)


@given(
    st.lists(
        st.tuples(_METADATA, st.integers(0, 3), st.sampled_from(["s-1", "s-2"])),
        min_size=1,
        max_size=4,
    )
)
def test_the_pages_reader_builds_what_listed_bundle_builds_from_parsed_rows(
    rows: list[tuple[dict[str, Any], int, str]],
) -> None:
    """Issue #15: the SQL page reads (id, session, created_at, metadata) straight into the
    listed bundle; whatever the metadata holds (legacy shapes, junk, ties in D2 and D1), the
    result is exactly ``listed_bundle`` of the parsed rows — the one the memory adapter and
    the differential test use."""
    records = [
        attrs.evolve(
            clarification_record(
                QUESTION, index=0, total=1, message_id=f"m-{n}", session_id=session_id
            ),
            metadata=metadata,
            created_at=BASE_TIME + timedelta(seconds=offset),
        )
        for n, (metadata, offset, session_id) in enumerate(rows)
    ]
    stored = [(r.id, r.session_id, r.created_at, r.metadata) for r in records]
    expected = listed_bundle("p-1", "t-1", [parse_row(r) for r in records])
    assert listed_bundle_from_metadata("p-1", "t-1", reversed(stored)) == expected
