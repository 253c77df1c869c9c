"""A small HTTP client (httpx2) for the REST API, used by ``clarion questions ...``."""

from __future__ import annotations

import json
import urllib.parse
from typing import Any

import httpx2

TIMEOUT_S = 60.0


class ClientError(Exception):
    """The server could not be reached or refused the request; the message says which.

    ``status`` is the HTTP status of a refusal, 0 when the server was not reached."""

    def __init__(self, message: str, *, status: int = 0, closed_reason: str = "") -> None:
        super().__init__(message)
        self.status = status
        self.closed_reason = closed_reason  # issue #30: a 409's Clarion-Closed-Reason


class ClarionClient:
    """Talks to a running Clarion server with an optional personal access token."""

    def __init__(self, base_url: str, *, token: str = "") -> None:
        self._base = base_url.rstrip("/")
        # A label for the record of who resolved (issue #20), never a credential: the server
        # records answers sent through this client as the CLI's (docs/observability.md).
        headers = {"Accept": "application/json", "X-Clarion-Surface": "cli"}
        if token:
            headers["Authorization"] = f"Bearer {token}"
        self._headers = headers

    def _request(
        self, method: str, path: str, body: Any = None, params: dict[str, str] | None = None
    ) -> Any:
        content = None if body is None else json.dumps(body).encode("utf-8")
        headers = dict(self._headers)
        if content is not None:
            headers["Content-Type"] = "application/json"
        try:
            with httpx2.Client(timeout=TIMEOUT_S, follow_redirects=True) as http:
                response = http.request(
                    method, self._base + path, content=content, params=params, headers=headers
                )
        except httpx2.HTTPError as exc:
            raise ClientError(f"cannot reach {self._base}: {exc}") from exc
        if not response.is_success:
            raise ClientError(
                f"{response.status_code} from {self._base}: {_error_text(response)}",
                status=response.status_code,
                closed_reason=response.headers.get("Clarion-Closed-Reason", ""),
            )
        try:
            return json.loads(response.content or b"null")
        except json.JSONDecodeError as exc:
            raise ClientError(f"{self._base} did not answer with JSON") from exc

    def pending(self, *, workspace_id: str = "") -> list[dict[str, Any]]:
        """Every pending bundle the caller may see, following ``next_cursor`` to the end."""
        bundles: list[dict[str, Any]] = []
        cursor = ""
        while True:
            query = {"limit": "200"}
            if workspace_id:
                query["workspace_id"] = workspace_id
            if cursor:
                query["cursor"] = cursor
            page = self._request("GET", "/api/v1/clarification/pending", params=query)
            bundles.extend(page["bundles"])
            cursor = page["next_cursor"]
            if not cursor:
                return bundles

    def find_pending(self, pending_id: str) -> dict[str, Any] | None:
        """The pending bundle with this id, or None when it is not pending (or not visible)."""
        return next((b for b in self.pending() if b["pending_id"] == pending_id), None)

    def resolved(self, *, at_most: int, closed: bool = True) -> list[dict[str, Any]]:
        """Up to ``at_most`` resolved bundles the caller may see — with ``closed``, the ones
        closed without an answer too (issue #30) — newest first, following ``next_cursor`` as
        far as needed."""
        bundles: list[dict[str, Any]] = []
        cursor = ""
        while len(bundles) < at_most:
            query = {"limit": str(min(200, at_most - len(bundles)))}
            if closed:
                query["include"] = "closed"
            if cursor:
                query["cursor"] = cursor
            page = self._request("GET", "/api/v1/clarification/resolved", params=query)
            bundles.extend(page["bundles"])
            cursor = page["next_cursor"]
            if not cursor:
                break
        return bundles[:at_most]

    def respond(self, pending_id: str, body: dict[str, Any]) -> dict[str, Any]:
        quoted = urllib.parse.quote(pending_id, safe="")
        result: dict[str, Any] = self._request(
            "POST", f"/api/v1/clarification/{quoted}/respond", body
        )
        return result

    # -- approvals (issue #33) -----------------------------------------------------------------

    def approvals(self, *, decided: bool) -> list[dict[str, Any]]:
        """Every pending (or decided) approval request the caller may see, following
        ``next_cursor`` to the end."""
        views: list[dict[str, Any]] = []
        cursor = ""
        while True:
            query = {"limit": "200", "status": "decided" if decided else "pending"}
            if cursor:
                query["cursor"] = cursor
            page = self._request("GET", "/api/v1/approvals", params=query)
            views.extend(page["approvals"])
            cursor = page["next_cursor"]
            if not cursor:
                return views

    def approval(self, pending_id: str) -> dict[str, Any]:
        result: dict[str, Any] = self._request("GET", f"/api/v1/approvals/{_quoted(pending_id)}")
        return result

    def decide(self, pending_id: str, body: dict[str, Any]) -> dict[str, Any]:
        result: dict[str, Any] = self._request(
            "POST", f"/api/v1/approvals/{_quoted(pending_id)}/decision", body
        )
        return result

    def standing(self, *, include_inactive: bool) -> list[dict[str, Any]]:
        query = {"include": "inactive"} if include_inactive else None
        page = self._request("GET", "/api/v1/standing-approvals", params=query)
        found: list[dict[str, Any]] = page["standing_approvals"]
        return found

    def revoke(self, standing_id: str) -> dict[str, Any]:
        result: dict[str, Any] = self._request(
            "POST", f"/api/v1/standing-approvals/{_quoted(standing_id)}/revoke", {}
        )
        return result


def _quoted(segment: str) -> str:
    return urllib.parse.quote(segment, safe="")


def _error_text(response: httpx2.Response) -> str:
    try:
        body = json.loads(response.content or b"null")
    except json.JSONDecodeError:
        return response.reason_phrase
    if isinstance(body, dict) and isinstance(body.get("error"), str):
        return str(body["error"])
    return response.reason_phrase
