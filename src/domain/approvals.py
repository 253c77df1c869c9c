"""Approvals (issue #33): an agent asks permission for one exact action; people decide.

An approval request IS a bundle: one clarification row whose single question
(:func:`approval_question`, id :data:`APPROVAL_QUESTION_ID`) offers ``approve`` / ``deny``, so
every existing mechanism — activeness, listing, waits, notifications, history — works for it
unchanged. What is new is kept beside the rows, keyed by the pending id: the terms
(:class:`ApprovalRecord`), the candidates (:class:`Candidates`, also for plain questions), the
votes (:class:`Vote`, decided by :func:`tally`: any deny vetoes at once, M distinct approvals
approve), groups (:class:`Group`) and standing approvals (:class:`StandingApproval`).

The action is bound by its digest: the SHA-256 of its canonical JSON (keys sorted, no
whitespace, UTF-8), so an approval can never be reused for a different action, and the digest
does not depend on the order an agent happened to write the arguments in.
"""

from __future__ import annotations

import enum
import hashlib
import json
import math
from collections.abc import Collection, Iterable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any, Final, Literal

import attrs

from clarion.domain.errors import InvalidOutcome, ValidationError
from clarion.domain.limits import UNSTORABLE, storable
from clarion.domain.model import MAX_TEXT_CODE_POINTS, Answer, Option, Outcome, Question
from clarion.domain.resolved_by import IdentityKind, ResolvedBy, Surface

APPROVAL_QUESTION_ID: Final = "decision"
APPROVE: Final = "approve"
DENY: Final = "deny"
MAX_ACTION_NAME: Final = 200  # code points; printable, no control characters
MAX_ACTION_ARGUMENTS_BYTES: Final = 16384  # UTF-8 bytes of the canonical JSON
MAX_ACTION_DEPTH: Final = 16
MAX_REQUIRED_APPROVALS: Final = 50
MAX_STANDING_MINUTES: Final = 7 * 24 * 60
MAX_GROUP_NAME: Final = 100

# The kinds of a pending id's extras row: an approval request, or a plain question with an
# assignment (candidates) and no terms.
KIND_APPROVAL: Final = "approval"
KIND_ASSIGNED: Final = "assigned"


class Decision(enum.StrEnum):
    """An approval's outcome, which is also the option id that chooses it."""

    APPROVE = APPROVE
    DENY = DENY


def _canonical_json(value: object) -> str:
    """The one canonical JSON text: keys sorted, no whitespace, UTF-8 kept, no NaN/inf."""
    return json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    )


@attrs.frozen
class Action:
    """The exact action an agent asks to run: a name and a JSON object of arguments."""

    name: str
    arguments: Mapping[str, Any] = attrs.field(eq=False, hash=False)
    # Equality is the canonical text's, so {"a":1,"b":2} == {"b":2,"a":1} and 1 != True.
    _key: str = attrs.field(init=False, repr=False)

    @_key.default
    def _canonical_key(self) -> str:
        return self.canonical()

    def canonical(self) -> str:
        """The action's canonical JSON: ``{"arguments":…,"name":…}``, keys sorted at every
        depth, no whitespace, non-ASCII kept, NaN and infinities refused."""
        return _canonical_json({"name": self.name, "arguments": self.arguments})

    @property
    def digest(self) -> str:
        """``sha256:`` and the hex SHA-256 of :meth:`canonical` in UTF-8."""
        return "sha256:" + hashlib.sha256(self.canonical().encode("utf-8")).hexdigest()

    def arguments_json(self) -> str:
        """The arguments alone as canonical JSON (how a store keeps them)."""
        return _canonical_json(self.arguments)


