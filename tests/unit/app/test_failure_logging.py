"""Issue #13: a store failure is logged with the exception's type, our own message and where it
was raised — never the driver's text, which can quote stored values."""

from __future__ import annotations

import pytest
from structlog.testing import capture_logs

from clarion.app.usecases.runner import Runner, StoreFailure
from clarion.domain.errors import NOT_FOUND_MESSAGE, ClaimError, NotFound, Resource, failure_fields

pytestmark = pytest.mark.anyio

DRIVER_TEXT = 'invalid input syntax for type json CONTEXT: {"custom_text": "hunter2"}'


class DataError(Exception):
    """Stands in for a database driver's error whose message quotes the data."""


def _fail() -> None:
    raise DataError(DRIVER_TEXT)


def test_failure_fields_name_the_type_and_place_never_a_foreign_message() -> None:
    try:
        try:
            _fail()
        except DataError as exc:
            raise ClaimError("failed to update clarification state") from exc
    except ClaimError as exc:
        fields = failure_fields(exc)
    assert fields["error"] == "clarion.domain.errors.ClaimError"
    assert fields["message"] == "failed to update clarification state"
    assert fields["cause"].endswith("DataError")
    assert "test_failure_logging.py" in fields["at"]
    assert "hunter2" not in repr(fields)
    try:
        _fail()
    except DataError as exc:
        foreign = failure_fields(exc)
    assert "message" not in foreign
    assert "_fail" in foreign["at"]
    assert "hunter2" not in repr(foreign)


async def test_the_store_boundary_logs_no_driver_text() -> None:
    with capture_logs() as logs, pytest.raises(ClaimError) as raised:
        await Runner().guarded(StoreFailure("failed to read", pending_id="p-1"), _fail)
    assert raised.value.message == "failed to read"
    [entry] = [log for log in logs if log["event"] == "store.failed"]
    assert entry["pending_id"] == "p-1"
    assert entry["error"].endswith("DataError")
    assert "exc_info" not in entry
    assert "hunter2" not in repr(logs)
    with pytest.raises(NotFound):  # our own errors pass through untouched
        await Runner().guarded("x", _raise_not_found)


def _raise_not_found() -> None:
    raise NotFound("nothing here")


def _raise_claim_error() -> None:
    raise ClaimError(f"session s-1 changed during a transition: {DRIVER_TEXT}")


async def test_a_stores_own_claim_error_gets_the_operations_fixed_text() -> None:
    """R4a: a store's ClaimError names rows; the caller sees the use case's text for the
    operation, written once where the use case calls the store."""
    with capture_logs() as logs, pytest.raises(ClaimError) as raised:
        await Runner().guarded(StoreFailure("failed to read", pending_id="p-1"), _raise_claim_error)
    assert raised.value.message == "failed to read"
    assert isinstance(raised.value.__cause__, ClaimError)
    [entry] = [log for log in logs if log["event"] == "store.failed"]
    assert entry["pending_id"] == "p-1"


def test_not_found_carries_its_resource_and_shows_no_key_in_its_resource_text() -> None:
    """A3: the text a surface shows is the resource's, the same for a missing and a foreign
    thing; the key stays in the message for logs and administrators."""
    missing = NotFound(resource=Resource.SESSION, key="s-1")
    assert missing.resource is Resource.SESSION
    assert missing.message == "session not found: s-1"
    assert missing.resource.value == "session not found"
    host_authorizer = NotFound(NOT_FOUND_MESSAGE)
    assert host_authorizer.resource is Resource.CLARIFICATION
    assert host_authorizer.message == NOT_FOUND_MESSAGE
