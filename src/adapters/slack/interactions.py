"""``POST /integrations/slack/interactions``: Slack's interactivity requests (issue #18).

**Authentication is Slack's signature**, not a bearer token or a cookie (the path is outside
``/api/``, so the authentication middleware never reads one): ``X-Slack-Signature`` must be
the HMAC-SHA256 of ``v0:<X-Slack-Request-Timestamp>:<body>`` under the app's signing secret,
and the timestamp within five minutes of now (``slack_sdk.signature.SignatureVerifier``).
Anything else is 401 and nothing happens. The HTTP gate admits a form body on this path only
(``application/x-www-form-urlencoded``, as Slack sends; :mod:`clarion.adapters.http_guard`).

**Replays are refused** (401) by :class:`ReplayGuard`: a signature already accepted within the
window is not accepted again. It is kept in this process's memory, bounded by the window — a
signature older than five minutes fails the timestamp check anyway, so nothing older needs
remembering. Memory, not the database, because a replay can change nothing the claim has not
already decided: the one resolver records exactly one winner, so a replayed click either
repeats the winner's own answer (a no-op) or loses like any other answer; the guard spares
the side effects (a second ephemeral reply, a second modal). Behind several processes a
replay that reaches another process within the window gets exactly that no-op.

**Ack first, claim after.** Slack wants an answer within 3 s: a button click is acknowledged with
an empty 200 and handled in a background task after the response is sent; its result goes back to
the clicker through the interaction's ``response_url`` (an ephemeral reply), and the message itself
is updated in place by the outbox when the bundle ends. A modal submission is read by the bundle's
one answer form (:mod:`clarion.domain.answer_form`; the modal's block ids are its field names) and
validated before its answer (field errors come back as ``response_action: errors`` keyed by block
id, which Slack accepts only in the response itself); the claim then runs after the ack and its
result is posted to the clicker as an ephemeral message.
"""

from __future__ import annotations

import json
import time
import urllib.parse
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Final

import structlog
from slack_sdk.signature import SignatureVerifier
from starlette.background import BackgroundTask
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from clarion.adapters.approval_display import vote_recorded_text
from clarion.adapters.slack.api import SlackApi, SlackFailure
from clarion.adapters.slack.blocks import (
    LINK_ACTION,
    MODAL_ACTION,
    MODAL_CALLBACK,
    OPTION_ACTION,
    REASON_BLOCK,
    SKIP_BLOCK,
    modal_view,
    outcome_lines,
    parse_option_value,
    who,
)
from clarion.app.usecases.resolve import VoteRecorded
from clarion.app.usecases.slack import SlackAnswering, SlackResult, SlackState
from clarion.domain.answer_form import (
    REASON,
    SKIP,
    AnswerForm,
    FormError,
    field_of,
    options_field,
    question_of,
    text_field,
)
from clarion.domain.model import Answer, Outcome

log = structlog.get_logger(__name__)

INTERACTIONS_PATH: Final = "/integrations/slack/interactions"
WINDOW_S: Final = 5 * 60
MAX_BODY_BYTES: Final = 1024 * 1024
MAX_REMEMBERED: Final = 100_000


class ReplayGuard:
    """Signatures accepted within the last ``window_s`` seconds (see the module); at most
    ``limit`` are kept, the oldest forgotten first."""

    def __init__(
        self,
        *,
        window_s: float = WINDOW_S,
        limit: int = MAX_REMEMBERED,
        now: Callable[[], float] = time.time,
    ) -> None:
        self._window = window_s
        self._limit = limit
        self._now = now
        self._seen: OrderedDict[str, float] = OrderedDict()

    def first_use(self, signature: str) -> bool:
        """True the first time ``signature`` is offered within the window, False after."""
        now = self._now()
        while self._seen:
            oldest, at = next(iter(self._seen.items()))
            if at > now - 2 * self._window and len(self._seen) < self._limit:
                break
            del self._seen[oldest]
        if signature in self._seen:
            return False
        self._seen[signature] = now
        return True


def _refused(message: str) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=401)


def _ephemeral(text: str) -> dict[str, Any]:
    return {"response_type": "ephemeral", "replace_original": False, "text": text}


def result_text(result: SlackResult, slack_user_id: str) -> str:
    """What the clicker is told (ephemeral; never shown to anyone else)."""
    state = result.state
    if state is SlackState.WON and result.resolution is not None:
        lines = outcome_lines(result.questions, result.resolution)
        lead = "You skipped this." if result.resolution.rejected else "Answered. Sent to the agent:"
        return "\n".join([lead, *lines])
    if state is SlackState.LOST and result.resolution is not None:
        lines = outcome_lines(result.questions, result.resolution)
        head = f"Already answered by {who(result.resolved_by)}; your answer was not used."
        return "\n".join([head, *lines])
    if state is SlackState.INVALID:
        return f"Not recorded: {result.message}"
    if state is SlackState.UNLINKED:
        return (
            "Your Slack account is not linked to a Clarion user, so nothing was recorded. "
            "Ask a Clarion administrator to run "
            f"`clarion users link-slack <your Clarion user id> {slack_user_id}`."
        )
    if state is SlackState.UNAVAILABLE:
        return "This question does not exist or is not available to you. Nothing was recorded."
    if state is SlackState.CLOSED:
        return (
            "This question is no longer active (it expired or was cancelled). Nothing was recorded."
        )
    return "Clarion could not record your answer right now. Please try again."


