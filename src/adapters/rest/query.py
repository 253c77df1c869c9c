"""Query parameters: each is given at most once (a repeated one is a 400 naming it), and
``limit`` is a plain integer (docs/rest-api.md)."""

from __future__ import annotations

import re
from typing import Final

from starlette.requests import Request

from clarion.domain.errors import InvalidArgument

_INTEGER: Final = re.compile(r"-?[0-9]{1,18}")


def _one(request: Request, name: str) -> str | None:
    values = request.query_params.getlist(name)
    if len(values) > 1:
        raise InvalidArgument(f"{name}: given more than once", field=name)
    return values[0] if values else None


def query_value(request: Request, name: str, default: str = "") -> str:
    """The parameter's one value (``default`` when absent)."""
    found = _one(request, name)
    return default if found is None else found


def query_limit(request: Request) -> int | None:
    """``limit``: None when absent; anything but a plain integer is a 400 naming it (its
    range is the use case's rule: the pending lists clamp, L10; the host lists refuse)."""
    raw = _one(request, "limit")
    if raw is None:
        return None
    if _INTEGER.fullmatch(raw) is None:
        raise InvalidArgument("limit: must be an integer", field="limit")
    return int(raw)


def include_closed(request: Request) -> bool:
    """The resolved list's ``include``: absent, or ``closed`` for the bundles closed without
    an answer too (issue #30); anything else is a 400 naming it.

    Raises:
        InvalidArgument: ``include`` is neither absent nor ``closed``.
    """
    raw = _one(request, "include")
    if raw is None:
        return False
    if raw != "closed":
        raise InvalidArgument("include: must be closed", field="include")
    return True


def page_parameters(request: Request) -> tuple[str, int | None]:
    """``cursor`` ("" when absent) and ``limit`` of a paged list."""
    return query_value(request, "cursor"), query_limit(request)
