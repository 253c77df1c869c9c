"""#30: every error text ``docs/troubleshooting.md`` quotes is one Clarion can print, so the page
cannot drift from the code.

The page quotes each error in a ```` ```text ```` block, one text a line, with its variable
parts (a port, a path, an id, a driver's reason) written as ``<placeholder>``. A line matches
when some string the source builds matches it whole: a Python string literal or f-string of
``src/`` — its replacement fields standing for any text, module-level string constants it
names filled in — with at least :data:`MIN_LITERAL` characters of its own besides the CLI's
prefixes (so ``f"{exc}"`` and ``f"clarion: error: {exc}"`` match nothing), or, for the web
inbox's scripts, the line as it stands in a file of ``src/``. The ``clarion: error:`` prefix is
the CLI's own (``main`` adds it to every error's text) and is checked once.
"""

from __future__ import annotations

import ast
import re
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "troubleshooting.md"
SOURCE = ROOT / "src"
MIN_LITERAL = 15
PREFIXES = ("clarion: error: ", "clarion: warning: ")
_FIELD = "\x00"
_PLACEHOLDER = re.compile(r"<[^<>\n]+>")


def quoted_errors(markdown: str) -> list[str]:
    """The lines of the page's ```` ```text ```` blocks."""
    lines: list[str] = []
    inside = False
    for line in markdown.splitlines():
        stripped = line.strip()
        if stripped.startswith("```"):
            inside = not inside and stripped == "```text"
            continue
        if inside and stripped:
            lines.append(stripped)
    return lines


def _constants(tree: ast.Module) -> dict[str, str]:
    """The module's top-level names bound to a plain string (``X = "..."``, ``X: Final = ...``)."""
    found: dict[str, str] = {}
    for node in tree.body:
        target: ast.expr | None = None
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
        elif isinstance(node, ast.AnnAssign):
            target = node.target
        value = getattr(node, "value", None)
        if (
            isinstance(target, ast.Name)
            and isinstance(value, ast.Constant)
            and isinstance(value.value, str)
        ):
            found[target.id] = value.value
    return found


def _template(node: ast.JoinedStr, constants: dict[str, str]) -> str:
    parts: list[str] = []
    for value in node.values:
        if isinstance(value, ast.Constant) and isinstance(value.value, str):
            parts.append(value.value)
        elif (
            isinstance(value, ast.FormattedValue)
            and isinstance(value.value, ast.Name)
            and value.value.id in constants
            and value.conversion == -1
        ):
            parts.append(constants[value.value.id])
        else:
            parts.append(_FIELD)
    return "".join(parts)


def _literal_length(template: str) -> int:
    """The characters of a template that are its own: not fields, not the CLI's prefixes."""
    literal = template.replace(_FIELD, "")
    for prefix in PREFIXES:
        literal = literal.replace(prefix, "")
    return len(literal)


@cache
def source_patterns() -> tuple[re.Pattern[str], ...]:
    """Every string the Python source of ``src/`` builds, as a pattern (fields: any text)."""
    patterns: dict[str, re.Pattern[str]] = {}
    for path in sorted(SOURCE.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        constants = _constants(tree)
        in_fstring = {
            id(part)
            for node in ast.walk(tree)
            if isinstance(node, ast.JoinedStr)
            for part in node.values
        }
        for node in ast.walk(tree):
            if isinstance(node, ast.JoinedStr):
                text = _template(node, constants)
            elif (
                isinstance(node, ast.Constant)
                and isinstance(node.value, str)
                and id(node) not in in_fstring
            ):
                text = node.value
            else:
                continue
            if _literal_length(text) < MIN_LITERAL or text in patterns:
                continue
            regex = ".*?".join(re.escape(piece) for piece in text.split(_FIELD))
            patterns[text] = re.compile(regex, re.DOTALL)
    return tuple(patterns.values())


@cache
def other_sources() -> str:
    """The web inbox's own files (scripts, pages), where its messages are written."""
    texts = [
        path.read_text(encoding="utf-8")
        for path in sorted(SOURCE.rglob("*"))
        if path.suffix in (".js", ".html", ".css")
    ]
    return "\n".join(texts)


def occurs_in_source(line: str) -> bool:
    """Whether Clarion can print ``line`` (placeholders standing for any text)."""
    bare = line
    for prefix in PREFIXES:
        bare = bare.removeprefix(prefix)
    # The prefix is main's for an error, but a warning may carry it in its own text.
    for text in dict.fromkeys((bare, line)):
        sample = _PLACEHOLDER.sub("x", text)
        if any(pattern.fullmatch(sample) for pattern in source_patterns()):
            return True
    return not _PLACEHOLDER.search(bare) and bare in other_sources()


ERRORS = quoted_errors(PAGE.read_text(encoding="utf-8"))


def test_the_page_quotes_errors() -> None:
    assert len(ERRORS) >= 20


def test_the_cli_prefixes_are_its_own() -> None:
    main = (SOURCE / "app" / "root" / "cli" / "main.py").read_text(encoding="utf-8")
    assert 'f"clarion: error: {exc}"' in main
    serve = (SOURCE / "app" / "root" / "cli" / "serve.py").read_text(encoding="utf-8")
    assert "clarion: warning: " in serve


@pytest.mark.parametrize("line", ERRORS)
def test_each_quoted_error_is_one_clarion_prints(line: str) -> None:
    assert occurs_in_source(line), (
        f"docs/troubleshooting.md quotes a text src/ never builds: {line}"
    )


def test_a_changed_text_is_caught() -> None:
    assert occurs_in_source("clarion: error: user not found: <user id> (see `clarion users list`)")
    assert not occurs_in_source("clarion: error: user is missing: <user id>")
    assert not occurs_in_source("clarion: error: <anything at all>")