def vote_text(recorded: VoteRecorded) -> str:
    """What a voter on an approval is told when their vote did not decide it (issue #33)."""
    result = recorded.result
    return vote_recorded_text(result.approvals, result.required, counted=recorded.counted)


def modal_values(values: Mapping[str, Any], question_count: int) -> dict[str, object]:
    """A modal's ``state.values`` as the flat field values of :mod:`clarion.domain.answer_form`.

    The modal's block ids are the form's field names (``q0_options``, ``q0_text``, ``skip``,
    ``reason``, each block holding one element); messages already sent keep these ids, so an
    old modal submits as a new one does.
    """

    def value(block: str, action: str) -> Any:
        entry = values.get(block, {})
        return entry.get(action, {}) if isinstance(entry, Mapping) else {}

    def text(block: str, action: str) -> str:
        found = value(block, action).get("value")
        return found if isinstance(found, str) else ""

    def selected(block: str, action: str) -> list[str]:
        options = value(block, action).get("selected_options") or []
        return [
            str(o.get("value", "")) for o in options if isinstance(o, Mapping) and o.get("value")
        ]

    flat: dict[str, object] = {}
    for index in range(question_count):
        flat[options_field(index)] = selected(options_field(index), "options")
        flat[text_field(index)] = text(text_field(index), "text")
    flat[SKIP] = "skip" in selected(SKIP_BLOCK, "skip")
    flat[REASON] = text(REASON_BLOCK, "reason")
    return flat


def modal_outcome(values: Mapping[str, Any], form: AnswerForm) -> Outcome:
    """The validated outcome a modal's ``state.values`` describes (the form's one parser).

    Raises:
        FormError: the form refuses it; ``errors`` names every field (:func:`error_blocks`
            places them on the modal's blocks).
    """
    return form.parse(modal_values(values, len(form.questions)))


def error_blocks(errors: Mapping[str, str], form: AnswerForm) -> dict[str, str]:
    """Field errors by the modal block that shows them: a field's own block, a question's
    text block for an options field it does not show, the first question's text block for
    the form as a whole (a modal has no place for a form-wide message)."""
    shown = {field.name for field in form.fields()}
    placed: dict[str, str] = {}
    for field, message in errors.items():
        block = field
        if block not in shown:
            index = question_of(field_of(field, len(form.questions)))
            block = text_field(index or 0)
        placed.setdefault(block, message)
    return placed


