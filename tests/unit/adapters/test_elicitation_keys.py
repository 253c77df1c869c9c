"""Issue 19: a 2026-07-28 form round's sealed request state verifies on every process that
shares the key ring (``CLARION_ELICITATION_KEYS``), and on no other — so behind a load
balancer the client's retry may reach any replica, and a process with another ring refuses it
exactly like a fabricated pending id (``NotFound``, no oracle)."""

from __future__ import annotations

import os
from typing import cast

import pytest

from clarion.adapters.mcp.elicitation import Elicitation, Offer, Sealed
from clarion.adapters.mcp.server import Caller, ToolCall
from clarion.adapters.system import SystemClock
from clarion.app.usecases.resolve import Resolver
from clarion.domain.errors import NotFound
from clarion.domain.model import Identity


async def _no_progress(_: float, __: str) -> None:
    return None


def _call(session_id: str = "s-1") -> ToolCall:
    caller = Caller(identity=Identity.user("u-1"), session_id=session_id)
    return ToolCall(arguments={"questions": []}, caller=caller, report_progress=_no_progress)


def _scope(call: ToolCall) -> str:
    return f"session:{call.caller.session_id}"


def _process(*keys: bytes) -> Elicitation:
    # Sealing needs no resolver; it is only reached by a real answer.
    return Elicitation(cast(Resolver, None), SystemClock(), state_ttl=60.0, keys=keys)


def _unseal(process: Elicitation, call: ToolCall, state: str) -> str:
    return process._unseal(call, _scope(call), state).pending_id


def _seal(process: Elicitation, call: ToolCall, pending_id: str) -> str:
    sealed = Sealed(pending_id, call.caller.session_id, Offer.FORM, process.now())
    return process._seal(call, _scope(call), sealed)


def test_a_state_sealed_by_one_replica_verifies_on_another_with_the_same_ring() -> None:
    old, new = os.urandom(32), os.urandom(32)
    state = _seal(_process(old), _call(), "p-1")
    # The other replica already seals with a newer key and still reads states sealed with
    # the old one (rotation: the first key seals, every key unseals).
    assert _unseal(_process(new, old), _call(), state) == "p-1"


def test_a_process_with_another_ring_or_another_session_refuses_it_like_an_unknown_id() -> None:
    key = os.urandom(32)
    state = _seal(_process(key), _call(), "p-1")
    with pytest.raises(NotFound):
        _unseal(_process(os.urandom(32)), _call(), state)
    with pytest.raises(NotFound):
        _unseal(_process(key), _call(session_id="s-2"), state)
    with pytest.raises(NotFound):
        _unseal(_process(), _call(), state)  # no ring configured: a key of its own


B64URL = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"


def test_only_the_canonical_spelling_of_a_sealed_state_verifies() -> None:
    """#29 S13 (checked for the request state too): a state whose last character is changed to
    a base64 neighbour is refused like any tampered state, whether or not those characters
    decode to the same bytes (the codec decodes strictly)."""
    key = os.urandom(32)
    state = _seal(_process(key), _call(), "p-1")
    position = B64URL.index(state[-1])
    for neighbour in {max(position - 1, 0), min(position + 1, len(B64URL) - 1)} - {position}:
        with pytest.raises(NotFound):
            _unseal(_process(key), _call(), state[:-1] + B64URL[neighbour])
