"""The e-mail channel: one plain-text + HTML message per notification over SMTP
(``aiosmtplib``), to the route's address.

The message lists the questions with their options and, for a notification asking a person to
act, the recipient's link: a signed single-use answer link from the :class:`AnswerLinkIssuer`
when one is configured, else the inbox deep link. Its ``Message-ID`` is derived from the
notification's idempotency key, so a repeated delivery is recognisably the same message.

SMTP failures that may pass (connection refused, timeouts, 4xx replies) are retried; a 5xx reply
(a refused address, a refused message) is permanent.
"""

from __future__ import annotations

import hashlib
import html
from email.message import EmailMessage
from email.utils import formatdate

import aiosmtplib
import attrs
import structlog

from clarion.adapters.notify.body import subject
from clarion.domain.notifications import ASKING_EVENTS
from clarion.ports.notifications import AnswerLinkIssuer, DeliveryOutcome, Notification, Sent

log = structlog.get_logger(__name__)

SECURITY_MODES = ("starttls", "tls", "none")


@attrs.frozen
class SmtpSettings:
    """Where and how to send (``CLARION_SMTP_*``)."""

    host: str
    port: int = 587
    security: str = "starttls"  # starttls | tls (implicit TLS, port 465) | none
    username: str = ""
    password: str = attrs.field(default="", repr=False)
    sender: str = "clarion@localhost"
    timeout_s: float = 30.0


def _message_id(notification: Notification, sender: str) -> str:
    digest = hashlib.sha256(notification.idempotency_key.encode()).hexdigest()[:32]
    domain = sender.rpartition("@")[2] or "clarion.invalid"
    return f"<{digest}@{domain}>"


def compose_message(notification: Notification, sender: str, link: str) -> EmailMessage:
    """The message for ``notification`` with ``link`` as its call to action."""
    message = EmailMessage()
    message["Subject"] = subject(notification)
    message["From"] = sender
    message["To"] = notification.route.channel.target
    message["Date"] = formatdate(localtime=False)
    message["Message-ID"] = _message_id(notification, sender)
    message["X-Clarion-Pending-Id"] = notification.pending_id
    asking = notification.event in ASKING_EVENTS
    lines = [subject(notification).removeprefix("[Clarion] "), ""]
    if notification.context:
        lines += [notification.context, ""]
    parts = [f"<p><strong>{html.escape(lines[0])}</strong></p>"]
    if notification.context:
        parts.append(f"<p>{html.escape(notification.context)}</p>")
    for question in notification.questions:
        title = question.title or question.id
        lines.append(f"{title}: {question.prompt}")
        parts.append(f"<h3>{html.escape(title)}</h3><p>{html.escape(question.prompt)}</p><ul>")
        for option in question.options:
            detail = f" — {option.description}" if option.description else ""
            lines.append(f"  - {option.label or option.option_id}{detail}")
            parts.append(
                f"<li>{html.escape(option.label or option.option_id)}{html.escape(detail)}</li>"
            )
        parts.append("</ul>")
        lines.append("")
    if notification.answers:
        lines.append("Answers:")
        for answer in notification.answers:
            chosen = ", ".join(answer.selected_options)
            lines.append(f"  {answer.question_id}: {chosen} {answer.custom_text}".rstrip())
        lines.append("")
    action = "Answer here" if asking else "Open in Clarion"
    lines.append(f"{action}: {link}")
    parts.append(f'<p><a href="{html.escape(link, quote=True)}">{action}</a></p>')
    message.set_content("\n".join(lines) + "\n")
    message.add_alternative("<html><body>" + "".join(parts) + "</body></html>", subtype="html")
    return message


class EmailNotifier:
    """:class:`clarion.ports.notifications.Notifier` over SMTP."""

    def __init__(self, smtp: SmtpSettings, *, links: AnswerLinkIssuer | None = None) -> None:
        self._smtp = smtp
        self._links = links

    def link_for(self, notification: Notification) -> str:
        """The recipient's answer link when it asks them to act and an issuer is configured,
        else the inbox deep link."""
        if self._links is not None and notification.event in ASKING_EVENTS:
            return self._links.link_for(notification.recipient, notification.pending_id)
        return notification.link

    async def deliver(self, notification: Notification) -> DeliveryOutcome:
        smtp = self._smtp
        message = compose_message(notification, smtp.sender, self.link_for(notification))
        try:
            await aiosmtplib.send(
                message,
                hostname=smtp.host,
                port=smtp.port,
                username=smtp.username or None,
                password=smtp.password or None,
                use_tls=smtp.security == "tls",
                start_tls=smtp.security == "starttls",
                timeout=smtp.timeout_s,
            )
        except aiosmtplib.SMTPResponseException as exc:
            kind = Sent.PERMANENT if exc.code >= 500 else Sent.RETRY
            return DeliveryOutcome(kind, f"SMTP answered {exc.code}")
        except (aiosmtplib.SMTPException, OSError) as exc:
            return DeliveryOutcome(Sent.RETRY, f"SMTP failed: {type(exc).__name__}")
        log.info("notification.emailed", pending_id=notification.pending_id)
        return DeliveryOutcome(Sent.SENT)


__all__ = ["SECURITY_MODES", "EmailNotifier", "SmtpSettings", "compose_message"]
