"""A resolution's record body written directly is the canonical JSON of its value (issue #34).

``resolution_body`` writes the text key by key (every claim builds one); these tests hold it
to ``canonical(resolution_value(...))`` — sorted keys, no spaces, non-ASCII kept, the same
escapes — for any text, so a record hashes the same bytes it always did.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

from hypothesis import given
from hypothesis import strategies as st

from clarion.domain.audit_chain import canonical, resolution_body, resolution_value
from clarion.domain.model import ANSWERED, REJECTED, Answer, Identity
from clarion.domain.resolved_by import IdentityKind, ResolvedBy, Surface

AT = datetime(2026, 1, 5, 9, 30, 0, 123456, tzinfo=UTC)

# Quotes, backslashes, control characters, line separators, non-BMP and lone surrogates:
# everything JSON escapes or keeps.
_TEXT = st.text(
    alphabet=st.one_of(
        st.sampled_from('"\\/\b\f\n\r\t\x00\x1f\x7f\u2028\u2029é東😀\ud800'),
        st.characters(),
    ),
    max_size=12,
)


def _same(
    pending_id: str,
    status: str,
    responses: dict[str, Answer] | None,
    resolved_by: ResolvedBy | None,
    at: datetime,
) -> None:
    body = resolution_body(pending_id, status, responses, resolved_by, at)
    assert body == canonical(resolution_value(pending_id, status, responses, resolved_by, at))


@given(
    pending_id=_TEXT,
    status=st.sampled_from([ANSWERED, REJECTED]),
    responses=st.none()
    | st.dictionaries(
        _TEXT,
        st.builds(
            Answer,
            question_id=_TEXT,
            selected_options=st.lists(_TEXT, max_size=3).map(tuple),
            custom_text=_TEXT,
        ),
        max_size=4,
    ),
    who=st.none()
    | st.builds(
        ResolvedBy,
        identity_id=_TEXT,
        kind=st.sampled_from(list(IdentityKind)),
        display_name=_TEXT,
        surface=st.sampled_from(list(Surface)),
    ),
    offset=st.integers(min_value=-12, max_value=14),
)
def test_the_written_body_is_the_canonical_json_of_its_value(
    pending_id: str,
    status: str,
    responses: dict[str, Answer] | None,
    who: ResolvedBy | None,
    offset: int,
) -> None:
    _same(pending_id, status, responses, who, AT.astimezone(timezone(timedelta(hours=offset))))


def test_a_known_body_byte_for_byte() -> None:
    """One body spelled out, so a change to the format itself shows here too."""
    who = ResolvedBy.of(Identity(user_id="u1", display_name="Zoë", kind="user"), Surface.REST)
    responses = {
        "q2": Answer(question_id="q2", custom_text='say "hi"'),
        "q1": Answer(question_id="q1", selected_options=("a", "b")),
    }
    assert resolution_body("p1", ANSWERED, responses, who, AT) == (
        '{"at":"2026-01-05T09:30:00.123456Z","event":"resolved","pending_id":"p1",'
        '"resolved_by":{"display_name":"Zoë","identity_id":"u1","kind":"user",'
        '"surface":"rest"},"responses":{"q1":{"custom_text":"","question_id":"q1",'
        '"selected_options":["a","b"]},"q2":{"custom_text":"say \\"hi\\"",'
        '"question_id":"q2","selected_options":[]}},"status":"answered","v":1}'
    )


def test_a_value_that_is_not_text_takes_the_general_encoder() -> None:
    """Outside the types (an option id that is a number): still the canonical text."""
    odd = Answer(question_id="q1", selected_options=(7,))  # type: ignore[arg-type]
    _same("p1", ANSWERED, {"q1": odd}, None, AT)
    assert '"selected_options":[7]' in resolution_body("p1", ANSWERED, {"q1": odd}, None, AT)
