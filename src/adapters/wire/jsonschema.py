"""JSON Schemas derived from the wire models: the OpenAPI components and the MCP tool schemas.

A field's type gives its schema (``str`` a string, ``datetime`` a ``date-time`` string, ``int``
an integer, ``bool`` a boolean, ``list[X]`` an array of X,
``dict[str, Any]`` any object, ``X | None`` a nullable X (of a model or a ``Literal``: ``oneOf``
it and null, or its ``enum`` with null), ``A | B`` of models ``oneOf`` them, a
``Literal`` an ``enum`` (``const`` for one value), a model a nested object); its
``metadata["schema"]`` adds keywords or replaces the whole (see :mod:`.models`): the keywords
for every dialect (``"*"``) first, then the dialect's own over them. Keys come in one order
whatever the metadata's: ``type``, ``description``, the other keywords, ``items`` last.
Every object is closed unless its dialect leaves the class open (or gives its other properties
a model's schema); a field without a default is required, and so is one whose metadata says
``required`` (for every dialect, or for the dialects it names). A field whose metadata names a
dialect under ``hidden`` is left out of that dialect's schema.

Two dialects: ``OPENAPI`` names nested models by ``$ref`` to ``#/components/schemas/<Class>``;
``MCP`` writes them inline, because a tool's schema stands alone, leaves out an empty
``required``, and fills ``$name`` placeholders in descriptions from its ``words`` (the tool
names, whose suffix is configured).
"""

from __future__ import annotations

import types
import typing
from collections.abc import Mapping
from datetime import datetime
from string import Template
from typing import Any, Final

import attrs

Schema = dict[str, Any]


@attrs.frozen
class Dialect:
    name: str
    inline: bool
    open_classes: frozenset[type[Any]] = frozenset()
    other_properties: Mapping[type[Any], type[Any]] = attrs.field(factory=dict)
    words: Mapping[str, str] = attrs.field(factory=dict)
    empty_required: bool = True


OPENAPI: Final = Dialect("openapi", inline=False)


def mcp_dialect(
    open_classes: frozenset[type[Any]],
    other_properties: Mapping[type[Any], type[Any]] | None = None,
    words: Mapping[str, str] | None = None,
) -> Dialect:
    """The MCP dialect; objects of ``open_classes`` admit properties they do not name, those
    of ``other_properties`` admit any other property holding the mapped model, and ``words``
    fill the descriptions' ``$name`` placeholders."""
    return Dialect(
        "mcp",
        inline=True,
        open_classes=open_classes,
        other_properties=dict(other_properties or {}),
        words=dict(words or {}),
        empty_required=False,
    )


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
        if len(present) == len(arguments) > 1 and all(attrs.has(a) for a in present):
            return {"oneOf": [_of_type(argument, dialect) for argument in present]}
        if len(present) != 1 or len(arguments) != 2:
            raise TypeError(f"no JSON Schema for the union {kind!r}")
        inner = _of_type(present[0], dialect)
        if "type" in inner:
            return {**inner, "type": [inner["type"], "null"]}
        if "enum" in inner or "const" in inner:  # an optional Literal
            return {"enum": [*inner.get("enum", [inner.get("const")]), None]}
        return {"oneOf": [inner, {"type": "null"}]}  # an optional model
    if attrs.has(kind):
        return object_schema(kind, dialect) if dialect.inline else ref(kind.__name__)
    if kind in _SIMPLE:
        return dict(_SIMPLE[kind])
    raise TypeError(f"no JSON Schema for {kind!r}")


_FIRST: Final = ("type", "description")


def _of_field(field: attrs.Attribute[Any], kind: Any, dialect: Dialect) -> Schema:
    overrides: dict[str, Schema] = field.metadata.get("schema", {})
    extra = {**overrides.get("*", {}), **overrides.get(dialect.name, {})}
    if "replace" in extra:
        return dict(extra["replace"])
    merged = {**_of_type(kind, dialect), **extra}
    if "description" in merged and dialect.words:
        merged["description"] = Template(merged["description"]).safe_substitute(dialect.words)
    items = merged.pop("items", None)
    schema: Schema = {key: merged.pop(key) for key in _FIRST if key in merged}
    schema.update(merged)
    if items is not None:
        schema["items"] = items
    return schema


def _required(field: attrs.Attribute[Any], dialect: Dialect) -> bool:
    if field.default is attrs.NOTHING:
        return True
    flag = field.metadata.get("required", False)
    return flag is True or (not isinstance(flag, bool) and dialect.name in flag)


def object_schema(kind: type[Any], dialect: Dialect) -> Schema:
    """The JSON Schema of the wire model ``kind`` in ``dialect``."""
    hints = typing.get_type_hints(kind)
    fields = [
        field
        for field in attrs.fields(kind)
        if dialect.name not in field.metadata.get("hidden", ())
    ]
    schema: Schema = {
        "type": "object",
        "properties": {
            field.name: _of_field(field, hints[field.name], dialect) for field in fields
        },
    }
    required = [field.name for field in fields if _required(field, dialect)]
    if required or dialect.empty_required:
        schema["required"] = required
    if kind in dialect.other_properties:
        schema["additionalProperties"] = _of_type(dialect.other_properties[kind], dialect)
    elif kind not in dialect.open_classes:
        schema["additionalProperties"] = False
    return schema


def components(kinds: typing.Iterable[type[Any]]) -> dict[str, Schema]:
    """OpenAPI component schemas, one per model, named by class."""
    return {kind.__name__: object_schema(kind, OPENAPI) for kind in kinds}
