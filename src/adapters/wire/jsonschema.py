"""JSON Schemas derived from the wire models: the OpenAPI components and the MCP tool schemas.

A field's type gives its schema (``str`` a string, ``datetime`` a ``date-time`` string, ``int``
an integer, ``bool`` a boolean, ``list[X]`` an array of X,
``dict[str, Any]`` any object, ``X | None`` a nullable X, a
``Literal`` an ``enum`` (``const`` for one value), a model a nested object); its
``metadata["schema"]`` adds keywords or replaces the whole (see :mod:`.models`), per dialect.
Every object is closed unless its dialect leaves the class open; a field without a default is
required, and so is one whose metadata says ``required``.

Two dialects: ``OPENAPI`` names nested models by ``$ref`` to ``#/components/schemas/<Class>``;
``MCP`` writes them inline, because a tool's schema stands alone.
"""

from __future__ import annotations

import types
import typing
from datetime import datetime
from typing import Any, Final

import attrs

Schema = dict[str, Any]


@attrs.frozen
class Dialect:
    name: str
    inline: bool
    open_classes: frozenset[type[Any]] = frozenset()


OPENAPI: Final = Dialect("openapi", inline=False)


def mcp_dialect(open_classes: frozenset[type[Any]]) -> Dialect:
    """The MCP dialect; objects of ``open_classes`` admit properties they do not name."""
    return Dialect("mcp", inline=True, open_classes=open_classes)


def ref(name: str) -> Schema:
    return {"$ref": f"#/components/schemas/{name}"}


_SIMPLE: Final[dict[Any, Schema]] = {
    str: {"type": "string"},
    bool: {"type": "boolean"},
    int: {"type": "integer"},
    float: {"type": "number"},
    datetime: {"type": "string", "format": "date-time"},
}


def _of_type(kind: Any, dialect: Dialect) -> Schema:
    origin = typing.get_origin(kind)
    arguments = typing.get_args(kind)
    if origin is typing.Literal:
        return {"const": arguments[0]} if len(arguments) == 1 else {"enum": list(arguments)}
    if origin is dict:
        return {"type": "object"}
    if origin is list:
        return {"type": "array", "items": _of_type(arguments[0], dialect)}
    if origin in (types.UnionType, typing.Union):
        present = [argument for argument in arguments if argument is not type(None)]
        if len(present) != 1 or len(arguments) != 2:
            raise TypeError(f"no JSON Schema for the union {kind!r}")
        inner = _of_type(present[0], dialect)
        return {**inner, "type": [inner["type"], "null"]}
    if attrs.has(kind):
        return object_schema(kind, dialect) if dialect.inline else ref(kind.__name__)
    if kind in _SIMPLE:
        return dict(_SIMPLE[kind])
    raise TypeError(f"no JSON Schema for {kind!r}")


def _of_field(field: attrs.Attribute[Any], kind: Any, dialect: Dialect) -> Schema:
    overrides: dict[str, Schema] = field.metadata.get("schema", {})
    extra = overrides.get(dialect.name, overrides.get("*", {}))
    if "replace" in extra:
        return dict(extra["replace"])
    return {**_of_type(kind, dialect), **extra}


def object_schema(kind: type[Any], dialect: Dialect) -> Schema:
    """The JSON Schema of the wire model ``kind`` in ``dialect``."""
    hints = typing.get_type_hints(kind)
    fields = attrs.fields(kind)
    schema: Schema = {
        "type": "object",
        "properties": {
            field.name: _of_field(field, hints[field.name], dialect) for field in fields
        },
        "required": [
            field.name
            for field in fields
            if field.default is attrs.NOTHING or field.metadata.get("required", False)
        ],
    }
    if kind not in dialect.open_classes:
        schema["additionalProperties"] = False
    return schema


def components(kinds: typing.Iterable[type[Any]]) -> dict[str, Schema]:
    """OpenAPI component schemas, one per model, named by class."""
    return {kind.__name__: object_schema(kind, OPENAPI) for kind in kinds}
