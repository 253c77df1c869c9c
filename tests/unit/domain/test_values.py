"""Small values: the error family, identities, statuses, outcomes and access tokens."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest

from clarion.domain import (
    ANSWERED,
    CANCELLED,
    EXPIRED,
    NOT_ACTIVE_MESSAGE,
    NOT_FOUND_MESSAGE,
    PENDING,
    REJECTED,
    AccessToken,
    Answer,
    ClaimError,
    ClarionError,
    DeliveryError,
    Identity,
    InvalidArgument,
    InvalidOutcome,
    InvalidQuestions,
    NotActive,
    NotFound,
    Option,
    Outcome,
    Question,
    ValidationError,
    is_pendingish,
)
from tests.strategies import BASE_TIME


@pytest.mark.parametrize("error_type", [NotFound, NotActive, ClaimError])
def test_plain_errors_carry_their_message(error_type: type[ClarionError]) -> None:
    error = error_type("boom")
    assert isinstance(error, ClarionError)
    assert error.message == "boom"
    assert str(error) == "boom"


@pytest.mark.parametrize("error_type", [InvalidOutcome, InvalidQuestions, InvalidArgument])
def test_validation_errors_name_their_field(error_type: type[ValidationError]) -> None:
    error = error_type("bad", field="answers[0].question_id")
    assert isinstance(error, ValidationError)
    assert isinstance(error, ClarionError)
    assert error.field == "answers[0].question_id"
    assert error.message == "bad"


@pytest.mark.parametrize("retryable", [True, False])
def test_delivery_error_says_whether_it_is_retryable(retryable: bool) -> None:
    error = DeliveryError("could not resume", retryable=retryable)
    assert isinstance(error, ClarionError)
    assert error.retryable is retryable


def test_upstream_caller_facing_messages() -> None:
    assert NOT_FOUND_MESSAGE == "clarification request not found"
    assert NOT_ACTIVE_MESSAGE == "clarification request is no longer active"


def test_d3_status_vocabulary() -> None:
    assert (PENDING, ANSWERED, REJECTED, CANCELLED, EXPIRED) == (
        "pending",
        "answered",
        "rejected",
        "cancelled",
        "expired",
    )


@pytest.mark.parametrize(
    ("status", "pendingish"),
    [(None, True), ("", True), ("pending", True), ("answered", False), ("PENDING", False)],
)
def test_d4_pendingish_statuses(status: str | None, pendingish: bool) -> None:
    assert is_pendingish(status) is pendingish


def test_outcome_constructors() -> None:
    assert Outcome.answer(Answer("q1"), Answer("q2")) == Outcome(
        answers=(Answer("q1"), Answer("q2")), rejected=False, reject_reason=""
    )
    assert Outcome.reject() == Outcome(answers=(), rejected=True, reject_reason="")
    assert Outcome.reject("why") == Outcome(rejected=True, reject_reason="why")


def test_question_option_ids_are_in_option_order() -> None:
    question = Question(id="q", options=(Option("b"), Option("a")))
    assert question.option_ids() == ("b", "a")


@pytest.mark.parametrize(
    ("identity", "scoped"),
    [
        (Identity.user("u1"), True),
        (Identity.user("u1", is_admin=True), True),
        (Identity.synthetic_admin(), False),
        (Identity.internal(), False),
    ],
)
def test_identity_scoping(identity: Identity, scoped: bool) -> None:
    assert identity.is_scoped is scoped


def test_synthetic_identity_is_an_admin() -> None:
    identity = Identity.synthetic_admin()
    assert identity.is_admin is True
    assert identity.synthetic is True
    assert identity.user_id


def token(*, expires_at: datetime | None = None, revoked_at: datetime | None = None) -> AccessToken:
    return AccessToken(
        id="tok",
        user_id="u1",
        name="laptop",
        token_hash="h",
        created_at=BASE_TIME,
        expires_at=expires_at,
        revoked_at=revoked_at,
    )


def test_access_token_usable_until_expiry_and_never_after_revocation() -> None:
    now = BASE_TIME + timedelta(days=1)
    assert token().usable_at(now) is True
    assert token(expires_at=now + timedelta(seconds=1)).usable_at(now) is True
    assert token(expires_at=now).usable_at(now) is False
    assert token(revoked_at=BASE_TIME).usable_at(now) is False
