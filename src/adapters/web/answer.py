"""The answer-link page: ``GET`` and ``POST /answer/<token>`` (issue #17, e-mail answer links).

Server-rendered HTML that works without JavaScript (the page loads none). ``GET`` shows the
bundle — the agent's context, every question, its options and a free-text field, and "Skip"
with an optional reason, as the inbox offers — with a form that posts back to the same URL.
``GET`` reads only, so a mail scanner that follows the link answers nothing; only the form's
``POST`` (``application/x-www-form-urlencoded``, the one route the HTTP gate lets a form reach)
answers, through :meth:`clarion.app.usecases.answer_links.AnswerLinks.answer`.

Every question's options are checkboxes: a Clarion answer may select any number of a
question's options (N8 constrains membership only; nothing marks a question single-select),
exactly as in the inbox. The form is the bundle's :class:`~clarion.domain.answer_form.AnswerForm`
— its field names (``q0_options``, ``q0_text``, ``reason``; the Skip button posts
``action=skip``, Submit ``action=answer``) and its one parser; the page's earlier names
``q0-options`` and ``q0-text`` are still read. A refusal (N6–N8b, nothing chosen at all, text over
2,000 characters) re-renders the form with the person's input and each message next to the
field its ``FormError`` names. Every other outcome —
recorded, already answered (the winner's answer), used, expired, invalid, no longer available
— is a page with a clear message, never an error page.

All text an agent or a person wrote is HTML-escaped and wrapped in ``<bdi>`` (a bidirectional
isolate), like the inbox, so neither markup nor direction controls leak into the page.
"""

from __future__ import annotations

import html
import re
import urllib.parse
from collections.abc import Mapping, Sequence
from typing import Final

import structlog
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import BaseRoute, Route

from clarion.adapters.approval_display import ShownApproval, approval_of, vote_recorded_text
from clarion.app.usecases.answer_links import (
    ANSWER_PATH,
    NOT_RECORDED,
    AnswerLinks,
    LinkPage,
    LinkState,
)
from clarion.app.usecases.auth import current_identity
from clarion.app.usecases.resolve import VoteRecorded
from clarion.domain.answer_form import (
    FORM,
    REASON,
    SKIP,
    AnswerForm,
    FieldKind,
    FormField,
    FormValues,
    options_field,
    text_field,
)
from clarion.domain.errors import ClarionError, InvalidOutcome, failure_fields
from clarion.domain.model import REJECTED, Answer, Question

log = structlog.get_logger(__name__)

FORM_MEDIA_TYPE: Final = "application/x-www-form-urlencoded"
MAX_FIELDS: Final = 10_000
STORE_FAILED: Final = "Clarion could not read this question right now. Please try again."

_CONTENT_SECURITY_POLICY: Final = "; ".join(
    (
        "default-src 'none'",
        "style-src 'self'",
        "img-src 'self'",
        "base-uri 'none'",
        "form-action 'self'",
        "frame-ancestors 'none'",
    )
)
PAGE_HEADERS: Final[Mapping[str, str]] = {
    "Content-Security-Policy": _CONTENT_SECURITY_POLICY,
    "X-Content-Type-Options": "nosniff",
    # The URL carries the link's token: no Referer anywhere, not even to this site (#29 S5).
    # A browser then sends ``Origin: null`` on the form's POST, which the HTTP gate accepts on
    # this route when ``Sec-Fetch-Site`` does not say another site sent it.
    "Referrer-Policy": "no-referrer",
    "X-Robots-Tag": "noindex, nofollow",
    "Cache-Control": "no-store",  # the page shows questions and answers
}

_STATUS: Final[Mapping[LinkState, int]] = {
    LinkState.INVALID: 404,
    LinkState.UNAVAILABLE: 404,
    LinkState.EXPIRED: 410,
    LinkState.FAILED: 503,
    LinkState.SIGN_IN: 401,
}