def _check_json(value: object, field: str, depth: int) -> None:
    """Refuse anything that is not plain JSON (str keys; str/int/float/bool/None/list/dict);
    ``depth`` counts the containers around ``value``'s contents (the arguments object is 1)."""
    if depth > MAX_ACTION_DEPTH and isinstance(value, list | Mapping):
        raise ValidationError(
            f"{field} is nested deeper than {MAX_ACTION_DEPTH} levels", field="action.arguments"
        )
    if value is None or isinstance(value, bool | int):
        return
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValidationError(f"{field} is not a finite number", field="action.arguments")
        return
    if isinstance(value, str):
        if not storable(value):
            raise ValidationError(f"{field} {UNSTORABLE}", field="action.arguments")
        return
    if isinstance(value, list):
        for index, item in enumerate(value):
            _check_json(item, f"{field}[{index}]", depth + 1)
        return
    if isinstance(value, Mapping):
        for key, item in value.items():
            if not isinstance(key, str) or not storable(key):
                raise ValidationError(
                    f"{field} has a key that is not a storable string", field="action.arguments"
                )
            _check_json(item, f"{field}.{key}", depth + 1)
        return
    raise ValidationError(
        f"{field} is not a JSON value ({type(value).__name__})", field="action.arguments"
    )


def _printable_name(name: object, field: str, limit: int) -> str:
    """A name as given: a non-blank string of at most ``limit`` printable code points."""
    if not isinstance(name, str) or not name.strip():
        raise ValidationError(f"{field} must be a non-empty string", field=field)
    if len(name) > limit:
        raise ValidationError(
            f"{field} is too long: {len(name)} characters, the limit is {limit}", field=field
        )
    if not storable(name) or not name.isprintable():
        raise ValidationError(f"{field} may contain printable characters only", field=field)
    return name


def parse_action(name: object, arguments: object) -> Action:
    """Validate an action as submitted.

    Raises:
        ValidationError: ``field`` is ``action.name`` (not a non-empty printable string of at
            most :data:`MAX_ACTION_NAME` code points) or ``action.arguments`` (not a JSON
            object, too deep, or more than :data:`MAX_ACTION_ARGUMENTS_BYTES` bytes).
    """
    name = _printable_name(name, "action.name", MAX_ACTION_NAME)
    if not isinstance(arguments, Mapping):
        raise ValidationError("action.arguments must be a JSON object", field="action.arguments")
    _check_json(arguments, "action.arguments", 1)
    action = Action(name=name, arguments=dict(arguments))
    size = len(action.arguments_json().encode("utf-8"))
    if size > MAX_ACTION_ARGUMENTS_BYTES:
        raise ValidationError(
            f"action.arguments is too large: {size} bytes of JSON, the limit is "
            f"{MAX_ACTION_ARGUMENTS_BYTES}",
            field="action.arguments",
        )
    return action


def _sorted_unique(values: Iterable[str]) -> tuple[str, ...]:
    return tuple(sorted(set(values)))


@attrs.frozen
class Candidates:
    """Who may decide (the assignment): users and groups by id. Empty means anyone who may see
    the task may decide, as for any question."""

    user_ids: tuple[str, ...] = attrs.field(default=(), converter=_sorted_unique)
    group_ids: tuple[str, ...] = attrs.field(default=(), converter=_sorted_unique)

    @property
    def assigned(self) -> bool:
        return bool(self.user_ids or self.group_ids)

    def admits(self, user_id: str, group_ids: Collection[str]) -> bool:
        """Whether ``user_id`` (a member of ``group_ids``) may decide."""
        if not self.assigned:
            return True
        return user_id in self.user_ids or any(g in group_ids for g in self.group_ids)


NO_CANDIDATES: Final = Candidates()


@attrs.frozen
class ApprovalTerms:
    """What the agent asks: the action, why, and how many distinct approvals it needs."""

    action: Action
    reason: str = ""
    required_approvals: int = 1


