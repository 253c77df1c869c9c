"""The JSON wire format's one cattrs converter, built here and used nowhere else.

Structuring is strict (wrong types and unknown fields fail; a JSON ``true`` is no number and a
string no array). Unstructuring writes every field (R12, L4a) except on the omitempty shapes
(:data:`clarion.adapters.wire.models.OMIT_EMPTY`), and timestamps as RFC 3339 UTC with ``Z``.
A structuring failure becomes a ``ValidationError`` whose ``field`` is the JSON path of the
offending value, read from the structured notes cattrs attaches to each exception.
"""

from __future__ import annotations

import typing
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, TypeVar

import attrs
import cattrs
from cattrs.cols import list_structure_factory
from cattrs.errors import IterableValidationNote
from cattrs.gen import make_dict_unstructure_fn
from cattrs.preconf.json import make_converter

from clarion.adapters.wire import models
from clarion.adapters.wire.models import OMIT_EMPTY
from clarion.domain.errors import ValidationError
from clarion.domain.timestamps import parse_rfc3339

T = TypeVar("T")


def format_timestamp(moment: datetime) -> str:
    """RFC 3339 in UTC with ``Z``; fractional seconds only when non-zero, trailing zeros trimmed."""
    utc = moment.astimezone(UTC)
    # strftime's %Y does not pad years before 1000; RFC 3339 wants four digits.
    text = f"{utc.year:04d}-" + utc.strftime("%m-%dT%H:%M:%S")
    if utc.microsecond:
        text += f".{utc.microsecond:06d}".rstrip("0")
    return text + "Z"


def _strict(kind: type[Any], name: str) -> Any:
    def structure(value: Any, _: Any) -> Any:
        # bool is an int subclass; JSON true must not pass as a number or vice versa.
        if type(value) is not kind:
            raise TypeError(f"expected {name}")
        return value

    return structure


def _structure_timestamp(value: Any, _: Any) -> datetime:
    if type(value) is not str:
        raise TypeError("expected a string")
    return parse_rfc3339(value)  # strictly RFC 3339 (#29 F20), not fromisoformat's ISO 8601


def _is_list(kind: Any) -> bool:
    return typing.get_origin(kind) is list


def _make_converter() -> cattrs.Converter:
    converter = make_converter(forbid_extra_keys=True)
    converter.register_structure_hook(str, _strict(str, "a string"))
    converter.register_structure_hook(bool, _strict(bool, "a boolean"))
    converter.register_structure_hook(int, _strict(int, "an integer"))
    converter.register_structure_hook(datetime, _structure_timestamp)
    converter.register_structure_hook(type(None), _strict(type(None), "null"))
    converter.register_unstructure_hook(datetime, format_timestamp)

    def history_entry(value: Any, _: Any) -> Any:
        # Issue #30: the resolved list's entries tell their kind by ``status``.
        closed = isinstance(value, dict) and value.get("status") == "closed"
        kind = models.ClosedBundle if closed else models.ResolvedBundle
        return converter.structure(value, kind)

    converter.register_structure_hook(models.ResolvedBundle | models.ClosedBundle, history_entry)

    def list_hook(kind: Any) -> Any:
        base = list_structure_factory(kind, converter)

        def structure_list(value: Any, target: Any) -> list[Any]:
            # A JSON string is iterable; it must not pass for an array.
            if not isinstance(value, list):
                raise TypeError("expected an array")
            return base(value, target)  # type: ignore[no-any-return]

        return structure_list

    converter.register_structure_hook_factory(_is_list, list_hook)
    converter.register_unstructure_hook_factory(
        attrs.has, lambda kind: _unstructure_fn(kind, converter)
    )
    return converter


def _unstructure_fn(kind: type[Any], converter: cattrs.Converter) -> Any:
    """Every field written (the omitempty shapes aside), except that a field whose metadata
    says ``omit_none`` is left out while None (issue #33's additive ``approval`` object)."""
    write = make_dict_unstructure_fn(kind, converter, _cattrs_omit_if_default=kind in OMIT_EMPTY)
    optional = [field.name for field in attrs.fields(kind) if field.metadata.get("omit_none")]
    if not optional:
        return write

    def unstructure_without_none(value: Any) -> dict[str, Any]:
        written: dict[str, Any] = write(value)
        for name in optional:
            if written.get(name, 0) is None:
                del written[name]
        return written

    return unstructure_without_none


_CONVERTER = _make_converter()


def unstructure(shape: Any) -> dict[str, Any]:
    """A wire model → its JSON object (plain dicts, lists, strings, numbers)."""
    return _CONVERTER.unstructure(shape)  # type: ignore[no-any-return]


# --- structuring failures ---------------------------------------------------------------------

Path = tuple[str | int, ...]


def _failures(exc: BaseException, path: Path = ()) -> list[tuple[Path, BaseException, Any]]:
    """Every leaf failure under ``exc`` with its path, in cattrs' own order: an array's note
    carries the entry's ``index``, an object's the attribute's ``name``."""
    if not isinstance(exc, cattrs.IterableValidationError | cattrs.ClassValidationError):
        return [(path, exc, None)]
    noted, without = exc.group_exceptions()
    found: list[tuple[Path, BaseException, Any]] = []
    for inner, note in noted:
        step = note.index if isinstance(note, IterableValidationNote) else note.name
        found += _leaf(inner, (*path, step), note.type)
    return found + [(path, inner, None) for inner in without]


def _leaf(exc: BaseException, path: Path, kind: Any) -> list[tuple[Path, BaseException, Any]]:
    if isinstance(exc, cattrs.BaseValidationError):
        return _failures(exc, path)
    return [(path, exc, kind)]


def _describe(exc: BaseException, kind: Any) -> str:
    """Caller-facing wording for one structuring failure (no Python type names)."""
    if isinstance(exc, TypeError) and str(exc).startswith("expected "):
        return str(exc)
    if isinstance(exc, KeyError):
        return "required field missing"
    if attrs.has(kind) or isinstance(exc, AttributeError):
        return "expected a JSON object"
    return "invalid value"


def _render(path: Path, prefix: str = "") -> str:
    text = prefix
    for step in path:
        if isinstance(step, int):
            text += f"[{step}]"
        else:
            text = f"{text}.{step}" if text else step
    return text


def structure(payload: Any, kind: type[T], *, prefix: str = "") -> T:
    """Structure ``payload`` strictly; raise ``ValidationError`` naming the offending field
    by its JSON path below ``prefix`` (for example ``answers[0].custom_text``)."""
    if not isinstance(payload, Mapping):
        where = prefix or "body"
        raise ValidationError(f"invalid payload: {where} must be a JSON object", field=where)
    try:
        return _CONVERTER.structure(payload, kind)
    except cattrs.BaseValidationError as exc:
        path, failure, failed_kind = _failures(exc)[0]
        if isinstance(failure, cattrs.ForbiddenExtraKeysError):
            unknown = sorted(failure.extra_fields)[0]
            field = _render((*path, unknown), prefix)
            raise ValidationError(f"invalid payload: unknown field {field!r}", field=field) from exc
        field = _render(path, prefix) or "body"
        problem = _describe(failure, failed_kind)
        raise ValidationError(f"invalid payload: {field}: {problem}", field=field) from exc


def structure_shape(payload: Any, kind: type[T]) -> T:
    """A JSON value → the wire model ``kind`` (the inverse of :func:`unstructure`)."""
    return _CONVERTER.structure(payload, kind)
