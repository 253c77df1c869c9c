"""The component schemas of the OpenAPI document: exactly the JSON the routes send and accept,
generated from the wire models (:mod:`clarion.adapters.wire.models`).

Closed objects throughout; R12's always-present keys on the respond envelope, L4a's on the
listing, T2's ``null`` pending actions, and the omitempty shapes upstream keeps for
``GET /:id`` (``context``) and ``GET /:id/wait`` (facts §5.10, unchanged per A4).
"""

from __future__ import annotations

from typing import Any, Final

from clarion.adapters.wire import models
from clarion.adapters.wire.jsonschema import components, ref

Schema = dict[str, Any]


__all__ = ["SCHEMAS", "STRING", "Schema", "ref"]

STRING: Final[Schema] = {"type": "string"}
# The MCP tools' result shapes; no REST route sends them.
_MCP_ONLY: Final = frozenset({models.Resolution, models.AskedAnswer})

SCHEMAS: Final[dict[str, Schema]] = components(
    kind for kind in (*models.SHAPES, *models.REQUESTS) if kind not in _MCP_ONLY
)
