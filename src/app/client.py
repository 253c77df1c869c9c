"""A small HTTP client for the REST API, used by ``clarion questions ...``."""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

TIMEOUT_S = 60.0


class ClientError(Exception):
    """The server could not be reached or refused the request; the message says which.

    ``status`` is the HTTP status of a refusal, 0 when the server was not reached."""

    def __init__(self, message: str, *, status: int = 0) -> None:
        super().__init__(message)
        self.status = status


class ClarionClient:
    """Talks to a running Clarion server with an optional personal access token."""

    def __init__(self, base_url: str, *, token: str = "") -> None:
        self._base = base_url.rstrip("/")
        self._token = token

    def _request(self, method: str, path: str, body: Any = None) -> Any:
        data = None if body is None else json.dumps(body).encode("utf-8")
        request = urllib.request.Request(self._base + path, data=data, method=method)
        request.add_header("Accept", "application/json")
        if data is not None:
            request.add_header("Content-Type", "application/json")
        if self._token:
            request.add_header("Authorization", f"Bearer {self._token}")
        try:
            with urllib.request.urlopen(request, timeout=TIMEOUT_S) as response:
                return json.loads(response.read() or b"null")
        except urllib.error.HTTPError as exc:
            raise ClientError(
                f"{exc.code} from {self._base}: {_error_text(exc)}", status=exc.code
            ) from exc
        except urllib.error.URLError as exc:
            raise ClientError(f"cannot reach {self._base}: {exc.reason}") from exc
        except (TimeoutError, ConnectionError) as exc:
            raise ClientError(f"cannot reach {self._base}: {exc}") from exc
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
            page = self._request(
                "GET", "/api/v1/clarification/pending?" + urllib.parse.urlencode(query)
            )
            bundles.extend(page["bundles"])
            cursor = page["next_cursor"]
            if not cursor:
                return bundles

    def find_pending(self, pending_id: str) -> dict[str, Any] | None:
        """The pending bundle with this id, or None when it is not pending (or not visible)."""
        return next((b for b in self.pending() if b["pending_id"] == pending_id), None)

    def respond(self, pending_id: str, body: dict[str, Any]) -> dict[str, Any]:
        quoted = urllib.parse.quote(pending_id, safe="")
        result: dict[str, Any] = self._request(
            "POST", f"/api/v1/clarification/{quoted}/respond", body
        )
        return result


def _error_text(exc: urllib.error.HTTPError) -> str:
    try:
        body = json.loads(exc.read() or b"null")
    except json.JSONDecodeError:
        return exc.reason
    if isinstance(body, dict) and isinstance(body.get("error"), str):
        return str(body["error"])
    return str(exc.reason)
