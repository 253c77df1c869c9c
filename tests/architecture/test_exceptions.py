"""Each exception of ours is one class (issue #32: two ``ConfirmationFailed`` classes, one in
the use cases and one in an adapter, meant the same failure under two names, and an ``except``
of one could never catch the other)."""

from __future__ import annotations

import importlib
import pkgutil
from collections import defaultdict

import clarion

ALEMBIC_SCRIPTS = (
    "clarion.adapters.sql.migrations.env",
    "clarion.adapters.sql.migrations.versions.",
)


def _our_exceptions() -> dict[str, set[str]]:
    """Exception class name → the modules defining a class of that name."""
    defined: dict[str, set[str]] = defaultdict(set)
    for info in pkgutil.walk_packages(clarion.__path__, "clarion."):
        if info.name.startswith(ALEMBIC_SCRIPTS) or info.name.endswith(".__main__"):
            continue  # alembic's scripts (run by alembic) and the CLI's entry run on import
        module = importlib.import_module(info.name)
        for value in vars(module).values():
            if (
                isinstance(value, type)
                and issubclass(value, BaseException)
                and value.__module__ == info.name
            ):
                defined[value.__name__].add(info.name)
    return defined


def test_no_two_exception_classes_share_a_name() -> None:
    defined = _our_exceptions()
    assert "ConfirmationFailed" in defined, "the walk found the exceptions"
    twice = {name: sorted(modules) for name, modules in defined.items() if len(modules) > 1}
    assert not twice, f"define each exception once (in the innermost ring that raises it): {twice}"
