"""The import-linter contracts in pyproject.toml cover every ring and every adapter.

``lint-imports`` checks only what a contract names; a new adapter package or a new module in
``clarion.app`` that no contract lists would be checked by nothing. These tests read the
contracts and the source tree and fail on anything left out.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src"


def _contracts() -> dict[str, dict[str, Any]]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    return {c["name"]: c for c in config["tool"]["importlinter"]["contracts"]}


def _rings() -> list[set[str]]:
    (layers,) = [c for c in _contracts().values() if c["type"] == "layers"]
    return [{m.strip() for m in layer.replace("|", ":").split(":")} for layer in layers["layers"]]


def _children(package: str) -> set[str]:
    """The modules and subpackages directly inside ``clarion.<package>``."""
    folder = SRC / package
    names = {p.stem for p in folder.glob("*.py") if p.stem != "__init__"}
    names |= {p.name for p in folder.iterdir() if (p / "__init__.py").exists()}
    return {f"clarion.{package}.{name}" for name in names}


def _subpackages(package: str) -> set[str]:
    folder = SRC / package
    return {f"clarion.{package}.{p.name}" for p in folder.iterdir() if (p / "__init__.py").exists()}


# Shared by several technologies on purpose; each has a contract forbidding it to import any
# technology adapter instead.
SHARED_ADAPTER_PACKAGES = {"clarion.adapters.stores", "clarion.adapters.wire"}


def test_every_adapter_package_is_in_the_independence_contract() -> None:
    independence = [c for c in _contracts().values() if c["type"] == "independence"]
    listed = {m for c in independence for m in c["modules"]}
    missing = _subpackages("adapters") - listed - SHARED_ADAPTER_PACKAGES
    assert not missing, f"add {sorted(missing)} to the independence contract in pyproject.toml"


def test_a_shared_adapter_package_may_import_no_technology_adapter() -> None:
    (independence,) = [c for c in _contracts().values() if c["type"] == "independence"]
    for shared in SHARED_ADAPTER_PACKAGES:
        (forbidding,) = [
            c
            for c in _contracts().values()
            if c["type"] == "forbidden" and c["source_modules"] == [shared]
        ]
        assert set(forbidding["forbidden_modules"]) == set(independence["modules"])


def test_one_layers_contract_lists_every_ring_in_order() -> None:
    rings = _rings()
    assert rings == [
        {"clarion.app.root"},
        {"clarion.adapters"},
        {"clarion.app.usecases"},
        {"clarion.ports"},
        {"clarion.domain"},
    ]


def test_clarion_app_is_two_rings_and_nothing_else() -> None:
    """Each ring of ``clarion.app`` is one sub-package; a module beside them would be in none."""
    placed = set().union(*_rings())
    missing = _children("app") - placed
    assert not missing, f"move {sorted(missing)} into clarion.app.root or clarion.app.usecases"
