"""Every criterion id and facts section the repository cites resolves in ``docs/criteria.md``
(issue #16: citations such as "facts §4.6", "R2a" or "L7a.4" must not dangle).

What counts as a citation, in any text file under ``src/``, ``tests/``, ``docs/`` and
``benchmarks/``:

- a criterion id: one of the spec's id letters (A C D E G L M N P R S T W X), a number, an
  optional lower-case letter a–d and an optional ``.<n>`` sub-item — standing alone, so
  ``R2b``, ``L7a.4`` and ``N6.1-wrong-count`` count, while ``Q1:`` (a prompt), ``A-Z0`` (a
  regex) or ``R2D2`` do not;
- a section: ``§`` and a dotted number. It names a section of the upstream facts unless the text
  just before it says ``stack notes``.

The index is the set of ``- **<id>** — <text>`` lines of ``docs/criteria.md``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
INDEX = ROOT / "docs" / "criteria.md"
SCANNED = ("src", "tests", "docs", "benchmarks")
TEXT_SUFFIXES = frozenset(
    {".py", ".md", ".js", ".css", ".html", ".toml", ".txt", ".ini", ".cfg", ".sh", ".yml", ".yaml"}
    | {".sql", ".mako"}
)
CRITERION = re.compile(r"(?<![A-Za-z0-9_])([ACDEGLMNPRSTWX][1-9][0-9]?[a-d]?(?:\.[1-9])?)(?![\w])")
SECTION = re.compile(r"§\s?([1-9][0-9]?(?:\.[1-9][0-9]?)*)")
ISSUE_ITEM = re.compile(
    r"#[0-9]+,?\s(?:(?:item|items)\s)?(?:[A-Z][0-9]+[a-z]?\s?[,/+&]?\s?(?:and\s)?)*$"
)
STACK_NOTES = re.compile(r"stack[ -]notes\W*$", re.IGNORECASE)
ENTRY = re.compile(r"^- \*\*(?P<id>[^*]+)\*\* — (?P<text>\S.*)$")


def citations(text: str) -> Iterator[str]:
    """The ids ``text`` cites, spelt as the index spells them: ``R2a``, ``§4.6``,
    ``stack notes §1.1``. An id right after an issue reference names that issue's item, not a
    criterion (``#29 S8``, ``#29 S1/S12``, ``(#29, S5)``)."""
    for match in CRITERION.finditer(text):
        if not ISSUE_ITEM.search(text[max(0, match.start() - 40) : match.start()]):
            yield match.group(1)
    for match in SECTION.finditer(text):
        before = text[max(0, match.start() - 20) : match.start()]
        prefix = "stack notes " if STACK_NOTES.search(before) else ""
        yield f"{prefix}§{match.group(1)}"


def scanned_files() -> Iterator[Path]:
    for folder in SCANNED:
        for path in sorted((ROOT / folder).rglob("*")):
            if path.suffix in TEXT_SUFFIXES and path.is_file():
                yield path


@cache
def cited() -> dict[str, frozenset[str]]:
    """Every cited id → the files (relative to the root) citing it."""
    found: dict[str, set[str]] = {}
    for path in scanned_files():
        relative = str(path.relative_to(ROOT))
        for identifier in citations(path.read_text(encoding="utf-8")):
            found.setdefault(identifier, set()).add(relative)
    return {key: frozenset(files) for key, files in found.items()}


@cache
def indexed() -> dict[str, str]:
    entries: dict[str, str] = {}
    for line in INDEX.read_text(encoding="utf-8").splitlines():
        match = ENTRY.match(line)
        if match:
            identifier = match.group("id")
            assert identifier not in entries, f"{identifier} is indexed twice"
            entries[identifier] = match.group("text")
    return entries


def test_every_cited_id_is_in_the_index() -> None:
    missing = {key: sorted(files)[:3] for key, files in cited().items() if key not in indexed()}
    assert not missing, f"cited but not in docs/criteria.md (add a line each): {missing}"


def test_the_scan_sees_the_citations_it_is_meant_to_see() -> None:
    """Not vacuous: known citations in known files are found (if one of these moves, pick
    another), and the scan sees well over a hundred ids."""
    found = cited()
    assert "src/domain/listing.py" in found["L7a.4"]
    assert "src/adapters/memory/claims.py" in found["§4.6"]
    assert "src/adapters/mcp/server.py" in found["stack notes §1.1"]
    assert "tests/integration/rest/test_respond.py" in found["N6.1"]
    assert {"R2", "R2a", "R2b", "N8b", "L1c", "§9.21"} <= found.keys()
    assert len(found) > 100


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("loser replay (R2b) per facts §4.6.", ["R2b", "§4.6"]),
        ('"" means not supplied (L7a.4, L10)', ["L7a.4", "L10"]),
        ('id="N6.1-wrong-count"', ["N6.1"]),
        ("validation (N6–N8d, L16)", ["N6", "N8d", "L16"]),
        ("fixes upstream §9.13/§9.14", ["§9.13", "§9.14"]),
        ("the SDK constructor (stack notes §1.1), see §1.1", ["stack notes §1.1", "§1.1"]),
        ('"Q1: a\\nQ2: b"', []),  # a prompt, not a criterion (Q is no id letter)
        ("[A-Z0-9_]*, R2D2, SHA-256, T1000x, x2R2", []),
    ],
)
def test_what_counts_as_a_citation(text: str, expected: list[str]) -> None:
    assert list(citations(text)) == expected


def test_every_index_line_says_something() -> None:
    """One line each, in our words: no empty or placeholder entries."""
    entries = indexed()
    for identifier, text in entries.items():
        assert len(text) >= 20, identifier
        assert "TODO" not in text, identifier
