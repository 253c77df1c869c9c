"""An approval request as people's surfaces show it (issue #33), read from its one question.

An approval bundle carries the question :func:`clarion.domain.approvals.approval_question`
builds: id ``decision``, the options ``approve`` / ``deny``, and a prompt that is the reason,
a blank line, then ``Action: <name>``, ``Arguments:`` and the arguments as indented JSON (and
"Needs M approvals." when M > 1). The surfaces that only see a bundle's questions — the e-mail
answer page, Slack messages, the elicitation form — use :func:`shown_approval` to show the
action verbatim (monospace, never reflowed) apart from the reason, and to offer Approve/Deny
instead of the generic "choose any" form. A question that merely looks like one (a plain ask
with a ``decision`` question offering ``approve``/``deny``) is shown the same way, which is
harmless: its answer is the same option either way.

The action block is everything from the LAST line starting with ``Action: ``: an action name
holds no control characters and indented JSON has no line starting with it, so a reason that
imitates the block cannot hide the real one after it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

import attrs

from clarion.domain.approvals import APPROVAL_QUESTION_ID, APPROVE, DENY
from clarion.domain.model import Question

ACTION_LEAD: Final = "Action: "
_OPTIONS: Final = (APPROVE, DENY)


@attrs.frozen
class ShownApproval:
    """An approval question split for display: ``action`` is shown verbatim (in ``<pre>`` or a
    code block), ``reason`` as ordinary text."""

    reason: str
    action: str
    name: str


def shown_approval(question: Question) -> ShownApproval | None:
    """The approval ``question`` shows, or None when it is not an approval question."""
    if question.id != APPROVAL_QUESTION_ID:
        return None
    if tuple(option.option_id for option in question.options) != _OPTIONS:
        return None
    lines = question.prompt.split("\n")
    starts = [i for i, line in enumerate(lines) if line.startswith(ACTION_LEAD)]
    if not starts:
        return None
    first = starts[-1]
    reason = "\n".join(lines[:first]).strip("\n")
    return ShownApproval(
        reason=reason,
        action="\n".join(lines[first:]),
        name=lines[first][len(ACTION_LEAD) :],
    )


def approval_of(questions: Sequence[Question]) -> ShownApproval | None:
    """The approval a bundle of ``questions`` asks for: its only question's, else None."""
    return shown_approval(questions[0]) if len(questions) == 1 else None


def vote_recorded_text(approvals: int, required: int, *, counted: bool) -> str:
    """What a person whose vote did not decide an approval is told (issue #33, quorum):
    ``counted`` False when they had voted already (their first vote stands)."""
    tally = f"{approvals} of {required} approval{'' if required == 1 else 's'}"
    if not counted:
        return f"You have already voted on this request; your first vote counts ({tally} so far)."
    return (
        f"Your vote was recorded: {tally}. The request waits for more approvals before the "
        "agent is told."
    )
