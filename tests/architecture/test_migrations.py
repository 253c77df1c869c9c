"""Past migrations stay as they were written (issue #32).

A migration that imports a live helper (``sql/records.py``, ``sql/metadata_sql.py``,
``sql/types.py``, ...) changes whenever that helper does, so upgrading an old database would
silently do something other than what the migration did when it was written. The migrations
import frozen copies (``clarion.adapters.sql.migrations.frozen``) instead; these tests read the
imports of every migration and pin the frozen files, so a change shows up here.
"""

from __future__ import annotations

import ast
import hashlib
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SQL = ROOT / "src" / "adapters" / "sql"
MIGRATIONS = SQL / "migrations"
VERSIONS = MIGRATIONS / "versions"
FROZEN = MIGRATIONS / "frozen"
FROZEN_PACKAGE = "clarion.adapters.sql.migrations.frozen"

# Edit none of these files: a migration needing a helper that has changed since gets a new
# frozen module (see the package docstring). Add a new module's digest here.
FROZEN_DIGESTS = {
    "audit_chain_0019.py": "e616b94e2dcbc430f7e51d71a20286b58cf4276e6179ffedf099eb8ff6a5854b",
    "__init__.py": "1dc0ab25373a415b6042f5fd223f1269580053c9c166b7f0057c70a619dbcff9",
    "bundles.py": "da8b88c89f83ac604d77d71faf9ca6e4ba88d0a8d94e7aaa5e85aefc63cb2fed",
    "columns.py": "83a099c74bcf38886fd5a007edfbcbaba3bf51882484503af2e95b5f104c210e",
    "messages.py": "3576650872fbdb9f1366ea82ad9aab4e4523ce08d05f0cbe277d046422e0ac87",
    "metadata.py": "75cac0b5034b646d6774ca26074b40af1409118b23b1fb0be7b7358b8afe58b6",
}


def _our_imports(path: Path) -> list[str]:
    """The modules of ours that ``path`` imports (a relative import counts as ours)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                found.append("." * node.level + (node.module or ""))
            elif node.module and node.module.split(".")[0] == "clarion":
                found.append(node.module)
        elif isinstance(node, ast.Import):
            found.extend(a.name for a in node.names if a.name.split(".")[0] == "clarion")
    return found


def _migrations() -> list[Path]:
    return sorted(p for p in VERSIONS.glob("*.py") if p.name != "__init__.py")


def _within(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


@pytest.mark.parametrize("path", _migrations(), ids=lambda p: p.stem)
def test_a_migration_imports_nothing_of_ours_but_the_frozen_helpers(path: Path) -> None:
    live = [m for m in _our_imports(path) if not _within(m, FROZEN_PACKAGE)]
    assert not live, f"{path.name} imports {live}: import a frozen copy from {FROZEN_PACKAGE}"


@pytest.mark.parametrize("path", sorted(FROZEN.glob("*.py")), ids=lambda p: p.stem)
def test_a_frozen_helper_imports_only_frozen_helpers_and_the_domain(path: Path) -> None:
    live = [
        m
        for m in _our_imports(path)
        if not (_within(m, FROZEN_PACKAGE) or _within(m, "clarion.domain"))
    ]
    assert not live, f"frozen/{path.name} imports {live}"


def test_the_frozen_helpers_are_unchanged() -> None:
    digests = {
        p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(FROZEN.glob("*.py"))
    }
    changed = sorted(name for name, digest in digests.items() if FROZEN_DIGESTS.get(name) != digest)
    assert not changed, (
        f"frozen helpers {changed} differ from the pinned digests: past migrations use them, so "
        "put a changed helper in a new frozen module and pin its digest instead"
    )
    assert set(FROZEN_DIGESTS) <= set(digests), "a pinned frozen helper is missing"


def test_the_import_contract_forbids_every_live_sql_module() -> None:
    """The import-linter contract lists modules one by one; a new module of the SQL adapter
    must be added to it."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    (contract,) = [
        c
        for c in config["tool"]["importlinter"]["contracts"]
        if f"{FROZEN_PACKAGE}" in c.get("source_modules", [])
    ]
    live = {f"clarion.adapters.sql.{p.stem}" for p in SQL.glob("*.py") if p.stem != "__init__"}
    live |= {
        f"clarion.adapters.sql.{p.name}"
        for p in SQL.iterdir()
        if (p / "__init__.py").exists() and p.name != "migrations"
    }
    live.add("clarion.adapters.sql.migrations.env")
    missing = live - set(contract["forbidden_modules"])
    assert not missing, f"add {sorted(missing)} to the migrations' contract in pyproject.toml"