def validate_terms(terms: ApprovalTerms, candidates: Candidates) -> None:
    """Refuse terms no store should keep.

    Raises:
        ValidationError: naming ``action.name``/``action.arguments``, ``reason`` (over 2000
            code points or unstorable) or ``required_approvals`` (outside
            1..:data:`MAX_REQUIRED_APPROVALS`, or more than the candidate users when only
            users are named: such a request could never be approved).
    """
    parse_action(terms.action.name, terms.action.arguments)
    if len(terms.reason) > MAX_TEXT_CODE_POINTS:
        raise ValidationError(f"reason exceeds {MAX_TEXT_CODE_POINTS} characters", field="reason")
    if not storable(terms.reason):
        raise ValidationError(f"reason {UNSTORABLE}", field="reason")
    required = terms.required_approvals
    if isinstance(required, bool) or not 1 <= required <= MAX_REQUIRED_APPROVALS:
        raise ValidationError(
            f"required_approvals must be between 1 and {MAX_REQUIRED_APPROVALS}",
            field="required_approvals",
        )
    if candidates.user_ids and not candidates.group_ids and required > len(candidates.user_ids):
        raise ValidationError(
            f"required_approvals is {required} but only {len(candidates.user_ids)} "
            "candidate user(s) may decide",
            field="required_approvals",
        )


def approval_question(terms: ApprovalTerms) -> Question:
    """The one question an approval bundle carries: any client can show and answer it."""
    action = terms.action
    pretty = json.dumps(action.arguments, indent=2, sort_keys=True, ensure_ascii=False)
    body = f"Action: {action.name}\nArguments:\n{pretty}"
    if terms.required_approvals > 1:
        body += f"\nNeeds {terms.required_approvals} approvals."
    prompt = f"{terms.reason}\n\n{body}" if terms.reason else body
    return Question(
        id=APPROVAL_QUESTION_ID,
        title=f"Approve {action.name}?",
        prompt=prompt,
        options=(Option(APPROVE, "Approve"), Option(DENY, "Deny")),
    )


@attrs.frozen
class ApprovalRecord:
    """The terms as stored, read back with the bundle."""

    terms: ApprovalTerms
    action_digest: str
    standing_id: str | None = None  # the standing approval that decided it at once, if any


@attrs.frozen
class Vote:
    """One person's vote. ``at`` is set by the store when it records the vote."""

    voter_id: str
    display_name: str
    decision: Decision
    comment: str = ""
    surface: Surface = Surface.UNKNOWN
    at: datetime | None = None


def decision_of(outcome: Outcome) -> tuple[Decision, str]:
    """The decision and comment of a validated, normalized outcome on the approval question.

    A rejection is a deny whose comment is the reason.

    Raises:
        InvalidOutcome: ``field="decision"`` unless exactly one of approve/deny is selected.
    """
    if outcome.rejected:
        return Decision.DENY, outcome.reject_reason
    answer = next((a for a in outcome.answers if a.question_id == APPROVAL_QUESTION_ID), None)
    chosen = (
        [o for o in answer.selected_options if o in (APPROVE, DENY)] if answer is not None else []
    )
    if answer is None or len(chosen) != 1 or len(answer.selected_options) != 1:
        raise InvalidOutcome(
            'an approval is decided by selecting exactly one of "approve" or "deny"',
            field="decision",
        )
    return Decision(chosen[0]), answer.custom_text


def decision_outcome(decision: Decision, comment: str) -> Outcome:
    """The claim's response for a decision: option ``decision`` with the comment as text."""
    return Outcome.answer(Answer(APPROVAL_QUESTION_ID, (decision.value,), comment))


def decision_responses(decision: Decision, comment: str) -> dict[str, Answer]:
    """The claim's ``responses`` map (P1a) for :func:`decision_outcome`."""
    return {APPROVAL_QUESTION_ID: Answer(APPROVAL_QUESTION_ID, (decision.value,), comment)}


def decision_of_answer(answer: Answer | None, rejected: bool) -> Decision | None:
    """The decision a resolved approval row records: a rejection denies, an answer decides by
    its selected option; None when the row holds neither (not resolved)."""
    if rejected:
        return Decision.DENY
    if answer is None:
        return None
    for option in answer.selected_options:
        if option in (APPROVE, DENY):
            return Decision(option)
    return None


def tally(required: int, votes: Sequence[Vote]) -> Decision | None:
    """Any deny vetoes at once; ``required`` distinct approving voters approve; else None."""
    if any(vote.decision is Decision.DENY for vote in votes):
        return Decision.DENY
    approvers = {vote.voter_id for vote in votes if vote.decision is Decision.APPROVE}
    return Decision.APPROVE if len(approvers) >= required else None


