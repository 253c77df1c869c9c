"""The metrics port (issue #20): what the use cases and the driving adapters count and time.

The application ring calls these methods and never imports a metrics library; the Prometheus
adapter (:mod:`clarion.adapters.prometheus`) implements them, and :class:`NoMetrics` is the
default for embedders that want none. Every method must be cheap and must never raise (a
failing metric must not fail an answer). Labels are small fixed vocabularies — outcome,
surface, result, route template, tool name — never ids or answer text.
"""

from __future__ import annotations

import contextlib
from contextlib import AbstractContextManager
from typing import Protocol


class Metrics(Protocol):
    """Counters and timings. Implementations are thread-safe."""

    def bundle_created(self) -> None:
        """A new bundle was stored (a deduplicated ask creates none)."""
        ...

    def bundle_resolved(self, outcome: str, surface: str, seconds_to_answer: float) -> None:
        """A claim won and its delivery settled: ``outcome`` "answered" or "rejected",
        ``surface`` the winner's, ``seconds_to_answer`` from creation to the claim."""
        ...

    def claim_lost(self, surface: str) -> None:
        """A caller on ``surface`` lost the claim and was told the winner's answer (or that
        nobody can win any more)."""
        ...

    def validation_refused(self, operation: str) -> None:
        """A request was refused as invalid: ``operation`` "answer" or "ask"."""
        ...

    def resume_dispatched(self, result: str) -> None:
        """A detached answer's resume: ``result`` "accepted" or "refused"."""
        ...

    def notification_delivered(self, channel: str, result: str) -> None:
        """A notification on ``channel`` ("email", "slack", …) ended with ``result``
        ("sent", "failed", …)."""
        ...

    def http_request(self, route: str, method: str, status: int, seconds: float) -> None:
        """One HTTP request, by route template (never the raw path); ``method`` as sent (an
        implementation labels only the standard methods as themselves)."""
        ...

    def tool_call(self, tool: str, seconds: float) -> None:
        """One MCP tool call, by tool name."""
        ...

    def elicitation_response(self, mode: str, result: str) -> None:
        """The asking client's response to a question offered in it (issue #31): ``mode``
        "form" or "url", ``result`` "answered", "declined", "opened", "dismissed",
        "not_shown" or "refused"."""
        ...


class NoMetrics:
    """Counts nothing: the default when no metrics adapter is wired."""

    def bundle_created(self) -> None:
        pass

    def bundle_resolved(self, outcome: str, surface: str, seconds_to_answer: float) -> None:
        pass

    def claim_lost(self, surface: str) -> None:
        pass

    def validation_refused(self, operation: str) -> None:
        pass

    def resume_dispatched(self, result: str) -> None:
        pass

    def notification_delivered(self, channel: str, result: str) -> None:
        pass

    def http_request(self, route: str, method: str, status: int, seconds: float) -> None:
        pass

    def tool_call(self, tool: str, seconds: float) -> None:
        pass

    def elicitation_response(self, mode: str, result: str) -> None:
        pass


class Tracer(Protocol):
    """Spans around the steps of a use case (issue #20). ``attributes`` are ids and small
    vocabularies (``pending_id``, ``surface``) — never answer or question text."""

    def span(self, name: str, **attributes: str) -> AbstractContextManager[None]:
        """A span named ``name``, current for the ``with`` block (nested spans are its
        children); an exception leaving the block is recorded on it."""
        ...


class NoTracer:
    """Traces nothing: the default when no tracing adapter is wired."""

    def span(self, name: str, **attributes: str) -> AbstractContextManager[None]:
        return contextlib.nullcontext()


__all__ = ["Metrics", "NoMetrics", "NoTracer", "Tracer"]