class SlackInteractions:
    """The endpoint (see the module); the work after the ack is a Starlette background task."""

    def __init__(
        self,
        *,
        signing_secret: str,
        answering: SlackAnswering,
        api: SlackApi,
        replays: ReplayGuard | None = None,
    ) -> None:
        self._verifier = SignatureVerifier(signing_secret)
        self._answering = answering
        self._api = api
        self._replays = replays if replays is not None else ReplayGuard()

    def routes(self) -> list[BaseRoute]:
        return [Route(INTERACTIONS_PATH, self.endpoint, methods=["POST"], name="slack")]

    def _verified(self, body: bytes, headers: Mapping[str, str]) -> bool:
        try:
            return self._verifier.is_valid_request(body, headers)
        except (ValueError, UnicodeDecodeError):
            return False

    async def endpoint(self, request: Request) -> Response:
        body = await request.body()
        if len(body) > MAX_BODY_BYTES:
            return JSONResponse({"error": "request body too large"}, status_code=413)
        headers = {key: value for key, value in request.headers.items()}
        if not self._verified(body, headers):
            log.warning("slack.refused", reason="signature")
            return _refused("invalid Slack signature or timestamp")
        if not self._replays.first_use(headers.get("x-slack-signature", "")):
            log.warning("slack.refused", reason="replay")
            return _refused("replayed Slack request")
        try:
            fields = urllib.parse.parse_qs(body.decode("utf-8"), strict_parsing=False)
            payload = json.loads(fields["payload"][0])
            if not isinstance(payload, dict):
                raise TypeError("payload is not an object")
        except (KeyError, IndexError, ValueError, TypeError):
            return JSONResponse({"error": "not a Slack interaction payload"}, status_code=400)
        kind = payload.get("type")
        if kind == "block_actions":
            return self._ack(self._block_action, payload)
        if kind == "view_submission":
            return await self._view_submission(payload)
        return Response(status_code=200)  # other interactions (view_closed, …): nothing to do

    def _ack(
        self, work: Callable[[dict[str, Any]], Awaitable[None]], payload: dict[str, Any]
    ) -> Response:
        async def run() -> None:
            try:
                await work(payload)
            except Exception:
                log.warning("slack.interaction_failed", exc_info=True)

        return Response(status_code=200, background=BackgroundTask(run))

    async def _reply(self, payload: Mapping[str, Any], text: str) -> None:
        url = payload.get("response_url")
        if isinstance(url, str) and url:
            await self._api.respond(url, _ephemeral(text))
            return
        channel = _channel_of(payload)
        user = _user_of(payload)
        if channel and user:
            await self._api.post_ephemeral(channel, user, text)

    async def _answer(self, user: str, pending_id: str, outcome: Outcome) -> str:
        """Answer through the one resolver; what the clicker is told. On an approval a vote
        that does not decide is reported as such (quorum, issue #33)."""
        try:
            result = await self._answering.answer(user, pending_id, outcome)
        except VoteRecorded as recorded:
            log.info("slack.vote_recorded", pending_id=pending_id, counted=recorded.counted)
            return vote_text(recorded)
        return result_text(result, user)

    async def _block_action(self, payload: dict[str, Any]) -> None:
        actions = payload.get("actions") or []
        action = actions[0] if actions and isinstance(actions[0], dict) else {}
        action_id = str(action.get("action_id", ""))
        value = str(action.get("value", ""))
        user = _user_of(payload)
        if action_id == LINK_ACTION:
            return
        if action_id.startswith(OPTION_ACTION):
            parsed = parse_option_value(value)
            if parsed is None:
                return
            pending_id, question_id, option_id = parsed
            outcome = Outcome.answer(Answer(question_id=question_id, selected_options=(option_id,)))
            await self._reply(payload, await self._answer(user, pending_id, outcome))
        elif action_id == MODAL_ACTION:
            opened = await self._answering.open(user, value)
            if opened.state is not SlackState.OPEN or opened.bundle is None:
                await self._reply(payload, result_text(opened, user))
                return
            view = modal_view(
                pending_id=opened.bundle.pending_id,
                context=opened.bundle.context,
                questions=opened.bundle.questions,
                metadata={"channel": _channel_of(payload)},
            )
            try:
                await self._api.open_view(str(payload.get("trigger_id", "")), view)
            except SlackFailure as exc:
                log.warning("slack.modal_failed", error=exc.error)
                await self._reply(payload, "Slack could not open the form; please try again.")

    async def _view_submission(self, payload: dict[str, Any]) -> Response:
        view = payload.get("view") or {}
        if not isinstance(view, dict) or view.get("callback_id") != MODAL_CALLBACK:
            return Response(status_code=200)
        try:
            metadata = json.loads(str(view.get("private_metadata", "")))
            pending_id = str(metadata["pending_id"])
            channel = str(metadata.get("channel", ""))
        except (ValueError, KeyError, TypeError):
            return JSONResponse({"error": "not a Clarion form"}, status_code=400)
        user = _user_of(payload)
        state = view.get("state") or {}
        values = state.get("values", {}) if isinstance(state, dict) else {}
        opened = await self._answering.open(user, pending_id)
        if opened.state not in (SlackState.OPEN, SlackState.LOST):
            return _errors({text_field(0): result_text(opened, user)})
        form = AnswerForm(opened.questions)
        try:
            outcome = modal_outcome(values if isinstance(values, dict) else {}, form)
        except FormError as exc:
            return _errors(error_blocks(exc.errors, form))
        checked = await self._answering.check(user, pending_id, outcome)
        if checked.state is SlackState.INVALID:
            return _errors(error_blocks({form.field_of(checked.field): checked.message}, form))
        if checked.state is not SlackState.OPEN:
            return _errors({text_field(0): result_text(checked, user)})

        async def answer(_: dict[str, Any]) -> None:
            text = await self._answer(user, pending_id, outcome)
            if channel:
                await self._api.post_ephemeral(channel, user, text)

        response = self._ack(answer, payload)
        return JSONResponse({"response_action": "clear"}, background=response.background)


def _errors(errors: Mapping[str, str]) -> JSONResponse:
    return JSONResponse({"response_action": "errors", "errors": dict(errors)})


def _user_of(payload: Mapping[str, Any]) -> str:
    user = payload.get("user") or {}
    return str(user.get("id", "")) if isinstance(user, Mapping) else ""


def _channel_of(payload: Mapping[str, Any]) -> str:
    for key in ("channel", "container"):
        found = payload.get(key) or {}
        if isinstance(found, Mapping):
            channel = found.get("id") or found.get("channel_id")
            if channel:
                return str(channel)
    return ""


__all__ = [
    "INTERACTIONS_PATH",
    "ReplayGuard",
    "SlackInteractions",
    "error_blocks",
    "modal_outcome",
    "modal_values",
    "result_text",
]
