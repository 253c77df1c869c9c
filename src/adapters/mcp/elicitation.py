"""The ask tool's question, offered in the asking agent's own MCP client too (elicitation).

Both agent endpoints — ``/mcp/session/<id>`` and ``/mcp/agent`` — use this one mechanism
(issue #31). When the client calling ``ask_user_question`` declared elicitation, the bundle is
offered there as well as on every other surface; whichever answer the one resolver claims
first wins, and the person at the client answers as the caller's identity (recorded with the
surface ``agent_client``). What is offered (:meth:`Elicitation.offer_for`):

- **a form** (``mode: "form"``, :mod:`clarion.adapters.mcp.form`) to a client that declared
  form elicitation (``elicitation: {}`` counts as form, per the spec);
- **a link** (``mode: "url"``) to a single-use answer page bound to the asking identity
  (:meth:`clarion.app.usecases.answer_links.AnswerLinks.agent_link_for`; the page asks the
  person to be signed in as that identity, as the spec requires of URL mode) to a client that
  declared URL elicitation, when the setting prefers it (``url``) or the client declared no
  form (``auto``).

The two protocol eras:

- **2025-11-25 sessions** (server-to-client requests): ``elicitation/create`` goes out on the
  tool call's own stream while the ask waits as usual (:meth:`Elicitation.alongside`). When the
  wait ends first (someone else won, a timeout, the turn ended) the pending request is
  cancelled and the SDK sends the client ``notifications/cancelled`` for it. A URL elicitation
  the client accepted gets ``notifications/elicitation/complete`` once the bundle is settled
  (:meth:`LegacyOffer.complete`).
- **2026-07-28** (no server-to-client requests; multi round-trip): the first call creates the
  bundle, leaves it detached and returns an ``input_required`` result carrying the request and
  the pending id sealed in ``requestState`` (:meth:`Elicitation.first_round`). The client's
  retry echoes the state with the person's response; the call then waits on the bundle again
  (:meth:`Elicitation.answering` rides that wait). State that does not verify — tampered,
  expired, minted for another endpoint, identity, credential or argument set, or by another
  process — is refused exactly like a fabricated pending id (``NOT_FOUND``).

**Approval requests** (issue #33) are offered as their own form
(:func:`clarion.adapters.mcp.form.approval_schema`: a required Approve/Deny choice and an
optional comment, the action shown verbatim in the message); the answer is the caller's vote
through the same resolver, so quorum and veto apply — a vote that does not decide leaves the
request (and the agent's wait) open for the other approvers.

**Not shown** (issue #31 item 2). A decline or cancel that comes back faster than a person can
act (``min_human_s``, ``CLARION_ELICITATION_MIN_HUMAN_MS``), an elicitation the client failed,
an accepted form with nothing in it (a renderer that could not show the fields) and a
2026-07-28 retry without a response are a host that could not show the question, not a
person saying no: the question stays open everywhere, the agent keeps waiting, nothing is
recorded on the bundle, and ``elicitation.not_shown`` is logged. A person's slower answer is
judged by :func:`judge`: a declined *form* (whose fields offered "skip") is the person's
rejection (spec R9: the same outcome as a skip); a cancel — a dismissal — and a declined link
leave the question open.

The state is sealed with the SDK's AES-256-GCM request-state codec under a key held by this
process, not by the SDK's ``RequestStateBoundary``: that middleware binds the principal only
through the SDK's own OAuth (Clarion authenticates before the SDK, so state would be unbound
to the caller), and its refusal is a protocol error where Clarion's table has ``NOT_FOUND``.
"""

from __future__ import annotations

import enum
import hashlib
import json
import os
import uuid
from collections.abc import Callable, Mapping
from typing import Any, Final

import attrs
import pydantic
import structlog
from mcp.server.request_state import AESGCMRequestStateCodec, InvalidRequestState
from mcp.shared.exceptions import MCPError
from mcp.types import (
    ElicitRequest,
    ElicitRequestFormParams,
    ElicitRequestURLParams,
    ElicitResult,
    InputRequiredResult,
)
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from clarion.adapters.mcp.form import form_message, form_outcome, form_schema, link_message
from clarion.adapters.mcp.server import ToolCall
from clarion.app.usecases.ask import Alongside
from clarion.app.usecases.resolve import Resolver, VoteRecorded
from clarion.domain.errors import NOT_FOUND_MESSAGE, ClarionError, NotFound
from clarion.domain.model import Identity, Outcome, Question, Resolution
from clarion.domain.resolved_by import Surface
from clarion.ports.system import Clock
from clarion.ports.telemetry import Metrics, NoMetrics

