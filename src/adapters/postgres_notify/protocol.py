"""The messages Clarion processes exchange over PostgreSQL ``NOTIFY``, and their text form.

Every message travels as one compact, ASCII-only JSON object ``{"t": type, "i": sender
instance, "q": sequence, ...}``. The sequence number keeps two equal messages sent in one
transaction from being merged by PostgreSQL (which delivers identical payloads on one channel
once per transaction). A message longer than a notification may carry (8000 bytes) is split
into parts sent in one transaction, which listeners receive contiguously and in order, and
reassembled by :class:`Reassembler`.

Unknown message types decode to None and are ignored, so processes of different versions can
share a database during a rolling upgrade.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from datetime import datetime
from typing import Any, Final

import attrs

from clarion.domain.model import Answer, Resolution, resolution_status
from clarion.ports.events import Event

MAX_PAYLOAD: Final = 7900  # PostgreSQL refuses payloads of 8000 bytes or more
CHUNK: Final = 7800  # room for the ``part`` header in front of each chunk
PART_MARK: Final = "~"  # a part's payload starts with this; a whole message with "{"


@attrs.frozen
class Register:
    """The sender holds a waiter entry for ``pending_id``."""

    pending_id: str
    session_id: str


@attrs.frozen
class Unregister:
    """The sender no longer holds an entry for ``pending_id``."""

    pending_id: str


@attrs.frozen
class Snapshot:
    """Every entry the sender holds, replacing what others remembered of it."""

    entries: tuple[tuple[str, str], ...]  # (pending_id, session_id)


@attrs.frozen
class Hello:
    """The sender (re)started listening: peers answer with their :class:`Snapshot` and repeat
    the offers they are still waiting to hear about."""


@attrs.frozen
class Bye:
    """The sender is shutting down."""


@attrs.frozen
class Ping:
    """Sent by a process to itself: once it comes back, every notification committed before it
    has been received (listeners receive notifications in commit order)."""

    token: str


@attrs.frozen
class Offer:
    """A claimed answer looking for a live waiter; ``nonce`` names this delivery attempt."""

    nonce: str
    pending_id: str
    resolution: Resolution
    timeout: float


@attrs.frozen
class Reply:
    """A peer's answer to an :class:`Offer`: ``taken`` when one of its waiters consumed the
    delivery (the offerer must now confirm it), else it has nobody waiting."""

    nonce: str
    taken: bool


@attrs.frozen
class Settled:
    """The offerer's durable confirmation finished: ``ok``, or failed with ``error``."""

    nonce: str
    ok: bool
    error: str = ""


@attrs.frozen
class Cancel:
    """Release the waits on ``pending_id`` (operator cancel)."""

    pending_id: str


@attrs.frozen
class CancelSession:
    """Release the waits of ``session_id`` (turn completed, newer turn, terminal session)."""

    session_id: str


@attrs.frozen
class Published:
    """An event published on the sender, for every other process's event stream."""

    event: Event


Message = (
    Register
    | Unregister
    | Snapshot
    | Hello
    | Bye
    | Ping
    | Offer
    | Reply
    | Settled
    | Cancel
    | CancelSession
    | Published
)


@attrs.frozen
class Envelope:
    """A decoded message and the instance that sent it."""

    sender: str
    message: Message


def resolution_to_json(resolution: Resolution) -> dict[str, Any]:
    return {
        "pending_id": resolution.pending_id,
        "status": resolution.status,
        "answers": [
            {
                "question_id": answer.question_id,
                "selected_options": list(answer.selected_options),
                "custom_text": answer.custom_text,
            }
            for answer in resolution.answers
        ],
        "rejected": resolution.rejected,
        "reject_reason": resolution.reject_reason,
        "responded_at": resolution.responded_at.isoformat(),
        "claimed": resolution.claimed,
    }


def resolution_from_json(raw: Mapping[str, Any]) -> Resolution:
    """The resolution an offer carries.

    Raises:
        ValueError: its status is not a terminal outcome (answered or rejected).
    """
    status = resolution_status(raw["status"])
    if status is None:
        raise ValueError(
            f"an offered resolution's status must be answered or rejected: {raw['status']!r}"
        )
    return Resolution(
        pending_id=str(raw["pending_id"]),
        status=status,
        answers=tuple(
            Answer(
                question_id=str(answer["question_id"]),
                selected_options=tuple(str(option) for option in answer["selected_options"]),
                custom_text=str(answer["custom_text"]),
            )
            for answer in raw["answers"]
        ),
        rejected=bool(raw["rejected"]),
        reject_reason=str(raw["reject_reason"]),
        responded_at=datetime.fromisoformat(str(raw["responded_at"])),
        claimed=bool(raw["claimed"]),
    )


