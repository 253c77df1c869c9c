"""Issue #33: the approvals domain — the action's canonical form and digest, terms, the
approval question, decisions, the tally (veto and quorum), constraints and standing approvals."""

from __future__ import annotations

import json
import random
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from clarion.domain.approvals import (
    APPROVAL_QUESTION_ID,
    MAX_ACTION_ARGUMENTS_BYTES,
    MAX_ACTION_DEPTH,
    MAX_ACTION_NAME,
    MAX_REQUIRED_APPROVALS,
    MAX_STANDING_MINUTES,
    Action,
    ApprovalRecord,
    ApprovalTerms,
    Candidates,
    Constraint,
    Decision,
    StandingApproval,
    Vote,
    approval_question,
    check_group_name,
    constraints_json,
    decision_of,
    decision_outcome,
    exact_constraints,
    parse_action,
    parse_constraints,
    standing_duration,
    stored_constraints,
    tally,
    validate_terms,
)
from clarion.domain.errors import InvalidOutcome, ValidationError
from clarion.domain.model import Answer, Outcome
from clarion.domain.outcome import normalize_outcome, validate_outcome
from clarion.domain.resolved_by import IdentityKind, Surface
from clarion.domain.rows import Bundle

NOW = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
# Storable text: no NUL, no lone surrogate (what parse_action accepts).
texts = st.text(
    alphabet=st.characters(blacklist_categories=["Cs"], blacklist_characters="\x00"), max_size=6
)

json_scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | texts
)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(texts, inner, max_size=3),
    max_leaves=8,
)
arguments = st.dictionaries(texts, json_values, max_size=5)


def _shuffled(value: Any, rng: random.Random) -> Any:
    """The same JSON value with every object's keys in another insertion order."""
    if isinstance(value, dict):
        items = list(value.items())
        rng.shuffle(items)
        return {key: _shuffled(item, rng) for key, item in items}
    if isinstance(value, list):
        return [_shuffled(item, rng) for item in value]
    return value


@given(arguments, st.randoms(use_true_random=False))
def test_canonical_form_and_digest_do_not_depend_on_key_order(
    args: dict[str, Any], rng: random.Random
) -> None:
    """#33: the digest binds the action, not how the agent happened to order its keys."""
    first = parse_action("shell.run", args)
    second = parse_action("shell.run", _shuffled(args, rng))
    assert first.canonical() == second.canonical()
    assert first.digest == second.digest
    assert first == second
    assert json.loads(first.canonical()) == {"name": "shell.run", "arguments": args}


@given(arguments, arguments)
def test_different_actions_have_different_digests(a: dict[str, Any], b: dict[str, Any]) -> None:
    first, second = parse_action("x", a), parse_action("x", b)
    assert (first.digest == second.digest) == (first.canonical() == second.canonical())


def test_digest_is_the_sha256_of_the_canonical_json() -> None:
    action = parse_action("rm", {"path": "/tmp/ä", "force": True})
    assert action.canonical() == '{"arguments":{"force":true,"path":"/tmp/ä"},"name":"rm"}'
    assert action.digest == (
        "sha256:" + __import__("hashlib").sha256(action.canonical().encode()).hexdigest()
    )
    # 1, 1.0 and true are different arguments.
    assert len({parse_action("a", {"v": v}).digest for v in (1, 1.0, True)}) == 3


@pytest.mark.parametrize(
    ("name", "args", "field"),
    [
        ("", {}, "action.name"),
        ("  ", {}, "action.name"),
        (3, {}, "action.name"),
        ("a\nb", {}, "action.name"),
        ("x" * (MAX_ACTION_NAME + 1), {}, "action.name"),
        ("a", [], "action.arguments"),
        ("a", {"v": float("nan")}, "action.arguments"),
        ("a", {"v": {1, 2}}, "action.arguments"),
        ("a", {"v": "nul\x00"}, "action.arguments"),
        ("a", {"v": "x" * MAX_ACTION_ARGUMENTS_BYTES}, "action.arguments"),
    ],
)
def test_parse_action_names_the_bad_field(name: object, args: object, field: str) -> None:
    with pytest.raises(ValidationError) as raised:
        parse_action(name, args)
    assert raised.value.field == field


def test_parse_action_depth_limit() -> None:
    nested: Any = 1
    for _ in range(MAX_ACTION_DEPTH - 1):
        nested = [nested]
    parse_action("a", {"v": nested})  # the object itself is the first level
    with pytest.raises(ValidationError, match="deeper"):
        parse_action("a", {"v": [nested]})
    parse_action("x" * MAX_ACTION_NAME, {})


def test_candidates_are_sorted_and_unique() -> None:
    candidates = Candidates(user_ids=("b", "a", "b"), group_ids=("g",))
    assert candidates.user_ids == ("a", "b")
    assert candidates.assigned
    assert not Candidates().assigned
    assert candidates.admits("a", ())
    assert candidates.admits("z", {"g"})
    assert not candidates.admits("z", {"h"})
    assert Candidates().admits("anyone", ())