def approvals_count(votes: Sequence[Vote]) -> int:
    """Distinct approving voters."""
    return len({vote.voter_id for vote in votes if vote.decision is Decision.APPROVE})


def earlier_vote(votes: Sequence[Vote], voter_id: str) -> Vote | None:
    """``voter_id``'s first vote among ``votes``: a repeat is answered with it (idempotent)."""
    return next((vote for vote in votes if vote.voter_id == voter_id), None)


ConstraintKind = Literal["equals", "prefix", "any"]
_CONSTRAINT_KINDS: Final = ("equals", "prefix", "any")


@attrs.frozen
class Constraint:
    """How one argument of a later action must match for a standing approval to cover it."""

    kind: ConstraintKind
    value: Any = None  # equals: the JSON value; prefix: a str; any: None

    def admits(self, value: object, present: bool) -> bool:
        """Whether an argument (``present`` or not) satisfies the constraint. ``equals``
        compares canonical JSON, so ``1``, ``1.0`` and ``true`` are three different values."""
        if not present:
            return False
        if self.kind == "any":
            return True
        if self.kind == "prefix":
            return isinstance(value, str) and value.startswith(self.value)
        try:
            return _canonical_json(value) == _canonical_json(self.value)
        except (TypeError, ValueError):
            return False

    def to_json(self) -> dict[str, Any]:
        """The constraint as submitted and stored: ``{"equals": v}``, ``{"prefix": s}`` or
        ``{"any": true}``."""
        return {self.kind: True if self.kind == "any" else self.value}


def exact_constraints(action: Action) -> Mapping[str, Constraint]:
    """Every argument must equal its current value: the default of a standing approval."""
    return {name: Constraint("equals", value) for name, value in action.arguments.items()}


def _parse_constraint(key: str, spec: object, action: Action) -> Constraint:
    field = f"standing.constraints[{key}]"
    if not isinstance(spec, Mapping) or len(spec) != 1:
        raise ValidationError(
            f'{field} must be one of {{"equals": v}}, {{"prefix": "s"}}, {{"any": true}}',
            field=field,
        )
    ((kind, value),) = spec.items()
    if kind == "equals":
        _check_json(value, field, 1)
        constraint = Constraint("equals", value)
    elif kind == "prefix" and isinstance(value, str) and storable(value):
        constraint = Constraint("prefix", value)
    elif kind == "any" and value is True:
        constraint = Constraint("any")
    else:
        raise ValidationError(
            f'{field} must be one of {{"equals": v}}, {{"prefix": "s"}}, {{"any": true}}',
            field=field,
        )
    if not constraint.admits(action.arguments[key], True):
        raise ValidationError(f"{field} does not admit the action being approved", field=field)
    return constraint


def parse_constraints(raw: object, action: Action) -> Mapping[str, Constraint]:
    """The constraints an approver grants with a standing approval of ``action``.

    ``raw`` (None for none) maps argument names of ``action`` to a constraint; the arguments
    it does not name must equal their current value. Every constraint must admit the action
    being approved, so a standing approval always covers the action it was granted on.

    Raises:
        ValidationError: ``field="standing.constraints[<name>]"`` (or ``standing.constraints``
            when ``raw`` is not an object).
    """
    constraints = dict(exact_constraints(action))
    if raw is None:
        return constraints
    if not isinstance(raw, Mapping):
        raise ValidationError(
            "standing.constraints must be an object", field="standing.constraints"
        )
    for key, spec in raw.items():
        if not isinstance(key, str) or key not in action.arguments:
            raise ValidationError(
                f"standing.constraints[{key}] is not an argument of the action",
                field=f"standing.constraints[{key}]",
            )
        constraints[key] = _parse_constraint(key, spec, action)
    return constraints


def constraints_json(constraints: Mapping[str, Constraint]) -> str:
    """How a store keeps constraints: canonical JSON of each one's :meth:`Constraint.to_json`."""
    return _canonical_json({key: c.to_json() for key, c in constraints.items()})


