"""One declaration per setting (issue #32): a :class:`Settings` field made by :func:`setting`
carries its variable, its flag, its parser and its documentation, and everything else is
generated from it.

- :meth:`Settings.from_env` reads every declared variable (:func:`read_environment`);
- ``clarion serve`` (and, for ``--database-url``, every command that opens the database) adds
  the declared flags and merges what was given (:mod:`clarion.app.root.cli.common`);
- the settings table of ``docs/operations.md`` (:mod:`clarion.app.root.settings_docs`, ``make
  settings-docs``).

Adding a setting is one ``name: T = setting(default, env=..., parse=..., doc=...)`` line in
:class:`~clarion.app.root.settings.Settings`, plus the code that uses it. A value read from
several settings (the :class:`~clarion.domain.limits.Limits`, one variable per bound) is a
:func:`setting_group`: one declaration per field of its class, which keeps the defaults.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, Final, TypeVar, cast, overload

import attrs
from attrs import AttrsInstance

T = TypeVar("T")
A = TypeVar("A", bound=AttrsInstance)
_METADATA_KEY: Final = "clarion.setting"
_GROUP_KEY: Final = "clarion.setting.group"
SECRET_FLAG: Final = "none (keep secrets out of `ps`)"


def shown(value: object) -> str:
    """A default as ``--help`` and the docs write it: ``7200`` (not ``7200.0``); "" when there
    is nothing to show (an empty text or list)."""
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, tuple):
        return ",".join(map(str, value))
    return str(value)


def one_of(choices: Sequence[str]) -> str:
    """``` `a`, `b` or `c` ```: the values a variable takes, for the docs."""
    quoted = [f"`{choice}`" for choice in choices]
    return quoted[0] if len(quoted) == 1 else f"{', '.join(quoted[:-1])} or {quoted[-1]}"


@attrs.frozen
class Setting:
    """Everything outside the code says about one setting: its ``CLARION_*`` variable, the
    parser of its text, its flag (if ``clarion serve`` takes one) and its line in the docs.

    ``parse(text, name)`` turns the variable's or the flag's text into the value and raises
    :class:`~clarion.domain.errors.ValidationError` naming ``name`` (the variable, or the flag
    as ``--port``) when it cannot. ``strip``: the variable's text is stripped before it is
    parsed, and a blank one counts as unset. ``accepts`` says in the docs what the variable
    takes (default: the flag's ``choices``). ``flag_type``: argparse converts the flag itself
    and its value is used as is (``--ask-timeout``). ``show`` writes the default for ``--help``
    and the docs; ``default_doc`` follows it in the docs (or replaces it when nothing is shown).
    A ``secret`` never has a flag (flags are visible in ``ps``) and is left out of ``repr``.
    """

    env: str
    parse: Callable[[str, str], object]
    doc: str
    accepts: str = ""
    default_doc: str = ""
    flag: str | None = None
    help: str = ""
    choices: tuple[str, ...] = ()
    flag_type: Callable[[str], Any] | None = None
    show: Callable[[Any], str] = shown
    secret: bool = False
    strip: bool = False
    # Further cells of its row in its group's docs table (a limit's: over it on REST, on MCP).
    columns: tuple[str, ...] = ()

    def __attrs_post_init__(self) -> None:
        if not self.env.startswith("CLARION_"):
            raise ValueError(f"a setting's variable is CLARION_*, got {self.env!r}")
        if self.flag is not None and (self.secret or not self.flag.startswith("--")):
            raise ValueError(f"{self.env}: a secret has no flag; a flag is --name")
        if self.flag is not None and not self.help:
            raise ValueError(f"{self.env}: a flag needs its help text")

    @property
    def accepted(self) -> str:
        """What the variable takes, for the docs: ``accepts``, else the flag's choices."""
        return self.accepts or (one_of(self.choices) if self.choices else "")

    @property
    def dest(self) -> str | None:
        """The attribute argparse stores the flag under (``--ask-timeout`` → ``ask_timeout``)."""
        return None if self.flag is None else self.flag.removeprefix("--").replace("-", "_")

    def read(self, environ: Mapping[str, str]) -> object | None:
        """The variable's value, or None when it is unset or blank.

        Raises:
            ValidationError: the value cannot be used; ``field`` is the variable.
        """
        text = environ.get(self.env, "")
        if self.strip:
            text = text.strip()
        return self.parse(text, self.env) if text else None

    def from_flag(self, text: object) -> object | None:
        """The flag's value (None when not given): parsed as ``--flag``, the variable's rules.

        Raises:
            ValidationError: the value cannot be used; ``field`` is the flag.
        """
        if text is None or self.flag_type is not None:
            return text
        return self.parse(str(text), str(self.flag))


@attrs.frozen
class Declared:
    """A declared setting together with its field: the attribute name and its default."""

    name: str
    setting: Setting
    attribute: attrs.Attribute[object]

    @property
    def default(self) -> object:
        """The static default, or :data:`attrs.NOTHING` for a computed one (a factory)."""
        default = self.attribute.default
        return attrs.NOTHING if isinstance(default, attrs.Factory) else default  # type: ignore[arg-type]

    @property
    def shown_default(self) -> str:
        default = self.default
        return "" if default is attrs.NOTHING else self.setting.show(default)

    def flag_help(self) -> str:
        """The flag's ``--help`` line: its meaning, then its variable and default."""
        default = self.shown_default
        where = f"env {self.setting.env}" + (f"; default {default}" if default else "")
        return f"{self.setting.help} ({where})"


@overload
def setting(
    default: T,
    *,
    env: str,
    parse: Callable[[str, str], object],
    doc: str,
    validator: Callable[[Any, attrs.Attribute[T], T], None] | None = None,
    **details: Any,
) -> T: ...


@overload
def setting(
    *,
    factory: Callable[[], T],
    env: str,
    parse: Callable[[str, str], object],
    doc: str,
    validator: Callable[[Any, attrs.Attribute[T], T], None] | None = None,
    **details: Any,
) -> T: ...


def setting(
    default: object = attrs.NOTHING,
    *,
    factory: Callable[[], object] | None = None,
    env: str,
    parse: Callable[[str, str], object],
    doc: str,
    validator: Callable[[Any, Any, Any], None] | None = None,
    **details: Any,
) -> Any:
    """An attrs field declaring a setting (the keyword ``details`` are :class:`Setting`'s)."""
    declared = Setting(env=env, parse=parse, doc=doc, **details)
    return attrs.field(
        default=attrs.Factory(factory) if factory is not None else default,
        validator=validator,
        repr=not declared.secret,
        metadata={_METADATA_KEY: declared},
    )


def declared_settings(cls: type, group: str | None = None) -> Iterator[Declared]:
    """Every setting ``cls`` declares, in field order (the order variables are read in, flags
    added and the docs table written); with ``group``, the members of that group field of
    ``cls`` instead (the limits), in the field order of its class.

    Raises:
        LookupError: ``group`` is not a group of settings.
    """
    if group is not None:
        members = attrs.fields_dict(cls)[group].metadata.get(_GROUP_KEY)
        if not isinstance(members, SettingGroup):
            raise LookupError(f"{group} is not a group of settings")
        yield from members.declared()
        return
    for attribute in attrs.fields(cls):
        declared = attribute.metadata.get(_METADATA_KEY)
        if isinstance(declared, Setting):
            yield Declared(attribute.name, declared, cast("attrs.Attribute[object]", attribute))


def setting_of(attribute: attrs.Attribute[Any]) -> Setting:
    """The declaration of ``attribute`` (for validators, which name the variable).

    Raises:
        LookupError: the field is not a declared setting.
    """
    declared = attribute.metadata.get(_METADATA_KEY)
    if not isinstance(declared, Setting):
        raise LookupError(f"{attribute.name} is not a declared setting")
    return declared


@attrs.frozen
class SettingGroup:
    """One value read from several settings: a ``cls`` whose every field has its own
    declaration (``members``, in the field order of ``cls``, which keeps the defaults)."""

    cls: type
    members: Mapping[str, Setting]

    def read(self, environ: Mapping[str, str]) -> object | None:
        """A ``cls`` of the members ``environ`` sets (the rest default); None when none is.

        Raises:
            ValidationError: a member's value cannot be used; ``field`` is its variable.
        """
        values = {}
        for name, member in self.members.items():
            value = member.read(environ)
            if value is not None:
                values[name] = value
        return self.cls(**values) if values else None

    def declared(self) -> Iterator[Declared]:
        """Each member with the field of ``cls`` it sets, in field order."""
        fields = attrs.fields_dict(self.cls)
        for name, member in self.members.items():
            yield Declared(name, member, cast("attrs.Attribute[object]", fields[name]))


def setting_group(cls: type[A], **members: Setting) -> A:
    """An attrs field holding a ``cls`` (default: ``cls()``), read from one declared setting per
    field of ``cls`` (``members``, by field name).

    Raises:
        ValueError: ``members`` does not declare every field of ``cls`` once, in its order.
    """
    names = [attribute.name for attribute in attrs.fields(cls)]
    if list(members) != names:
        raise ValueError(f"declare every field of {cls.__name__} once, in its order: {names}")
    group = SettingGroup(cls, members)
    return attrs.field(factory=cls, metadata={_GROUP_KEY: group})


def read_environment(cls: type, environ: Mapping[str, str]) -> dict[str, object]:
    """Every field of ``cls`` whose variables ``environ`` sets, parsed, in field order (so the
    first unusable variable is the one reported).

    Raises:
        ValidationError: a variable's value cannot be used; ``field`` names it.
    """
    values: dict[str, object] = {}
    for attribute in attrs.fields(cls):
        declared = attribute.metadata.get(_METADATA_KEY)
        group = attribute.metadata.get(_GROUP_KEY)
        if isinstance(declared, Setting):
            value = declared.read(environ)
        elif isinstance(group, SettingGroup):
            value = group.read(environ)
        else:
            continue
        if value is not None:
            values[attribute.name] = value
    return values