def _body(message: Message) -> dict[str, Any]:
    match message:
        case Register(pending_id, session_id):
            return {"t": "reg", "p": pending_id, "s": session_id}
        case Unregister(pending_id):
            return {"t": "unreg", "p": pending_id}
        case Snapshot(entries):
            return {"t": "snap", "e": [list(entry) for entry in entries]}
        case Hello():
            return {"t": "hello"}
        case Bye():
            return {"t": "bye"}
        case Ping(token):
            return {"t": "ping", "k": token}
        case Offer(nonce, pending_id, resolution, timeout):
            return {
                "t": "offer",
                "n": nonce,
                "p": pending_id,
                "r": resolution_to_json(resolution),
                "w": timeout,
            }
        case Reply(nonce, taken):
            return {"t": "reply", "n": nonce, "k": taken}
        case Settled(nonce, ok, error):
            return {"t": "settled", "n": nonce, "ok": ok, "e": error}
        case Cancel(pending_id):
            return {"t": "cancel", "p": pending_id}
        case CancelSession(session_id):
            return {"t": "cancel_session", "s": session_id}
        case Published(event):
            return {
                "t": "event",
                "k": event.kind,
                "task": event.task_id,
                "s": event.session_id,
                "p": event.pending_id,
                "d": dict(event.data),
            }


def _message(body: Mapping[str, Any]) -> Message | None:
    match body.get("t"):
        case "reg":
            return Register(str(body["p"]), str(body["s"]))
        case "unreg":
            return Unregister(str(body["p"]))
        case "snap":
            return Snapshot(tuple((str(p), str(s)) for p, s in body["e"]))
        case "hello":
            return Hello()
        case "bye":
            return Bye()
        case "ping":
            return Ping(str(body["k"]))
        case "offer":
            return Offer(
                nonce=str(body["n"]),
                pending_id=str(body["p"]),
                resolution=resolution_from_json(body["r"]),
                timeout=float(body["w"]),
            )
        case "reply":
            return Reply(str(body["n"]), bool(body["k"]))
        case "settled":
            return Settled(str(body["n"]), bool(body["ok"]), str(body["e"]))
        case "cancel":
            return Cancel(str(body["p"]))
        case "cancel_session":
            return CancelSession(str(body["s"]))
        case "event":
            data = body["d"]
            return Published(
                Event(
                    kind=str(body["k"]),
                    task_id=str(body["task"]),
                    session_id=str(body["s"]),
                    pending_id=str(body["p"]),
                    data=data if isinstance(data, dict) else {},
                )
            )
        case _:
            return None


def _dumps(body: Mapping[str, Any]) -> str:
    # ASCII only, so a byte limit is a character limit and chunks never split a character.
    return json.dumps(body, ensure_ascii=True, separators=(",", ":"), default=str)


class Encoder:
    """Turns messages of one instance into notification payloads."""

    def __init__(self, instance: str) -> None:
        self._instance = instance
        self._sequence = 0

    def _next(self) -> int:
        self._sequence += 1
        return self._sequence

    def encode(self, message: Message) -> list[str]:
        """The payloads carrying ``message``: one, or several ``part`` payloads to be sent in
        one transaction, in order."""
        body = {**_body(message), "i": self._instance, "q": self._next()}
        text = _dumps(body)
        if len(text) <= MAX_PAYLOAD:
            return [text]
        chunks = [text[start : start + CHUNK] for start in range(0, len(text), CHUNK)]
        # Parts carry the JSON text as is (no second escaping): ``~sender:message:index:count:``
        return [
            f"{PART_MARK}{self._instance}:{body['q']}:{index}:{len(chunks)}:{chunk}"
            for index, chunk in enumerate(chunks)
        ]


class Reassembler:
    """Decodes payloads, joining the parts of a split message."""

    def __init__(self) -> None:
        self._parts: dict[tuple[str, int], list[str]] = {}

    def reset(self) -> None:
        """Forget partial messages (the connection they arrived on is gone)."""
        self._parts.clear()

    def feed(self, payload: str) -> Iterator[Envelope]:
        """The message ``payload`` completes, if any.

        Raises:
            ValueError: the payload is not a message of this protocol.
        """
        if payload.startswith(PART_MARK):
            sender, whole, index, count, chunk = payload[1:].split(":", 4)
            key = (sender, int(whole))
            parts = self._parts.setdefault(key, [])
            if int(index) != len(parts):
                del self._parts[key]  # a part went missing: drop the whole message
                return
            parts.append(chunk)
            if len(parts) < int(count):
                return
            del self._parts[key]
            payload = "".join(parts)
        body = json.loads(payload)
        if not isinstance(body, dict):
            raise ValueError("a notification payload must be a JSON object")
        sender = str(body["i"])
        message = _message(body)
        if message is not None:
            yield Envelope(sender=sender, message=message)