def stored_constraints(text: str) -> dict[str, Constraint]:
    """Constraints read back from :func:`constraints_json` (no action check: already done)."""
    constraints: dict[str, Constraint] = {}
    for key, spec in json.loads(text).items():
        ((kind, value),) = spec.items()
        if kind not in _CONSTRAINT_KINDS:
            raise ValueError(f"unknown stored constraint kind {kind!r}")
        constraints[key] = Constraint(kind, None if kind == "any" else value)
    return constraints


def standing_duration(minutes: object) -> timedelta:
    """The window of a standing approval.

    Raises:
        ValidationError: ``field="allow_for_minutes"`` unless an integer in
            1..:data:`MAX_STANDING_MINUTES`.
    """
    if isinstance(minutes, bool) or not isinstance(minutes, int):
        raise ValidationError("allow_for_minutes must be an integer", field="allow_for_minutes")
    if not 1 <= minutes <= MAX_STANDING_MINUTES:
        raise ValidationError(
            f"allow_for_minutes must be between 1 and {MAX_STANDING_MINUTES}",
            field="allow_for_minutes",
        )
    return timedelta(minutes=minutes)


@attrs.frozen
class StandingApproval:
    """ "Approve, and allow the same action for N minutes": later matching requests in the same
    workspace are approved at once, recorded as decided by this standing approval."""

    id: str
    workspace_id: str
    action_name: str
    constraints: Mapping[str, Constraint]
    granted_by_id: str
    granted_by_name: str
    granted_at: datetime
    expires_at: datetime
    source_pending_id: str
    revoked_at: datetime | None = None
    revoked_by_id: str = ""

    def active(self, now: datetime) -> bool:
        return self.revoked_at is None and now < self.expires_at

    def matches(self, action: Action, now: datetime) -> bool:
        """Active, the same name, exactly the constrained argument names, each admitted."""
        if not self.active(now) or action.name != self.action_name:
            return False
        if set(action.arguments) != set(self.constraints):
            return False
        return all(
            constraint.admits(action.arguments[key], True)
            for key, constraint in self.constraints.items()
        )

    def resolver(self) -> ResolvedBy:
        """The resolver of a request this standing approval decided at once."""
        return ResolvedBy(
            identity_id=self.id,
            kind=IdentityKind.STANDING_APPROVAL,
            display_name=f"standing approval by {self.granted_by_name or self.granted_by_id}",
            surface=Surface.STANDING_APPROVAL,
        )


@attrs.frozen
class Group:
    """A named set of users that assignments may name (managed by admins)."""

    id: str
    name: str
    created_at: datetime
    member_ids: tuple[str, ...] = attrs.field(default=(), converter=_sorted_unique)


def group_name_key(name: str) -> str:
    """The uniqueness key of a group name: case-insensitive."""
    return name.casefold()


def check_group_name(name: object) -> str:
    """A group name as given, validated.

    Raises:
        ValidationError: ``field="name"`` unless 1..100 printable code points (not blank).
    """
    return _printable_name(name, "name", MAX_GROUP_NAME)


__all__ = [
    "APPROVAL_QUESTION_ID",
    "APPROVE",
    "DENY",
    "KIND_APPROVAL",
    "KIND_ASSIGNED",
    "MAX_ACTION_ARGUMENTS_BYTES",
    "MAX_ACTION_DEPTH",
    "MAX_ACTION_NAME",
    "MAX_GROUP_NAME",
    "MAX_REQUIRED_APPROVALS",
    "MAX_STANDING_MINUTES",
    "NO_CANDIDATES",
    "Action",
    "ApprovalRecord",
    "ApprovalTerms",
    "Candidates",
    "Constraint",
    "Decision",
    "Group",
    "StandingApproval",
    "Vote",
    "approval_question",
    "approvals_count",
    "check_group_name",
    "constraints_json",
    "decision_of",
    "decision_of_answer",
    "decision_outcome",
    "decision_responses",
    "earlier_vote",
    "exact_constraints",
    "group_name_key",
    "parse_action",
    "parse_constraints",
    "standing_duration",
    "stored_constraints",
    "tally",
    "validate_terms",
]