_MESSAGES: Final[Mapping[LinkState, str]] = {
    LinkState.USED: "This answer link has already been used; it answers only once.",
    LinkState.CLOSED: (
        "This question is no longer active (the agent moved on or the session ended). "
        "Nothing was recorded."
    ),
    LinkState.EXPIRED: (
        "This answer link has expired. Nothing was recorded; the question may still be "
        "waiting in the Clarion inbox."
    ),
    LinkState.INVALID: (
        "This is not a valid answer link. Check that the whole link from the message was "
        "opened; nothing was recorded."
    ),
    LinkState.UNAVAILABLE: (
        "This question no longer exists or is no longer available to you. Nothing was recorded."
    ),
    LinkState.SIGN_IN: (
        "This answer link was made for the person the agent asks for. Sign in to the Clarion "
        "inbox as that person in this browser, then open the link again. Nothing was recorded."
    ),
}


def _text(value: str) -> str:
    """Escaped text as a bidirectional isolate."""
    return f"<bdi>{html.escape(value, quote=True)}</bdi>"


def _attr(value: str) -> str:
    return html.escape(value, quote=True)


LEGACY_NAMES: Final = re.compile(r"q(\d+)-(options|text)")
"""The page's field names before the one form model (``q0-options``, ``q0-text``): still read,
so a script written against them keeps answering (docs/notifications.md)."""


def form_values(body: bytes) -> dict[str, object]:
    """The flat field values (:mod:`clarion.domain.answer_form`) of ``body`` (URL-encoded
    UTF-8): options as lists, texts as their first value, ``action=skip`` (the Skip button) as
    ``skip``. The legacy names :data:`LEGACY_NAMES` are read as their current ones.

    Raises:
        ValueError: the body is not URL-encoded UTF-8 or has too many fields.
    """
    fields = urllib.parse.parse_qsl(
        body.decode("utf-8"),
        keep_blank_values=True,
        max_num_fields=MAX_FIELDS,
        errors="strict",
    )
    lists: dict[str, list[str]] = {}
    for name, value in fields:
        legacy = LEGACY_NAMES.fullmatch(name)
        if legacy is not None:
            name = f"q{legacy.group(1)}_{legacy.group(2)}"
        lists.setdefault(name, []).append(value)
    values: dict[str, object] = {
        name: found if name.endswith("_options") else found[0] for name, found in lists.items()
    }
    values[SKIP] = lists.get("action", [""])[0] == "skip"
    return values


def parse_form(body: bytes, form: AnswerForm) -> FormValues:
    """What the person submitted (:func:`form_values` read by the bundle's form).

    Raises:
        ValueError: the body is not URL-encoded UTF-8 or has too many fields.
        FormError: never for a body this page's form sends (every value is a string).
    """
    return form.read(form_values(body))


# -- rendering ---------------------------------------------------------------------------------


def _document(body: str) -> str:
    return (
        '<!doctype html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        '<meta name="color-scheme" content="light dark">\n'
        '<meta name="referrer" content="no-referrer">\n'
        "<title>Clarion — answer a question</title>\n"
        '<link rel="icon" href="../static/icon.svg" type="image/svg+xml">\n'
        '<link rel="stylesheet" href="../static/inbox.css">\n'
        "</head>\n<body>\n"
        '<header class="masthead"><h1><img src="../static/icon.svg" alt="" width="28" '
        'height="28"> Clarion</h1></header>\n'
        f'<main id="main">\n{body}\n'
        '<p class="meta"><a href="../">Open the Clarion inbox</a></p>\n'
        "</main>\n</body>\n</html>\n"
    )


def _titles(questions: Sequence[Question]) -> str:
    many = len(questions) > 1
    titles = [
        question.title or (f"Question {i + 1}" if many else "Question")
        for i, question in enumerate(questions)
    ]
    return " · ".join(_text(title) for title in titles)


def _head(page: LinkPage) -> str:
    questions = page.questions
    count = f'<p class="meta">{len(questions)} questions</p>' if len(questions) > 1 else ""
    context = (
        '<div class="context"><p class="context-label">Context from the agent</p>'
        f'<p class="context-text">{_text(page.context)}</p></div>'
        if page.context
        else ""
    )
    return (
        f'<header class="bundle-head"><h2 id="bundle-title">{_titles(questions)}</h2>{count}'
        f"</header>{context}"
    )


