"""The ask tool's question, offered as a form in the asking agent's own MCP client too.

When the client calling ``ask_user_question`` declared form elicitation, the bundle is offered
there as well as on every other surface; whichever answer the one resolver claims first wins,
and the person at the client answers as the session's owner (the caller's identity).

- **2025-11-25 sessions** (server-to-client requests): ``elicitation/create`` goes out on the
  tool call's own stream while the ask waits as usual (:meth:`Asking.ask` with ``alongside``).
  An accepted form is resolved; the winner's delivery ends the wait. When the wait ends first
  (someone else won, a timeout, the turn ended) the pending elicitation is cancelled, and the
  SDK sends the client ``notifications/cancelled`` for it. Declined or cancelled: the wait goes
  on.
- **2026-07-28** (no server-to-client requests; multi round-trip): the first call creates the
  bundle, leaves it detached (:meth:`Asking.offer`) and returns an ``input_required`` result
  carrying the form and the pending id sealed in ``requestState``. The client's retry echoes
  the state with the person's response: an accepted form goes through the resolver while the
  call waits on the bundle again (:meth:`Asking.rejoin`), so the result is the winner's answer
  or the replay of whoever answered in between; anything else waits as today. State that does
  not verify — tampered, expired, minted for another session, user or argument set, or by
  another process — is refused exactly like a fabricated pending id (``NOT_FOUND``).

The state is sealed with the SDK's AES-256-GCM request-state codec under a key held by this
process, not by the SDK's ``RequestStateBoundary``: that middleware binds the principal only
through the SDK's own OAuth (Clarion authenticates before the SDK, so state would be unbound
to the session), and its refusal is a protocol error where Clarion's table has ``NOT_FOUND``.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Mapping
from typing import Any, Final

import pydantic
import structlog
from mcp.server.request_state import AESGCMRequestStateCodec, InvalidRequestState
from mcp.shared.exceptions import MCPError
from mcp.types import (
    ElicitRequest,
    ElicitRequestFormParams,
    ElicitResult,
    InputRequiredResult,
)
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from clarion.adapters.mcp.arguments import AskArguments
from clarion.adapters.mcp.form import form_message, form_outcome, form_schema
from clarion.adapters.mcp.server import ToolCall
from clarion.app.usecases.ask import Alongside, Asking, AskResult, ProgressCallback
from clarion.app.usecases.resolve import Resolver
from clarion.domain.errors import NOT_FOUND_MESSAGE, ClarionError, NotFound
from clarion.domain.model import Question, Resolution
from clarion.domain.resolved_by import Surface

INPUT_KEY: Final = "clarion_answer"
SURFACE: Final = "mcp-elicitation"
_STATE_VERSION: Final = 1

_log = structlog.get_logger(__name__)


def offers_form(call: ToolCall) -> bool:
    """True when the calling client declared form elicitation (``elicitation: {}`` counts as
    form, per the spec's backwards-compatibility rule)."""
    if call.context is None:
        return False
    capabilities = call.context.session.client_capabilities
    elicitation = capabilities.elicitation if capabilities is not None else None
    return elicitation is not None and (elicitation.form is not None or elicitation.url is None)


def _digest(arguments: Mapping[str, Any]) -> str:
    text = json.dumps(arguments, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(text.encode()).hexdigest()


class Elicitation:
    """Offers the ask tool's bundle in the calling client, in either protocol era.

    ``state_ttl`` bounds how long a 2026-07-28 ``requestState`` stays valid (the ask timeout is
    a natural choice: a form answered later than that finds the wait over anyway). ``keys``
    are the request-state key ring (``keys[0]`` seals, every key unseals; each ≥ 32 bytes);
    by default one random key held by this process only.
    """

    def __init__(
        self,
        asking: Asking,
        resolver: Resolver,
        *,
        state_ttl: float,
        keys: tuple[bytes, ...] = (),
    ) -> None:
        self._asking = asking
        self._resolver = resolver
        self._ttl = state_ttl
        self._codec = AESGCMRequestStateCodec(list(keys) or [os.urandom(32)])

    def applies(self, call: ToolCall) -> bool:
        """Whether this call gets the form: the client offers it and the era allows it."""
        if call.context is None or call.params is None or not offers_form(call):
            return False
        session = call.context.session
        return session.protocol_version in MODERN_PROTOCOL_VERSIONS or session.can_send_request

    async def ask(
        self,
        call: ToolCall,
        args: AskArguments,
        *,
        on_progress: ProgressCallback,
        progress_interval: float,
    ) -> AskResult | InputRequiredResult:
        """Ask with the form offered too (only when :meth:`applies`).

        Raises:
            NotFound: a 2026-07-28 retry whose ``requestState`` does not verify, or whose
                bundle is not this session's.
            WaitEnded, and what :meth:`Asking.ask` raises.
        """
        assert call.context is not None
        if call.context.session.protocol_version in MODERN_PROTOCOL_VERSIONS:
            return await self._modern(call, args, on_progress, progress_interval)
        return await self._legacy(call, args, on_progress, progress_interval)

    # -- 2025-11-25: a server-to-client request racing the wait ---------------------------

    def alongside(self, call: ToolCall, args: AskArguments) -> Alongside | None:
        """The 2025-11-25 form for :meth:`Asking.ask`'s ``alongside``: ``elicitation/create`` on
        the call's own stream, racing every other surface. None when this call gets no form
        that way (the client declared none, or the 2026-07-28 era, whose form is a round of
        its own: :meth:`ask`)."""
        context = call.context
        if context is None or not self.applies(call):
            return None
        if context.session.protocol_version in MODERN_PROTOCOL_VERSIONS:
            return None

        async def offer(pending_id: str, questions: tuple[Question, ...]) -> Resolution | None:
            try:
                response = await context.session.elicit_form(
                    form_message(questions, args.context),
                    form_schema(questions),
                    related_request_id=context.request_id,
                )
            except (MCPError, pydantic.ValidationError) as exc:
                _log.info(
                    "mcp_elicitation_failed", pending_id=pending_id, error_type=type(exc).__name__
                )
                return None
            return await self._answer(call, pending_id, questions, response)

        return offer

    async def _legacy(
        self,
        call: ToolCall,
        args: AskArguments,
        on_progress: ProgressCallback,
        progress_interval: float,
    ) -> AskResult:
        return await self._asking.ask(
            call.caller.identity,
            call.caller.session_id,
            args.questions,
            args.context,
            context_paragraphs=args.context_paragraphs,
            on_progress=on_progress,
            progress_interval=progress_interval,
            alongside=self.alongside(call, args),
        )

    # -- 2026-07-28: an input_required round, answered by the client's retry ---------------

    async def _modern(
        self,
        call: ToolCall,
        args: AskArguments,
        on_progress: ProgressCallback,
        progress_interval: float,
    ) -> AskResult | InputRequiredResult:
        params = call.params
        assert params is not None
        if params.request_state is None:
            pending_id, questions = await self._asking.offer(
                call.caller.identity,
                call.caller.session_id,
                args.questions,
                args.context,
                context_paragraphs=args.context_paragraphs,
            )
            _log.info("mcp_elicitation_offered", pending_id=pending_id, surface=SURFACE)
            form = ElicitRequest(
                params=ElicitRequestFormParams(
                    message=form_message(questions, args.context),
                    requested_schema=form_schema(questions),
                )
            )
            return InputRequiredResult(
                input_requests={INPUT_KEY: form}, request_state=self._seal(call, pending_id)
            )
        pending_id = self._unseal(call, params.request_state)
        response = (params.input_responses or {}).get(INPUT_KEY)

        async def answer(pending: str, questions: tuple[Question, ...]) -> Resolution | None:
            if not isinstance(response, ElicitResult):
                _log.info("mcp_elicitation_unanswered", pending_id=pending)
                return None
            return await self._answer(call, pending, questions, response)

        return await self._asking.rejoin(
            call.caller.identity,
            call.caller.session_id,
            pending_id,
            on_progress=on_progress,
            progress_interval=progress_interval,
            alongside=answer,
        )

    def _claims(self, call: ToolCall) -> dict[str, object]:
        return {
            "v": _STATE_VERSION,
            "s": call.caller.session_id,
            "u": call.caller.identity.user_id or "",
            "a": _digest(call.arguments),
        }

    def _seal(self, call: ToolCall, pending_id: str) -> str:
        claims = {**self._claims(call), "p": pending_id, "exp": time.time() + self._ttl}
        return self._codec.seal(json.dumps(claims, separators=(",", ":")).encode())

    def _unseal(self, call: ToolCall, token: str) -> str:
        """The pending id sealed in ``token`` for this very call, or the not-found every
        unknown bundle gets (no oracle: the reason goes to the log only)."""
        try:
            claims = json.loads(self._codec.unseal(token))
        except (InvalidRequestState, ValueError):
            claims = None
        reason = "seal"
        if isinstance(claims, dict):
            expected = self._claims(call)
            pending_id = claims.get("p")
            expiry = claims.get("exp")
            if any(claims.get(key) != value for key, value in expected.items()):
                reason = "binding"
            elif not isinstance(expiry, int | float) or not time.time() < expiry:
                reason = "expired"
            elif isinstance(pending_id, str) and pending_id:
                return pending_id
        _log.info("mcp_elicitation_state_refused", reason=reason)
        raise NotFound(NOT_FOUND_MESSAGE)

    # -- both eras -------------------------------------------------------------------------

    async def _answer(
        self,
        call: ToolCall,
        pending_id: str,
        questions: tuple[Question, ...],
        response: ElicitResult,
    ) -> Resolution | None:
        """An accepted form goes through the one resolver as the session's owner; a declined
        or cancelled one, or one the resolver refuses, leaves the bundle pending."""
        if response.action != "accept":
            _log.info("mcp_elicitation_declined", pending_id=pending_id, action=response.action)
            return None
        try:
            resolution = await self._resolver.resolve(
                call.caller.identity,
                pending_id,
                form_outcome(questions, response.content),
                surface=Surface.AGENT_CLIENT,
            )
        except ClarionError as exc:
            _log.info(
                "mcp_elicitation_answer_refused",
                pending_id=pending_id,
                error_type=type(exc).__name__,
                field=getattr(exc, "field", ""),
            )
            return None
        _log.info(
            "mcp_elicitation_answered",
            pending_id=pending_id,
            surface=SURFACE,
            claimed=resolution.claimed,
        )
        return resolution
