"""Query parameters of the paged host lists: ``cursor`` and ``limit`` (docs/rest-api.md)."""

from __future__ import annotations

import re
from typing import Final

from starlette.requests import Request

from clarion.domain.errors import InvalidArgument

_INTEGER: Final = re.compile(r"-?[0-9]{1,18}")


def page_parameters(request: Request) -> tuple[str, int | None]:
    """``cursor`` ("" when absent) and ``limit`` (None when absent; anything but a plain
    integer is a 400 naming ``limit``; its range is the use case's rule)."""
    cursor = request.query_params.get("cursor", "")
    raw = request.query_params.get("limit")
    if raw is None:
        return cursor, None
    if _INTEGER.fullmatch(raw) is None:
        raise InvalidArgument("limit: must be an integer", field="limit")
    return cursor, int(raw)