def _options(field: FormField, question: Question, submitted: FormValues) -> str:
    index = field.index or 0
    chosen = set(submitted.options_at(index))
    options = []
    for j, option in enumerate(question.options):
        oid = f"q{index}-o{j}"
        described = f' aria-describedby="{oid}-desc"' if option.description else ""
        checked = " checked" if option.option_id in chosen else ""
        description = (
            f'<span class="option-desc" id="{oid}-desc">{_text(option.description)}</span>'
            if option.description
            else ""
        )
        options.append(
            f'<label class="option" for="{oid}">'
            f'<input type="checkbox" id="{oid}" name="{field.name}" '
            f'value="{_attr(option.option_id)}"{checked}{described}>'
            f'<span class="option-text"><span class="option-label">'
            f"{_text(option.label or option.option_id)}</span>{description}</span></label>"
        )
    return f'<div class="options">{"".join(options)}</div>'


def _question(
    index: int,
    question: Question,
    fields: Sequence[FormField],
    submitted: FormValues,
    errors: Mapping[str, str],
) -> str:
    """One question's fieldset: its fields of the form model, and the first error any of them
    has, under the free text (one message place per question)."""
    qid = f"q{index}"
    error = next((errors[field.name] for field in fields if field.name in errors), "")
    title = (
        f'<span class="q-title">{_text(question.title)}</span>'
        '<span class="visually-hidden">: </span>'
        if question.title
        else ""
    )
    prompt = _text(question.prompt or "(this question has no text)")
    hint = (
        "Choose any that apply, add your own words, or both."
        if question.options
        else "No options were offered; answer in your own words."
    )
    invalid = ' aria-invalid="true"' if error else ""
    controls = []
    for field in fields:
        if field.kind is FieldKind.OPTIONS:
            controls.append(_options(field, question, submitted))
        else:
            text = submitted.text_at(index)
            controls.append(
                f'<div class="free-text"><label for="{qid}-text">'
                f"{'Your own answer (optional)' if question.options else 'Your answer'}</label>"
                f'<textarea id="{qid}-text" name="{field.name}" rows="2" '
                f'aria-describedby="{qid}-msg"{invalid}>{html.escape(text)}</textarea>'
                f'<div class="field-meta"><p class="field-error" id="{qid}-msg">'
                f"{_text(error) if error else ''}</p></div></div>"
            )
    return (
        f'<fieldset class="question" id="{qid}"><legend>{title}'
        f'<span class="q-prompt">{prompt}</span></legend>'
        f'<p class="hint">{hint}</p>{"".join(controls)}</fieldset>'
    )


def _action(approval: ShownApproval) -> str:
    """The action verbatim: escaped, never reflowed."""
    return (
        f'<pre class="approval-action" aria-label="The action">{html.escape(approval.action)}</pre>'
    )


def _approval_form(
    approval: ShownApproval, page: LinkPage, submitted: FormValues, errors: Mapping[str, str]
) -> str:
    """An approval request's form (issue #33): the reason, the action verbatim in ``<pre>``,
    a comment and two submit buttons that post the option (``q0_options=approve|deny``) —
    one decision, no "choose any"; the decision goes through the one resolver like any
    answer, so quorum and veto apply."""
    options, text = options_field(0), text_field(0)
    error = next((errors[name] for name in (options, text, FORM) if errors.get(name)), "")
    reason = f'<p class="approval-reason">{_text(approval.reason)}</p>' if approval.reason else ""
    body = (
        '<article class="bundle approval" aria-labelledby="bundle-title">'
        f"{_head(page)}{reason}{_action(approval)}"
        '<form class="answer-form" method="post" aria-describedby="form-error">'
        '<div class="free-text"><label for="q0-text">Comment (optional)</label>'
        f'<textarea id="q0-text" name="{text}" rows="2">'
        f"{html.escape(submitted.text_at(0))}</textarea></div>"
        f'<p class="form-error" id="form-error" role="alert">{_text(error) if error else ""}</p>'
        f'<div class="actions"><button type="submit" name="{options}" value="approve" '
        'class="primary">Approve</button>'
        f'<button type="submit" name="{options}" value="deny" class="secondary">Deny</button>'
        "</div></form></article>"
    )
    return _document(body)