INPUT_KEY: Final = "clarion_answer"
SURFACE: Final = "mcp-elicitation"
DEFAULT_MIN_HUMAN_S: Final = 0.25
DECLINE_REASON: Final = "The person declined the question in the agent's own client."
_STATE_VERSION: Final = 2

_log = structlog.get_logger(__name__)

AgentLink = Callable[[Identity, str], str]
"""Makes the URL-mode link for (asking identity, pending id)."""


class Setting(enum.StrEnum):
    """``CLARION_ELICITATION``: what the agent's own client is offered."""

    AUTO = "auto"  # a form where the client declared forms, else a link where it declared URLs
    FORM = "form"  # forms only
    URL = "url"  # a link where the client declared URLs, else a form
    OFF = "off"  # nothing: every client gets the plain ask


class Offer(enum.StrEnum):
    """How the question is offered in the client."""

    FORM = "form"
    URL = "url"


class Verdict(enum.StrEnum):
    """What a client's response to an elicitation means (the metric's ``result`` label)."""

    ANSWER = "answered"  # an accepted form: resolve its content
    OPENED = "opened"  # an accepted link: the person went to the page; the answer comes there
    REJECT = "declined"  # a person declined a form that offered skip: the bundle is rejected
    DISMISSED = "dismissed"  # a person's cancel, or a declined link: the question stays open
    NOT_SHOWN = "not_shown"  # too fast for a person, failed, or never answered: stays open


def judge(offer: Offer, action: str, elapsed_s: float, min_human_s: float) -> Verdict:
    """What a client's ``action`` on an ``offer`` means, ``elapsed_s`` after it was offered.

    An accept is always the person's (a form's content goes to the resolver; a link's accept is
    the consent to open it). A decline or cancel faster than ``min_human_s`` is a host that
    could not show the question. A person's decline of a form — whose fields offered "skip" —
    is their rejection (spec R9: the same outcome as a skip); anything else leaves the question
    open.
    """
    if action == "accept":
        return Verdict.ANSWER if offer is Offer.FORM else Verdict.OPENED
    if elapsed_s < min_human_s:
        return Verdict.NOT_SHOWN
    if action == "decline" and offer is Offer.FORM:
        return Verdict.REJECT
    return Verdict.DISMISSED


def is_empty_form(content: Mapping[str, object] | None) -> bool:
    """Whether an accepted form carries nothing at all: no option, no text, no skip."""
    return not any(value not in (None, "", [], False) for value in (content or {}).values())


def declared_offers(call: ToolCall) -> frozenset[Offer]:
    """The modes the calling client declared (``elicitation: {}`` is form, per the spec)."""
    if call.context is None:
        return frozenset()
    capabilities = call.context.session.client_capabilities
    elicitation = capabilities.elicitation if capabilities is not None else None
    if elicitation is None:
        return frozenset()
    declared = set()
    if elicitation.form is not None or elicitation.url is None:
        declared.add(Offer.FORM)
    if elicitation.url is not None:
        declared.add(Offer.URL)
    return frozenset(declared)


def is_modern(call: ToolCall) -> bool:
    """Whether the call came in the 2026-07-28 era (a form is then a round of its own)."""
    return (
        call.context is not None
        and call.context.session.protocol_version in MODERN_PROTOCOL_VERSIONS
    )