def test_validate_terms() -> None:
    action = parse_action("deploy", {"env": "prod"})
    validate_terms(ApprovalTerms(action, "why", 2), Candidates(user_ids=("a", "b")))
    validate_terms(ApprovalTerms(action, "", 5), Candidates(user_ids=("a",), group_ids=("g",)))
    validate_terms(ApprovalTerms(action, "", MAX_REQUIRED_APPROVALS), Candidates())
    cases = [
        (ApprovalTerms(action, "", 0), Candidates(), "required_approvals"),
        (ApprovalTerms(action, "", MAX_REQUIRED_APPROVALS + 1), Candidates(), "required_approvals"),
        (ApprovalTerms(action, "", 3), Candidates(user_ids=("a", "b")), "required_approvals"),
        (ApprovalTerms(action, "r" * 2001), Candidates(), "reason"),
        (ApprovalTerms(action, "\x00"), Candidates(), "reason"),
        (ApprovalTerms(Action("", {}), ""), Candidates(), "action.name"),
    ]
    for terms, candidates, field in cases:
        with pytest.raises(ValidationError) as raised:
            validate_terms(terms, candidates)
        assert raised.value.field == field


def test_approval_question_shape() -> None:
    action = parse_action("shell", {"cmd": "rm -rf /tmp/x", "é": 1})
    question = approval_question(ApprovalTerms(action, "cleanup", 2))
    assert question.id == APPROVAL_QUESTION_ID
    assert question.title == "Approve shell?"
    assert question.option_ids() == ("approve", "deny")
    assert question.prompt == (
        'cleanup\n\nAction: shell\nArguments:\n{\n  "cmd": "rm -rf /tmp/x",\n  "é": 1\n}'
        "\nNeeds 2 approvals."
    )
    plain = approval_question(ApprovalTerms(action))
    assert plain.prompt.startswith("Action: shell\n")
    assert "Needs" not in plain.prompt


def _normalized(outcome: Outcome) -> Outcome:
    question = approval_question(ApprovalTerms(parse_action("a", {})))
    validate_outcome([question], outcome)
    return normalize_outcome([question], outcome)[1]


def test_decision_of_an_outcome() -> None:
    """#33: a generic client answers with option approve/deny (text = comment); a reject is a
    deny whose comment is the reason."""
    assert decision_of(_normalized(decision_outcome(Decision.APPROVE, " ok "))) == (
        Decision.APPROVE,
        "ok",
    )
    assert decision_of(_normalized(Outcome.reject(" no "))) == (Decision.DENY, "no")
    for selected in ((), ("approve", "deny")):
        with pytest.raises(InvalidOutcome) as raised:
            decision_of(_normalized(Outcome.answer(Answer("decision", selected, "x"))))
        assert raised.value.field == "decision"


def _vote(voter: str, decision: Decision) -> Vote:
    return Vote(voter, voter.upper(), decision)


votes_strategy = st.lists(
    st.tuples(st.sampled_from("abcdef"), st.sampled_from(list(Decision))), max_size=12
)


@given(st.integers(1, 6), votes_strategy)
def test_tally_veto_and_quorum(required: int, raw: list[tuple[str, Decision]]) -> None:
    """#33: any deny vetoes at once; M distinct approvers approve; repeats count once."""
    votes = [_vote(voter, decision) for voter, decision in raw]
    result = tally(required, votes)
    if any(decision is Decision.DENY for _, decision in raw):
        assert result is Decision.DENY
    elif len({voter for voter, _ in raw}) >= required:
        assert result is Decision.APPROVE
    else:
        assert result is None
    assert tally(required, list(reversed(votes))) == result


def test_constraints_admit() -> None:
    assert Constraint("equals", 1).admits(1, True)
    assert not Constraint("equals", 1).admits(True, True)
    assert not Constraint("equals", 1).admits(1.0, True)
    assert Constraint("equals", {"a": [1]}).admits({"a": [1]}, True)
    assert not Constraint("equals", None).admits(None, False)
    assert Constraint("prefix", "/tmp/").admits("/tmp/x", True)
    assert not Constraint("prefix", "/tmp/").admits("/etc", True)
    assert not Constraint("prefix", "1").admits(12, True)
    assert Constraint("any").admits([1, 2], True)
    assert not Constraint("any").admits(None, False)


