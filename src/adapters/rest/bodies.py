"""Reading JSON request bodies: a size cap (413) and strict parsing (400 naming the problem)."""

from __future__ import annotations

import json
from typing import Any, Final, TypeVar

from starlette.requests import Request

from clarion.adapters import wire
from clarion.adapters.rest.body_limit import MAX_BODY_SCOPE_KEY, too_large_message
from clarion.domain.errors import PayloadTooLarge, ValidationError

MAX_BODY_BYTES: Final = 1024 * 1024
T = TypeVar("T")


def _refuse_constant(name: str) -> Any:
    # NaN and Infinity are not JSON; Python's parser accepts them unless told otherwise.
    raise ValueError(f"{name} is not valid JSON")


async def read_body(request: Request, *, limit: int | None = None) -> bytes:
    """The raw body, refusing anything over ``limit`` bytes before it is all read (default:
    the application's ``CLARION_MAX_BODY_BYTES``, left in the scope by
    :class:`~clarion.adapters.rest.body_limit.BodyLimitMiddleware`, else 1 MiB).

    Raises:
        PayloadTooLarge: the declared or actual length exceeds ``limit``.
    """
    if limit is None:
        found = request.scope.get(MAX_BODY_SCOPE_KEY)
        limit = found if isinstance(found, int) else MAX_BODY_BYTES
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise PayloadTooLarge(too_large_message(limit))
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise PayloadTooLarge(too_large_message(limit))
        chunks.append(chunk)
    return b"".join(chunks)


def parse_json(raw: bytes) -> Any:
    """Parse a body as strict JSON (UTF-8, no NaN/Infinity, no key twice in one object, no NUL
    or lone surrogates).

    Raises:
        ValidationError: empty, not UTF-8, not JSON, an object with a duplicate key, or text
            no store can keep; ``field`` is ``body``.
    """
    if not raw.strip():
        raise ValidationError("invalid payload: request body is empty", field="body")
    try:
        payload = json.loads(
            raw.decode("utf-8"),
            parse_constant=_refuse_constant,
            object_pairs_hook=wire.refuse_duplicate_keys,
        )
    except wire.DuplicateKey as exc:
        raise ValidationError(f"invalid payload: {exc}", field="body") from exc
    except UnicodeDecodeError as exc:
        raise ValidationError("invalid payload: body is not UTF-8", field="body") from exc
    except json.JSONDecodeError as exc:
        raise ValidationError(f"invalid payload: malformed JSON: {exc}", field="body") from exc
    except (ValueError, RecursionError) as exc:
        raise ValidationError("invalid payload: malformed JSON", field="body") from exc
    wire.require_storable(payload, what="payload", field="body")
    return payload


async def read_json(request: Request) -> Any:
    """The body parsed as JSON (see :func:`read_body` and :func:`parse_json`)."""
    return parse_json(await read_body(request))


async def read_model(request: Request, kind: type[T], *, optional: bool = False) -> T:
    """The body structured strictly into ``kind``: unknown fields and wrong types are 400s
    naming the field. With ``optional`` an empty body stands for ``{}``."""
    raw = await read_body(request)
    payload = {} if optional and not raw.strip() else parse_json(raw)
    return wire.structure(payload, kind)