def render_form(
    page: LinkPage, submitted: FormValues | None = None, errors: Mapping[str, str] | None = None
) -> str:
    """The bundle and its answer form (``page.state`` is OPEN): the fields of its
    :class:`AnswerForm`, ``submitted`` filled in, each of ``errors`` (by field name,
    :data:`FORM` for the whole form) next to its field. An approval request gets its own
    form (:func:`_approval_form`)."""
    submitted = submitted if submitted is not None else FormValues()
    errors = errors if errors is not None else {}
    approval = approval_of(page.questions)
    if approval is not None:
        return _approval_form(approval, page, submitted, errors)
    fields = list(AnswerForm(page.questions).fields())
    questions = "".join(
        _question(i, question, [f for f in fields if f.index == i], submitted, errors)
        for i, question in enumerate(page.questions)
    )
    many = len(page.questions) > 1
    skip_label = f"Skip {'these questions' if many else 'this question'} instead…"
    reason_error = errors.get(REASON, "") or errors.get(SKIP, "")
    reason_invalid = ' aria-invalid="true"' if reason_error else ""
    open_skip = " open" if reason_error or submitted.skip else ""
    form_error = _text(errors[FORM]) if errors.get(FORM) else ""
    body = (
        '<article class="bundle" aria-labelledby="bundle-title">'
        f"{_head(page)}"
        '<form class="answer-form" method="post" aria-describedby="form-error">'
        f"{questions}"
        f'<p class="form-error" id="form-error" role="alert">{form_error}</p>'
        '<div class="actions"><button type="submit" name="action" value="answer" '
        'class="primary">Submit answer</button></div>'
        f'<details class="skip"{open_skip}><summary>{skip_label}</summary>'
        '<div class="skip-body"><p class="hint">The agent is told the question was skipped, '
        "with your reason if you give one.</p>"
        '<label for="reason">Reason for skipping (optional)</label>'
        f'<textarea id="reason" name="{REASON}" rows="2" aria-describedby="reason-msg"'
        f"{reason_invalid}>{html.escape(submitted.reason)}</textarea>"
        '<div class="field-meta"><p class="field-error" id="reason-msg">'
        f"{_text(reason_error) if reason_error else ''}</p></div>"
        '<button type="submit" name="action" value="skip" class="secondary">Skip</button>'
        "</div></details></form></article>"
    )
    return _document(body)


def _describe(question: Question, answer: Answer | None) -> str:
    if answer is None:
        return _text("(no answer)")
    labels = {option.option_id: option.label or option.option_id for option in question.options}
    parts = []
    chosen = ", ".join(_text(labels.get(o, o)) for o in answer.selected_options)
    if chosen:
        parts.append(chosen)
    if answer.custom_text:
        parts.append(f"“{_text(answer.custom_text)}”")
    return " — ".join(parts) if parts else _text("(no answer)")


def _recorded(page: LinkPage) -> str:
    resolution = page.resolution
    if resolution is None:
        return ""
    if resolution.status == REJECTED:
        if not resolution.reject_reason:
            return ""
        reason = _text(resolution.reject_reason)
        return f'<dl class="recorded"><dt>Reason</dt><dd>{reason}</dd></dl>'
    by_id = {answer.question_id: answer for answer in resolution.answers}
    items = "".join(
        f"<dt>{_text(question.title or question.prompt or f'Question {i + 1}')}</dt>"
        f"<dd>{_describe(question, by_id.get(question.id))}</dd>"
        for i, question in enumerate(page.questions)
    )
    return f'<dl class="recorded">{items}</dl>'


def outcome_title(page: LinkPage, *, submitted: bool) -> str:
    """The sentence an outcome page leads with."""
    resolution = page.resolution
    rejected = resolution is not None and resolution.status == REJECTED
    if page.state is LinkState.RECORDED:
        return "You skipped this question." if rejected else "Your answer was sent to the agent."
    if page.state is LinkState.ANSWERED:
        if page.link_used:
            lead = "This answer link has already been used."
        elif submitted:
            lead = "Already answered: someone else answered first. Your answer was not used."
        else:
            lead = "Already answered."
        return f"{lead} The question was skipped." if rejected else f"{lead} This was recorded:"
    if page.state is LinkState.FAILED or (page.state is LinkState.CLOSED and page.message):
        return page.message  # a CLOSED page's message says why it closed (issue #30)
    return _MESSAGES.get(page.state, "")


