"""The service's bounds: text lengths of a bundle, body size, counts per session and identity.

One :class:`Limits` value travels from the settings (``CLARION_MAX_*``) to every surface, so
REST and MCP enforce the same numbers. Text lengths are counted in Unicode code points, the way
N8b counts free text. A refusal is a :class:`~clarion.domain.errors.ValidationError` naming the
field (400) for text, or a :class:`~clarion.domain.errors.LimitExceeded` naming the limit (429)
for counts.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final, Literal

import attrs

from clarion.domain.errors import InvalidQuestions
from clarion.domain.paging import DEFAULT_MAX_LIST_BYTES


def _positive(instance: object, attribute: attrs.Attribute[int], value: int) -> None:
    if value < 1:
        raise ValueError(f"{attribute.name} must be at least 1, got {value}")


def _seconds(instance: object, attribute: attrs.Attribute[float], value: float) -> None:
    if not value > 0:
        raise ValueError(f"{attribute.name} must be a positive number of seconds, got {value}")


@attrs.frozen
class Limits:
    """Every bound Clarion enforces; each has a ``CLARION_*`` variable (docs/operations.md)."""

    max_title: int = attrs.field(default=200, validator=_positive)
    max_prompt: int = attrs.field(default=2000, validator=_positive)
    max_option_label: int = attrs.field(default=200, validator=_positive)
    max_option_description: int = attrs.field(default=1000, validator=_positive)
    max_context: int = attrs.field(default=10000, validator=_positive)
    max_context_paragraph: int = attrs.field(default=4000, validator=_positive)
    max_id: int = attrs.field(default=128, validator=_positive)
    max_body_bytes: int = attrs.field(default=1024 * 1024, validator=_positive)
    max_active_bundles_per_session: int = attrs.field(default=10, validator=_positive)
    max_active_bundles_per_identity: int = attrs.field(default=200, validator=_positive)
    max_page_size: int = attrs.field(default=200, validator=_positive)
    # The bytes of the bundles one page of the pending or resolved list carries (#29 F8).
    max_list_bytes: int = attrs.field(default=DEFAULT_MAX_LIST_BYTES, validator=_positive)
    # The page size of the host's lists (workspaces, tasks, transcript, resumes) when a
    # request names none; a default above ``max_page_size`` acts as ``max_page_size``.
    default_page_size: int = attrs.field(default=50, validator=_positive)
    max_event_streams: int = attrs.field(default=16, validator=_positive)
    max_mcp_sessions: int = attrs.field(default=100, validator=_positive)
    mcp_session_idle_s: float = attrs.field(default=1800.0, validator=_seconds)
    # Browser login sessions a user holds at once (the oldest end), and the throttle of failed
    # logins: this many failures per client address or token id within the window (#29 S11).
    max_login_sessions: int = attrs.field(default=10, validator=_positive)
    max_login_failures: int = attrs.field(default=5, validator=_positive)
    login_failure_window_s: float = attrs.field(default=60.0, validator=_seconds)


def session_limit_reached(
    count: int, per_session: int, per_identity: int
) -> Literal["session", "identity"] | None:
    """#29 S9: the limits of an unscoped caller (auth disabled), whose per-identity bucket is
    the session it asks in — every agent is the same synthetic identity, so a server-wide
    bucket would let one agent's backlog refuse every other agent. ``count`` is the session's
    active bundles (counted up to the larger limit): ``"session"`` at the per-session limit,
    else ``"identity"`` at the per-identity one, else None."""
    if count >= per_session:
        return "session"
    if count >= per_identity:
        return "identity"
    return None


UNSTORABLE: Final = "may not contain NUL characters or unpaired surrogates"


def storable(text: str) -> bool:
    """True when every store can keep ``text`` and give it back: no NUL (PostgreSQL's text and
    JSON refuse it, #29) and no lone surrogate (it cannot be encoded as UTF-8). Every surface
    checks its input with this through validation, so none depends on its own wire checks."""
    if "\x00" in text:
        return False
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def check_length(value: str, maximum: int, *, field: str, what: str) -> None:
    """Refuse ``value`` when it has more than ``maximum`` code points, or is not
    :func:`storable`.

    Raises:
        InvalidQuestions: naming ``field`` and the limit (or what it may not contain).
    """
    if not storable(value):
        raise InvalidQuestions(f"{field} {UNSTORABLE}", field=field)
    if len(value) > maximum:
        raise InvalidQuestions(
            f"{field} is too long: {len(value)} characters, the limit for {what} is {maximum}",
            field=field,
        )


def validate_context(context: str, limits: Limits, paragraphs: Sequence[str] = ()) -> str:
    """The bundle's shared context: non-empty ``paragraphs`` (each within its limit) replace
    ``context`` and are joined with blank lines; the result must fit ``max_context``.

    Raises:
        InvalidQuestions: a paragraph or the context is too long; ``field`` names it.
    """
    for index, paragraph in enumerate(paragraphs):
        check_length(
            paragraph,
            limits.max_context_paragraph,
            field=f"context_paragraphs[{index}]",
            what="a context paragraph",
        )
    if paragraphs:
        context = "\n\n".join(paragraphs)
    check_length(context, limits.max_context, field="context", what="the context")
    return context
