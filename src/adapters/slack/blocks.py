"""The Slack messages and the answer modal, built with ``slack_sdk.models.blocks`` (issue #18).

A question message shows the bundle: the agent's context, each question with its options, and
always a link to the bundle in the inbox. How it is answered:

- a bundle of **one question with options** gets one button per option — a click answers that
  option alone — and an "Answer in a form…" button for anything else;
- any other bundle (several questions, no options) gets an "Answer…" button.

The button opens a modal with the bundle's answer form (:mod:`clarion.domain.answer_form`; each
input block's id is the form's field name): each question's options as checkboxes (any
number may be chosen, as everywhere in Clarion: nothing marks a question single-choice), a
multi-line text field of at most 2,000 code points per question, and "Skip these questions"
with a reason. When the bundle ends, every message is replaced by its final state: who
answered, on which surface, what was chosen or that it was skipped — or that it expired or was
cancelled — with no buttons. A skip's reason goes to the agent and to the person who skipped
(their ephemeral reply); Clarion does not store it (R2b), so the updated message cannot show it.

Everything an agent or a person wrote is escaped for ``mrkdwn`` (``&``, ``<``, ``>``) and cut
to Slack's limits.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, Final

from slack_sdk.models.blocks import (
    ActionsBlock,
    Block,
    ButtonElement,
    CheckboxesElement,
    ContextBlock,
    DividerBlock,
    HeaderBlock,
    InputBlock,
    MarkdownTextObject,
    Option,
    PlainTextInputElement,
    PlainTextObject,
    SectionBlock,
)
from slack_sdk.models.views import View

from clarion.adapters.approval_display import ShownApproval, approval_of, shown_approval
from clarion.domain.answer_form import REASON, SKIP, AnswerForm, FieldKind, FormField
from clarion.domain.approvals import APPROVE, DENY
from clarion.domain.model import MAX_TEXT_CODE_POINTS, REJECTED, Answer, Question, Resolution
from clarion.domain.notifications import (
    CANCELLED_EVENT,
    EXPIRED_EVENT,
    RESOLVED,
    SUPERSEDED_EVENT,
)
from clarion.domain.resolved_by import ResolvedBy

OPTION_ACTION: Final = "clarion_option"  # + "_<j>": answer with option j of the only question
MODAL_ACTION: Final = "clarion_modal"
LINK_ACTION: Final = "clarion_link"
MODAL_CALLBACK: Final = "clarion_answer"
TEXT_LIMIT: Final = MAX_TEXT_CODE_POINTS  # 2,000 code points, as on every surface
SKIP_BLOCK: Final = SKIP  # the modal's block ids are the answer form's field names
REASON_BLOCK: Final = REASON

_SECTION_LIMIT: Final = 3000
_BUTTON_LIMIT: Final = 75
_HEADER_LIMIT: Final = 150
_LABEL_LIMIT: Final = 2000

_LEADS: Final[Mapping[str, str]] = {
    "answerable": "Question waiting",
    "reminder": "Reminder: question waiting",
    "escalation": "Escalated: question waiting",
    RESOLVED: "Answered",
    EXPIRED_EVENT: "Expired",
    CANCELLED_EVENT: "Cancelled",
    SUPERSEDED_EVENT: "Closed without an answer",
}
_SURFACES: Final[Mapping[str, str]] = {
    "rest": "the REST API",
    "mcp": "MCP",
    "inbox": "the web inbox",
    "cli": "the CLI",
    "agent_client": "the agent's own client",
    "mcp_app": "the question card in the agent's app",
    "email": "an e-mail answer link",
    "slack": "Slack",
    "deadline": "the deadline's default",
}


def cut(text: str, limit: int) -> str:
    """``text`` in at most ``limit`` code points (an ellipsis marks a cut)."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def escape(text: str) -> str:
    """Text for ``mrkdwn``: Slack's three control characters escaped."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _markdown(text: str) -> MarkdownTextObject:
    return MarkdownTextObject(text=cut(text, _SECTION_LIMIT))


def _title(question: Question, index: int, count: int) -> str:
    return question.title or (f"Question {index + 1}" if count > 1 else "Question")


def option_value(pending_id: str, question_id: str, option_id: str) -> str:
    return json.dumps([pending_id, question_id, option_id], separators=(",", ":"))


def parse_option_value(value: str) -> tuple[str, str, str] | None:
    try:
        parsed = json.loads(value)
    except ValueError:
        return None
    if (
        isinstance(parsed, list)
        and len(parsed) == 3
        and all(isinstance(part, str) and part for part in parsed)
    ):
        return parsed[0], parsed[1], parsed[2]
    return None


def has_option_buttons(questions: Sequence[Question]) -> bool:
    return len(questions) == 1 and bool(questions[0].options)


def _context(context: str) -> list[Block]:
    if not context:
        return []
    quoted = "\n".join(f">{escape(line)}" for line in context.splitlines() or [""])
    return [SectionBlock(text=_markdown(f"*Context from the agent*\n{quoted}"))]


def _code(text: str, limit: int) -> str:
    """``text`` verbatim in a code block of at most ``limit`` code points (an ellipsis marks
    a cut); a ``` inside it cannot end the block early."""
    return "```" + cut(escape(text).replace("```", "`\u200b``"), limit - 6) + "```"


def _approval_section(question: Question, approval: ShownApproval) -> SectionBlock:
    """An approval request (issue #33): the reason, then the action verbatim in a code block
    (cut to the section's limit; the inbox link shows it whole)."""
    lines = [f"*{escape(question.title)}*"]
    if approval.reason:
        lines.append(escape(approval.reason))
    head = "\n".join(lines) + "\n"
    return SectionBlock(text=_markdown(head + _code(approval.action, _SECTION_LIMIT - len(head))))


def _question_section(question: Question, index: int, count: int) -> SectionBlock:
    approval = shown_approval(question) if count == 1 else None
    if approval is not None:
        return _approval_section(question, approval)
    lines = [f"*{escape(_title(question, index, count))}*"]
    if question.prompt:
        lines.append(escape(question.prompt))
    for option in question.options:
        detail = f" — {escape(option.description)}" if option.description else ""
        lines.append(f"• {escape(option.label or option.option_id)}{detail}")
    return SectionBlock(text=_markdown("\n".join(lines)))


_APPROVAL_STYLES: Final[Mapping[str, str]] = {"approve": "primary", "deny": "danger"}


def _more_label(*, buttons: bool, approval: bool) -> str:
    if approval:
        return "Decide with a comment…"
    return "Answer in a form…" if buttons else "Answer…"


def question_blocks(
    *, event: str, pending_id: str, context: str, questions: Sequence[Question], link: str
) -> list[Block]:
    """The message asking for an answer (see the module)."""
    blocks: list[Block] = [
        HeaderBlock(text=PlainTextObject(text=cut(_LEADS.get(event, event), _HEADER_LIMIT)))
    ]
    blocks += _context(context)
    count = len(questions)
    for index, question in enumerate(questions):
        blocks.append(_question_section(question, index, count))
    buttons = has_option_buttons(questions)
    approval = approval_of(questions) is not None
    if buttons:
        question = questions[0]
        blocks.append(
            ActionsBlock(
                block_id="clarion_options",
                elements=[
                    ButtonElement(
                        text=PlainTextObject(
                            text=cut(option.label or option.option_id, _BUTTON_LIMIT)
                        ),
                        action_id=f"{OPTION_ACTION}_{j}",
                        value=option_value(pending_id, question.id, option.option_id),
                        style=_APPROVAL_STYLES.get(option.option_id) if approval else None,
                    )
                    for j, option in enumerate(question.options)
                ],
            )
        )
    blocks.append(
        ActionsBlock(
            block_id="clarion_more",
            elements=[
                ButtonElement(
                    text=PlainTextObject(text=_more_label(buttons=buttons, approval=approval)),
                    action_id=MODAL_ACTION,
                    value=pending_id,
                    style="primary" if not buttons else None,
                ),
                ButtonElement(
                    text=PlainTextObject(text="Open in Clarion"), action_id=LINK_ACTION, url=link
                ),
            ],
        )
    )
    return blocks


def _chosen(question: Question, answer: Answer | None) -> str:
    if answer is None:
        return "(no answer)"
    labels = {o.option_id: o.label or o.option_id for o in question.options}
    parts = [", ".join(escape(labels.get(o, o)) for o in answer.selected_options)]
    if answer.custom_text:
        parts.append(f"“{escape(answer.custom_text)}”")
    shown = " — ".join(part for part in parts if part)
    return shown or "(no answer)"


def who(resolved_by: ResolvedBy | None) -> str:
    """``alice via Slack`` (who resolved, on which surface)."""
    if resolved_by is None:
        return "someone"
    name = resolved_by.display_name or resolved_by.identity_id or "someone"
    surface = _SURFACES.get(resolved_by.surface.value, resolved_by.surface.value)
    return f"{name} via {surface}"


def outcome_lines(
    questions: Sequence[Question], resolution: Resolution, *, markdown: bool = True
) -> list[str]:
    """What was chosen per question, or the rejection and its reason."""
    if resolution.status == REJECTED or resolution.rejected:
        reason = resolution.reject_reason
        if not reason:
            # Clarion never stores a rejection's reason (R2b: only the agent receives it), so
            # a message updated from the store shows only that it was skipped.
            return ["Skipped."]
        return [f"Skipped. Reason: {escape(reason) if markdown else reason}"]
    by_id = {answer.question_id: answer for answer in resolution.answers}
    count = len(questions)
    return [
        f"*{escape(_title(q, i, count))}*: {_chosen(q, by_id.get(q.id))}"
        for i, q in enumerate(questions)
    ]


def final_blocks(
    *,
    event: str,
    context: str,
    questions: Sequence[Question],
    link: str,
    resolution: Resolution | None,
    resolved_by: ResolvedBy | None,
) -> list[Block]:
    """The message once the bundle ended: its final state, no buttons."""
    rejected = resolution is not None and (resolution.rejected or resolution.status == REJECTED)
    lead = "Skipped" if event == RESOLVED and rejected else _LEADS.get(event, event)
    decided = _decided(questions, resolution) if event == RESOLVED else None
    lead = decided or lead
    blocks: list[Block] = [HeaderBlock(text=PlainTextObject(text=cut(lead, _HEADER_LIMIT)))]
    blocks += _context(context)
    count = len(questions)
    for index, question in enumerate(questions):
        blocks.append(_question_section(question, index, count))
    blocks.append(DividerBlock())
    if event == RESOLVED and resolution is not None:
        blocks.append(SectionBlock(text=_markdown("\n".join(outcome_lines(questions, resolution)))))
        verb = decided or ("Skipped" if rejected else "Answered")
        by = f"{verb} by {escape(who(resolved_by))}"
    elif event == EXPIRED_EVENT:
        by = "Nobody answered before the question expired."
    elif event == SUPERSEDED_EVENT:  # issue #30
        by = "The agent moved on to a newer turn before anyone answered."
    else:
        by = "The question was cancelled; nothing was answered."
    blocks.append(
        ContextBlock(elements=[_markdown(f"{by} · <{link}|Open in Clarion>")], block_id="final")
    )
    return blocks


def _decided(questions: Sequence[Question], resolution: Resolution | None) -> str | None:
    """ "Approved" or "Denied" for a decided approval request (issue #33; a skip denies),
    else None."""
    if resolution is None or approval_of(questions) is None:
        return None
    if resolution.rejected or resolution.status == REJECTED:
        return "Denied"
    chosen = {o for answer in resolution.answers for o in answer.selected_options}
    return "Approved" if chosen == {APPROVE} else "Denied" if chosen == {DENY} else None


def summary_text(
    event: str, questions: Sequence[Question], resolution: Resolution | None = None
) -> str:
    """The notification text (shown where blocks are not: push notifications, search)."""
    first = questions[0] if questions else None
    topic = (first.title or first.prompt) if first is not None else ""
    more = f" (+{len(questions) - 1} more)" if len(questions) > 1 else ""
    skipped = event == RESOLVED and resolution is not None and resolution.rejected
    return cut(f"{'Skipped' if skipped else _LEADS.get(event, event)}: {topic}{more}", 300)


def modal_view(
    *, pending_id: str, context: str, questions: Sequence[Question], metadata: Mapping[str, str]
) -> View:
    """The answer modal (``views.open``); ``metadata`` (the pending id and where the message
    is) rides along as ``private_metadata``."""
    blocks: list[Block] = _context(context)
    count = len(questions)
    shown: set[int] = set()
    for field in AnswerForm(tuple(questions)).fields():
        # The block ids are the form's field names (and stay so: sent modals carry them).
        if field.index is not None and field.index not in shown:
            shown.add(field.index)
            blocks.append(_question_section(questions[field.index], field.index, count))
        blocks += _field_blocks(field, questions, many=count > 1)
    return View(
        type="modal",
        callback_id=MODAL_CALLBACK,
        title=PlainTextObject(text="Answer Clarion"),
        submit=PlainTextObject(text="Submit"),
        close=PlainTextObject(text="Cancel"),
        blocks=blocks,
        private_metadata=json.dumps({"pending_id": pending_id, **metadata}),
    )


def _field_blocks(field: FormField, questions: Sequence[Question], *, many: bool) -> list[Block]:
    """The modal's input for one field of the answer form."""
    if field.kind is FieldKind.OPTIONS and field.index is not None:
        return [_options_input(field.name, questions[field.index])]
    if field.kind is FieldKind.TEXT and field.index is not None:
        label = "Your own answer (optional)" if questions[field.index].options else "Your answer"
        return [_text_input(field.name, label, action_id="text")]
    if field.kind is FieldKind.SKIP:
        return [DividerBlock(), _skip_input(many=many)]
    if field.kind is FieldKind.REASON:
        return [_text_input(REASON_BLOCK, "Reason for skipping (optional)", action_id="reason")]
    return []


def _options_input(block_id: str, question: Question) -> InputBlock:
    options = [
        Option(
            value=option.option_id,
            text=PlainTextObject(text=cut(option.label or option.option_id, _BUTTON_LIMIT)),
        )
        for option in question.options
    ]
    return _checkboxes_input(
        block_id, "Choose any that apply", action_id="options", options=options
    )


def _text_input(block_id: str, label: str, *, action_id: str) -> InputBlock:
    return InputBlock(
        block_id=block_id,
        label=PlainTextObject(text=label),
        optional=True,
        element=PlainTextInputElement(action_id=action_id, multiline=True, max_length=TEXT_LIMIT),
    )


def _skip_input(*, many: bool) -> InputBlock:
    what = "these questions" if many else "this question"
    skip = Option(value="skip", text=PlainTextObject(text=f"Skip {what} instead"))
    return _checkboxes_input(SKIP_BLOCK, "Or skip", action_id="skip", options=[skip])


def _checkboxes_input(
    block_id: str, label: str, *, action_id: str, options: list[Option]
) -> InputBlock:
    """An optional input of checkboxes (any number may be ticked, none included)."""
    return InputBlock(
        block_id=block_id,
        label=PlainTextObject(text=label),
        optional=True,
        element=CheckboxesElement(action_id=action_id, options=options),
    )


def as_dicts(blocks: Sequence[Block]) -> list[dict[str, Any]]:
    return [block.to_dict() for block in blocks]


__all__ = [
    "LINK_ACTION",
    "MODAL_ACTION",
    "MODAL_CALLBACK",
    "OPTION_ACTION",
    "REASON_BLOCK",
    "SKIP_BLOCK",
    "TEXT_LIMIT",
    "as_dicts",
    "cut",
    "escape",
    "final_blocks",
    "has_option_buttons",
    "modal_view",
    "option_value",
    "outcome_lines",
    "parse_option_value",
    "question_blocks",
    "summary_text",
    "who",
]
