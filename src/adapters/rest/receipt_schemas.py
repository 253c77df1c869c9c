"""The JSON schemas of the receipt routes (issue #34), for the route table's OpenAPI document
(kept apart from :mod:`clarion.adapters.rest.receipts`, whose endpoints the table must not
import)."""

from __future__ import annotations

from typing import Any, Final

from clarion.domain.receipts import ALGORITHM

RECEIPT_KEYS_PATH: Final = "/.well-known/clarion-receipt-keys"
WAIT_LINK: Final = '<receipt>; rel="receipt"'

_TEXT: Final = {"type": "string"}
_RESOLVED_BY: Final = {
    "type": "object",
    "additionalProperties": False,
    "required": ["identity_id", "kind", "display_name", "surface"],
    "properties": {key: _TEXT for key in ("identity_id", "kind", "display_name", "surface")},
}
_ANSWER: Final = {
    "type": "object",
    "additionalProperties": False,
    "required": ["question_id", "selected_options", "custom_text"],
    "properties": {
        "question_id": _TEXT,
        "selected_options": {"type": "array", "items": _TEXT},
        "custom_text": _TEXT,
    },
}
RECEIPT_SCHEMA: Final[dict[str, Any]] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["alg", "kid", "payload", "signature"],
    "properties": {
        "alg": {"const": ALGORITHM},
        "kid": _TEXT,
        "signature": {**_TEXT, "description": "base64url Ed25519 signature"},
        "payload": {
            "type": "object",
            "additionalProperties": False,
            "required": [
                "version",
                "type",
                "request_id",
                "kind",
                "asked_digest",
                "outcome",
                "resolved_by",
                "resolved_at",
            ],
            "properties": {
                "version": {"type": "integer"},
                "type": _TEXT,
                "request_id": _TEXT,
                "kind": {"enum": ["questions", "approval"]},
                "asked_digest": _TEXT,
                "outcome": {
                    "type": "object",
                    "additionalProperties": False,
                    "required": ["status"],
                    "properties": {
                        "status": {"enum": ["answered", "rejected"]},
                        "answers": {"type": "array", "items": _ANSWER},
                    },
                },
                "resolved_by": _RESOLVED_BY,
                "resolved_at": _TEXT,
            },
        },
    },
}
KEYS_SCHEMA: Final[dict[str, Any]] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["keys"],
    "properties": {
        "keys": {
            "type": "array",
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": ["kid", "alg", "public_key"],
                "properties": {
                    "kid": _TEXT,
                    "alg": {"const": ALGORITHM},
                    "public_key": {**_TEXT, "description": "base64url raw 32-byte key"},
                },
            },
        }
    },
}


__all__ = ["KEYS_SCHEMA", "RECEIPT_KEYS_PATH", "RECEIPT_SCHEMA", "WAIT_LINK"]