def test_parse_constraints_defaults_to_equals_and_checks_fields() -> None:
    action = parse_action("write", {"path": "/tmp/a", "mode": 1, "data": "x"})
    constraints = parse_constraints({"path": {"prefix": "/tmp/"}, "data": {"any": True}}, action)
    assert constraints == {
        "path": Constraint("prefix", "/tmp/"),
        "mode": Constraint("equals", 1),
        "data": Constraint("any"),
    }
    assert parse_constraints(None, action) == exact_constraints(action)
    assert stored_constraints(constraints_json(constraints)) == constraints
    bad: list[tuple[object, str]] = [
        ([], "standing.constraints"),
        ({"nope": {"any": True}}, "standing.constraints[nope]"),
        ({"path": {"prefix": "/etc/"}}, "standing.constraints[path]"),  # not the action's
        ({"path": {"prefix": 3}}, "standing.constraints[path]"),
        ({"path": {"any": False}}, "standing.constraints[path]"),
        ({"path": {"equals": "/tmp/b"}}, "standing.constraints[path]"),
        ({"path": {"prefix": "/", "any": True}}, "standing.constraints[path]"),
    ]
    for raw, field in bad:
        with pytest.raises(ValidationError) as raised:
            parse_constraints(raw, action)
        assert raised.value.field == field


def _standing(**kwargs: Any) -> StandingApproval:
    action = parse_action("write", {"path": "/tmp/a", "mode": 1})
    values: dict[str, Any] = {
        "id": "s1",
        "workspace_id": "w",
        "action_name": "write",
        "constraints": parse_constraints({"path": {"prefix": "/tmp/"}}, action),
        "granted_by_id": "u1",
        "granted_by_name": "Ada",
        "granted_at": NOW,
        "expires_at": NOW + timedelta(minutes=10),
        "source_pending_id": "p",
    }
    values.update(kwargs)
    return StandingApproval(**values)


def test_standing_approval_matches() -> None:
    standing = _standing()
    assert standing.matches(parse_action("write", {"path": "/tmp/b", "mode": 1}), NOW)
    assert not standing.matches(parse_action("write", {"path": "/etc/b", "mode": 1}), NOW)
    assert not standing.matches(parse_action("write", {"path": "/tmp/b", "mode": 2}), NOW)
    assert not standing.matches(parse_action("write", {"path": "/tmp/b"}), NOW)
    extra = {"path": "/tmp/b", "mode": 1, "force": True}
    assert not standing.matches(parse_action("write", extra), NOW)
    assert not standing.matches(parse_action("read", {"path": "/tmp/b", "mode": 1}), NOW)
    ok = parse_action("write", {"path": "/tmp/b", "mode": 1})
    assert not standing.matches(ok, NOW + timedelta(minutes=10))  # expired
    assert not _standing(revoked_at=NOW).matches(ok, NOW)
    resolver = standing.resolver()
    assert resolver.kind is IdentityKind.STANDING_APPROVAL
    assert resolver.surface is Surface.STANDING_APPROVAL
    assert (resolver.identity_id, resolver.display_name) == ("s1", "standing approval by Ada")


def test_standing_duration_and_group_names() -> None:
    assert standing_duration(5) == timedelta(minutes=5)
    for bad in (0, MAX_STANDING_MINUTES + 1, True, "5", 1.5):
        with pytest.raises(ValidationError) as raised:
            standing_duration(bad)
        assert raised.value.field == "allow_for_minutes"
    assert check_group_name("Ops") == "Ops"
    for bad_name in ("", " ", "x" * 101, "a\tb", None):
        with pytest.raises(ValidationError) as raised:
            check_group_name(bad_name)
        assert raised.value.field == "name"


def test_bundle_extras_default_and_decision() -> None:
    bundle = Bundle("p", (), None)
    assert bundle.approval is None
    assert bundle.candidates == Candidates()
    assert bundle.decision is None
    record = ApprovalRecord(ApprovalTerms(parse_action("a", {})), "sha256:x")
    assert Bundle("p", (), None, approval=record).decision is None


@given(arguments.filter(bool), json_values, st.data())
def test_constraints_properties(args: dict[str, Any], other: Any, data: st.DataObject) -> None:
    """#33: a standing approval always covers the action it was granted on; the exact default
    covers nothing else; ``any`` frees one argument and only that one; constraints survive
    being stored."""
    action = parse_action("op", args)
    key = data.draw(st.sampled_from(sorted(args)))
    changed = parse_action("op", {**args, key: other})
    exact = _standing(action_name="op", constraints=exact_constraints(action))
    assert exact.matches(action, NOW)
    assert exact.matches(changed, NOW) == (changed == action)
    loose = _standing(action_name="op", constraints=parse_constraints({key: {"any": True}}, action))
    assert loose.matches(action, NOW)
    assert loose.matches(changed, NOW)
    assert not loose.matches(parse_action("op", {k: v for k, v in args.items() if k != key}), NOW)
    assert not loose.matches(parse_action("other", args), NOW)
    assert stored_constraints(constraints_json(loose.constraints)) == loose.constraints
    if isinstance(args[key], str):
        prefix = args[key][: data.draw(st.integers(0, len(args[key])))]
        by_prefix = parse_constraints({key: {"prefix": prefix}}, action)
        assert by_prefix[key].admits(args[key], True)