def render_outcome(page: LinkPage, *, submitted: bool) -> str:
    """Any state but OPEN: the message, and the recorded answer when there is one."""
    title = outcome_title(page, submitted=submitted)
    result = "won" if page.state is LinkState.RECORDED else "lost"
    head = _head(page) if page.questions else ""
    approval = approval_of(page.questions)
    if approval is not None:
        head += _action(approval)
    body = (
        '<article class="bundle closed" aria-labelledby="bundle-title">'
        f"{head}"
        f'<section class="result result-{result}" aria-label="Outcome">'
        f'<p class="result-title" role="status">{_text(title)}</p>{_recorded(page)}'
        "</section></article>"
    )
    return _document(body)


def render_vote(page: LinkPage, recorded: VoteRecorded) -> str:
    """An approval vote that did not decide the request (issue #33): recorded, and how many
    approvals it still waits for."""
    result = recorded.result
    title = vote_recorded_text(result.approvals, result.required, counted=recorded.counted)
    approval = approval_of(page.questions)
    action = _action(approval) if approval is not None else ""
    body = (
        '<article class="bundle closed" aria-labelledby="bundle-title">'
        f"{_head(page)}{action}"
        '<section class="result result-won" aria-label="Outcome">'
        f'<p class="result-title" role="status">{_text(title)}</p></section></article>'
    )
    return _document(body)


def _response(content: str, status: int = 200) -> Response:
    return HTMLResponse(content, status_code=status, headers=dict(PAGE_HEADERS))


def _page_response(page: LinkPage, *, submitted: bool) -> Response:
    if page.state is LinkState.OPEN:
        return _response(render_form(page))
    return _response(render_outcome(page, submitted=submitted), _STATUS.get(page.state, 200))


def _store_failed() -> Response:
    page = LinkPage(state=LinkState.FAILED, message=STORE_FAILED)
    return _response(render_outcome(page, submitted=False), 503)


def answer_routes(links: AnswerLinks) -> list[BaseRoute]:
    """``GET`` (and ``HEAD``) and ``POST`` ``/answer/{token}``."""

    async def show(request: Request) -> Response:
        token = request.path_params["token"]
        try:
            page = await links.view(token, current_identity())
        except ClarionError as exc:
            log.warning("answer_link.view_failed", **failure_fields(exc))
            return _store_failed()
        return _page_response(page, submitted=False)

    async def submit(request: Request) -> Response:
        token = request.path_params["token"]
        viewer = current_identity()
        try:
            page = await links.view(token, viewer)
        except ClarionError as exc:
            log.warning("answer_link.view_failed", **failure_fields(exc))
            return _store_failed()
        if page.state is not LinkState.OPEN:
            return _page_response(page, submitted=True)
        form = AnswerForm(page.questions)
        try:
            submitted = parse_form(await request.body(), form)
        except ValueError:
            errors = {FORM: "The form could not be read. Please submit it again."}
            return _response(render_form(page, None, errors), 400)
        try:
            outcome = form.check(submitted)
            result = await links.answer(token, outcome, viewer)
        except InvalidOutcome as exc:
            refused = form.error(exc)
            return _response(render_form(page, submitted, refused.errors), 400)
        except VoteRecorded as recorded:
            return _response(render_vote(page, recorded))
        except ClarionError as exc:
            log.warning("answer_link.answer_failed", **failure_fields(exc))
            return _store_failed()
        if result.state is LinkState.FAILED and result.message == NOT_RECORDED:
            # Not recorded: show the form again, with what the person entered.
            return _response(render_form(page, submitted, {FORM: result.message}), 503)
        return _page_response(result, submitted=True)

    return [
        Route(ANSWER_PATH + "{token}", show, methods=["GET"], name="answer_link"),
        Route(ANSWER_PATH + "{token}", submit, methods=["POST"], name="answer_link_submit"),
    ]