def _digest(arguments: Mapping[str, Any]) -> str:
    text = json.dumps(arguments, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(text.encode()).hexdigest()


@attrs.frozen
class Sealed:
    """What a verified 2026-07-28 ``requestState`` says: the bundle, its session, how it was
    offered and when (seconds since the epoch, the clock of the process that offered it)."""

    pending_id: str
    session_id: str
    offer: Offer
    offered_at: float


class LegacyOffer:
    """A 2025-11-25 offer racing the wait: :attr:`alongside` for the ask, then
    :meth:`complete` once the ask returned an outcome."""

    def __init__(self, elicitation: Elicitation, call: ToolCall, offer: Offer, context: str):
        self._elicitation = elicitation
        self._call = call
        self._offer = offer
        self._context = context
        self._consented: list[str] = []  # URL elicitation ids the client accepted

    async def alongside(
        self, pending_id: str, questions: tuple[Question, ...]
    ) -> Resolution | None:
        """Send ``elicitation/create`` and act on the client's response (see the module)."""
        elicitation, call = self._elicitation, self._call
        context = call.context
        assert context is not None
        started = elicitation.now()
        elicitation_id = ""
        try:
            if self._offer is Offer.FORM:
                response = await context.session.elicit_form(
                    form_message(questions, self._context),
                    form_schema(questions),
                    related_request_id=context.request_id,
                )
            else:
                elicitation_id = uuid.uuid4().hex
                response = await context.session.elicit_url(
                    link_message(questions, self._context),
                    elicitation.link(call, pending_id),
                    elicitation_id,
                    related_request_id=context.request_id,
                )
        except (MCPError, pydantic.ValidationError) as exc:
            elicitation.not_shown(
                call, pending_id, self._offer, "error", elicitation.now() - started, type(exc)
            )
            return None
        elapsed = elicitation.now() - started
        if self._offer is Offer.URL and response.action == "accept":
            self._consented.append(elicitation_id)
        return await elicitation.respond(
            call, pending_id, questions, self._offer, response, elapsed
        )

    async def complete(self) -> None:
        """The bundle is settled: tell a client that accepted a link
        (``notifications/elicitation/complete``; best effort, the result follows anyway)."""
        context = self._call.context
        if context is None:
            return
        for elicitation_id in self._consented:
            try:
                await context.session.send_elicit_complete(
                    elicitation_id, related_request_id=context.request_id
                )
            except Exception:  # noqa: BLE001 - a notification the client may never get anyway
                _log.info("mcp_elicitation_complete_failed", elicitation_id=elicitation_id)


class Elicitation:
    """Offers the ask tool's bundle in the calling client, in either protocol era.

    ``setting`` is ``CLARION_ELICITATION`` (never :attr:`Setting.OFF`: build none instead).
    ``state_ttl`` bounds how long a 2026-07-28 ``requestState`` stays valid (the ask timeout is
    a natural choice). ``keys`` are the request-state key ring (``keys[0]`` seals, every key
    unseals; each ≥ 32 bytes); by default one random key held by this process only.
    ``min_human_s`` is the "not shown" threshold; ``agent_link`` makes URL-mode links (None:
    no URL mode); ``clock`` times the responses.
    """

    def __init__(
        self,
        resolver: Resolver,
        clock: Clock,
        *,
        state_ttl: float,
        keys: tuple[bytes, ...] = (),
        setting: Setting = Setting.AUTO,
        min_human_s: float = DEFAULT_MIN_HUMAN_S,
        agent_link: AgentLink | None = None,
        metrics: Metrics | None = None,
    ) -> None:
        if setting is Setting.OFF:
            raise ValueError("elicitation off: build no Elicitation")
        if min_human_s < 0:
            raise ValueError("min_human_s must not be negative")
        self._resolver = resolver
        self._clock = clock
        self._ttl = state_ttl
        self._codec = AESGCMRequestStateCodec(list(keys) or [os.urandom(32)])
        self._setting = setting
        self._min_human_s = min_human_s
        self._agent_link = agent_link
        self._metrics = metrics if metrics is not None else NoMetrics()

    def now(self) -> float:
        return self._clock.now().timestamp()

    # -- what a call gets ------------------------------------------------------------------

    def offer_for(self, call: ToolCall) -> Offer | None:
        """How this call's question is offered in its client, or None (the plain ask)."""
        if call.context is None or call.params is None:
            return None
        if not is_modern(call) and not call.context.session.can_send_request:
            return None  # a stateless legacy request has no channel for the request
        declared = declared_offers(call)
        url = Offer.URL in declared and self._agent_link is not None
        prefers_url = self._setting is Setting.URL or Offer.FORM not in declared
        if url and self._setting is not Setting.FORM and prefers_url:
            return Offer.URL
        return Offer.FORM if Offer.FORM in declared else None

    def rounds(self, call: ToolCall) -> bool:
        """Whether this call's offer is a 2026-07-28 ``input_required`` round."""
        return is_modern(call) and self.offer_for(call) is not None

    def link(self, call: ToolCall, pending_id: str) -> str:
        assert self._agent_link is not None
        return self._agent_link(call.caller.identity, pending_id)

    # -- 2025-11-25: a server-to-client request racing the wait ---------------------------

    def alongside(self, call: ToolCall, context: str) -> LegacyOffer | None:
        """The 2025-11-25 offer for the ask's ``alongside``; None when this call gets none
        that way (nothing declared, no channel, or the 2026-07-28 era: :meth:`first_round`).
        ``context`` is the ask's shared context (the form's message)."""
        if is_modern(call):
            return None
        offer = self.offer_for(call)
        return LegacyOffer(self, call, offer, context) if offer is not None else None

    # -- 2026-07-28: an input_required round, answered by the client's retry ---------------

    def first_round(
        self,
        call: ToolCall,
        scope: str,
        pending_id: str,
        session_id: str,
        questions: tuple[Question, ...],
        context: str,
    ) -> InputRequiredResult:
        """The ``input_required`` result offering ``pending_id`` (only when :meth:`rounds`);
        ``scope`` names the endpoint the state is bound to."""
        offer = self.offer_for(call)
        assert offer is not None
        if offer is Offer.FORM:
            request = ElicitRequest(
                params=ElicitRequestFormParams(
                    message=form_message(questions, context),
                    requested_schema=form_schema(questions),
                )
            )
        else:
            request = ElicitRequest(
                params=ElicitRequestURLParams(
                    message=link_message(questions, context), url=self.link(call, pending_id)
                )
            )
        _log.info("mcp_elicitation_offered", pending_id=pending_id, surface=SURFACE, mode=offer)
        state = self._seal(call, scope, Sealed(pending_id, session_id, offer, self.now()))
        return InputRequiredResult(input_requests={INPUT_KEY: request}, request_state=state)

    def unseal(self, call: ToolCall, scope: str) -> Sealed:
        """The sealed state this retry echoes, verified for this very call.

        Raises:
            NotFound: the state does not verify (the not-found every unknown bundle gets; the
                reason goes to the log only).
        """
        assert call.params is not None
        assert call.params.request_state is not None
        return self._unseal(call, scope, call.params.request_state)

    def answering(self, call: ToolCall, sealed: Sealed) -> Alongside:
        """The retry's response, as the ``alongside`` of the renewed wait."""
        params = call.params
        response = (params.input_responses or {}).get(INPUT_KEY) if params is not None else None

        async def answer(pending_id: str, questions: tuple[Question, ...]) -> Resolution | None:
            elapsed = self.now() - sealed.offered_at
            if not isinstance(response, ElicitResult):
                self.not_shown(call, pending_id, sealed.offer, "no_response", elapsed)
                return None
            return await self.respond(call, pending_id, questions, sealed.offer, response, elapsed)

        return answer

    def _claims(self, call: ToolCall, scope: str) -> dict[str, object]:
        return {
            "v": _STATE_VERSION,
            "e": scope,
            "u": call.caller.identity.user_id or "",
            "c": call.caller.credential,
            "a": _digest(call.arguments),
        }

    def _seal(self, call: ToolCall, scope: str, sealed: Sealed) -> str:
        claims = {
            **self._claims(call, scope),
            "p": sealed.pending_id,
            "s": sealed.session_id,
            "m": sealed.offer.value,
            "t": sealed.offered_at,
            "exp": self.now() + self._ttl,
        }
        return self._codec.seal(json.dumps(claims, separators=(",", ":")).encode())

    def _unseal(self, call: ToolCall, scope: str, token: str) -> Sealed:
        try:
            claims = json.loads(self._codec.unseal(token))
        except (InvalidRequestState, ValueError):
            claims = None
        reason = "seal"
        if isinstance(claims, dict):
            expected = self._claims(call, scope)
            expiry, offered_at = claims.get("exp"), claims.get("t")
            pending_id, session_id = claims.get("p"), claims.get("s")
            if any(claims.get(key) != value for key, value in expected.items()):
                reason = "binding"
            elif not isinstance(expiry, int | float) or not self.now() < expiry:
                reason = "expired"
            elif (
                isinstance(pending_id, str)
                and pending_id
                and isinstance(session_id, str)
                and claims.get("m") in tuple(Offer)
                and isinstance(offered_at, int | float)
            ):
                return Sealed(pending_id, session_id, Offer(claims["m"]), float(offered_at))
        _log.info("mcp_elicitation_state_refused", reason=reason)
        raise NotFound(NOT_FOUND_MESSAGE)

    # -- both eras -------------------------------------------------------------------------

    def not_shown(
        self,
        call: ToolCall,
        pending_id: str,
        offer: Offer,
        action: str,
        elapsed_s: float,
        error: type[BaseException] | None = None,
    ) -> None:
        """Record a question the client did not show: a log line and the metric, nothing on
        the bundle (it stays open, and the agent keeps waiting)."""
        _log.info(
            "elicitation.not_shown",
            pending_id=pending_id,
            mode=offer.value,
            action=action,
            elapsed_ms=round(elapsed_s * 1000, 1),
            client_name=call.client.name,
            client_version=call.client.version,
            **({"error_type": error.__name__} if error is not None else {}),
        )
        self._metrics.elicitation_response(offer.value, Verdict.NOT_SHOWN.value)

    async def respond(
        self,
        call: ToolCall,
        pending_id: str,
        questions: tuple[Question, ...],
        offer: Offer,
        response: ElicitResult,
        elapsed_s: float,
    ) -> Resolution | None:
        """Act on the client's response (:func:`judge`): an accepted form or a person's decline
        goes through the one resolver as the caller; anything else leaves the bundle pending."""
        verdict = judge(offer, response.action, elapsed_s, self._min_human_s)
        if verdict is Verdict.ANSWER and is_empty_form(response.content):
            # A renderer that could not show the fields offers a bare "accept" (Codex does
            # for multi-selects): nothing chosen is not an answer.
            self.not_shown(call, pending_id, offer, "accept_empty", elapsed_s)
            return None
        if verdict is Verdict.NOT_SHOWN:
            self.not_shown(call, pending_id, offer, response.action, elapsed_s)
            return None
        if verdict in (Verdict.OPENED, Verdict.DISMISSED):
            _log.info(
                "mcp_elicitation_left_open",
                pending_id=pending_id,
                mode=offer.value,
                action=response.action,
                elapsed_ms=round(elapsed_s * 1000, 1),
            )
            self._metrics.elicitation_response(offer.value, verdict.value)
            return None
        try:
            outcome = (
                Outcome.reject(DECLINE_REASON)
                if verdict is Verdict.REJECT
                else form_outcome(questions, response.content)
            )
            resolution = await self._resolver.resolve(
                call.caller.identity, pending_id, outcome, surface=Surface.AGENT_CLIENT
            )
        except VoteRecorded as recorded:
            # An approval's vote that did not decide (issue #33): recorded; the request
            # waits for more approvals, and so does the agent.
            _log.info(
                "mcp_elicitation_vote_recorded",
                pending_id=pending_id,
                counted=recorded.counted,
                approvals=recorded.result.approvals,
                required=recorded.result.required,
            )
            self._metrics.elicitation_response(offer.value, verdict.value)
            return None
        except ClarionError as exc:
            _log.info(
                "mcp_elicitation_answer_refused",
                pending_id=pending_id,
                error_type=type(exc).__name__,
                field=getattr(exc, "field", ""),
            )
            self._metrics.elicitation_response(offer.value, "refused")
            return None
        _log.info(
            "mcp_elicitation_answered",
            pending_id=pending_id,
            surface=SURFACE,
            verdict=verdict.value,
            claimed=resolution.claimed,
            elapsed_ms=round(elapsed_s * 1000, 1),
        )
        self._metrics.elicitation_response(offer.value, verdict.value)
        return resolution
