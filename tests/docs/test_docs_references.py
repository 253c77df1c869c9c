"""Everything the README and ``docs/*.md`` tell a reader to run or open exists (issue 7).

- every ``clarion ...`` command parses with the real argument parser, and ``--help`` works for
  every command the documents name;
- every HTTP path of Clarion's surfaces (``/api/v1/...``, ``/mcp...``, ``/openapi.json``,
  ``/healthz``, the inbox at ``/``) is a route of the application ``build_clarion`` builds —
  with the method written next to it, when there is one (``curl -X`` included);
- every ``make`` target exists, every ``pytest`` node id names a real test, every
  ``python -m`` module and script path exists, and every ``CLARION_*`` variable is one the
  code reads;
- every relative Markdown link points to an existing file (and heading, for ``#anchors``).

Commands in code blocks must parse completely; inline code may leave out required arguments
(``clarion tokens create`` in a sentence), but never misspell a command or an option.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import importlib.util
import io
import re
from collections.abc import Callable, Iterable, Iterator
from functools import cache
from pathlib import Path

import pytest
from starlette.routing import BaseRoute, Match, Mount, Route

from clarion.app.root.cli import build_parser
from clarion.app.root.compose import build_clarion
from clarion.app.root.settings import Settings
from tests.docs.extract import (
    Document,
    PathMention,
    Snippet,
    links,
    program,
    route_paths,
    shell_commands,
    slug,
)

ROOT = Path(__file__).resolve().parents[2]
DOCUMENTS = sorted([ROOT / "README.md", *(ROOT / "docs").glob("*.md")])
each_document = pytest.mark.parametrize(
    "path", DOCUMENTS, ids=[str(path.relative_to(ROOT)) for path in DOCUMENTS]
)
PYTEST_VALUE_OPTIONS = frozenset({"-k", "-m", "-p", "-c", "-o", "-n", "--maxfail", "--deselect"})
CURL_DATA_OPTIONS = frozenset({"-d", "--data", "--data-raw", "--data-binary", "--json", "-F"})
_PLACEHOLDER_SEGMENT = re.compile(r"^(?:\{.*\}|<.*>|:\w+|\$.*|…|\.\.\.|\*|[A-Z][A-Z0-9_]*)$")
_NODE_ID = re.compile(r"^[\w./-]+\.py::[\w:\[\]-]+$")
_ENV_VARIABLE = re.compile(r"\bCLARION_[A-Z0-9_]*[A-Z0-9]\b")
_SOURCES = ("src", "tests", "scripts", "benchmarks", ".ci", "Makefile")
_NOT_SOURCES = (ROOT / "tests" / "docs",)  # this module plants misspelt names on purpose

Problems = list[str]


@cache
def parsed(path: Path) -> Document:
    return Document.parse(path.read_text(encoding="utf-8"))


@cache
def routes() -> tuple[BaseRoute, ...]:
    return tuple(build_clarion(Settings(database_url="memory://")).asgi_app.routes)


# -- clarion commands -----------------------------------------------------------------------------


def clarion_arguments(snippet: Snippet) -> Iterator[list[str]]:
    """The argument lists of every ``clarion`` invocation in a snippet."""
    for command in shell_commands(snippet.text):
        name = program(command)
        if name == "clarion":
            yield command[1:]
        elif name.startswith("python") and command[1:3] == ["-m", "clarion"]:
            yield command[3:]


def parse_error(parser: argparse.ArgumentParser, arguments: list[str]) -> str | None:
    """None when ``arguments`` parse; else argparse's error line."""
    stderr = io.StringIO()
    with contextlib.redirect_stderr(stderr), contextlib.redirect_stdout(io.StringIO()):
        try:
            parser.parse_args(arguments)
        except SystemExit as exit_:
            if exit_.code != 0:
                return stderr.getvalue().strip().splitlines()[-1]
    return None


def command_path(parser: argparse.ArgumentParser, arguments: list[str]) -> list[str]:
    """The leading subcommand names of ``arguments`` (``["tokens", "create"]``)."""
    path: list[str] = []
    current = parser
    for argument in arguments:
        choices = next(
            (
                action.choices
                for action in current._actions
                if isinstance(action, argparse._SubParsersAction)
            ),
            None,
        )
        if not isinstance(choices, dict) or argument not in choices:
            break
        path.append(argument)
        current = choices[argument]
    return path


def check_clarion_commands(document: Document) -> Problems:
    problems: Problems = []
    parser = build_parser()
    for snippet in document.snippets():
        for arguments in clarion_arguments(snippet):
            error = parse_error(parser, arguments)
            missing_only = error is not None and "arguments are required" in error
            if error is not None and (snippet.in_block or not missing_only):
                problems.append(f"line {snippet.line}: clarion {' '.join(arguments)}: {error}")
    return problems


def documented_command_paths() -> set[tuple[str, ...]]:
    parser = build_parser()
    found: set[tuple[str, ...]] = {()}
    for path in DOCUMENTS:
        for snippet in parsed(path).snippets():
            for arguments in clarion_arguments(snippet):
                found.add(tuple(command_path(parser, arguments)))
    return found


# -- routes -------------------------------------------------------------------------------------


def _segments_match(documented: list[str], template: list[str]) -> bool:
    return all(
        mine == theirs or _PLACEHOLDER_SEGMENT.match(mine) or theirs.startswith("{")
        for mine, theirs in zip(documented, template, strict=False)
    )


def _served(path: str, available: Iterable[BaseRoute]) -> bool:
    scope = {"type": "http", "path": path, "root_path": "", "method": "GET"}
    return any(route.matches(scope)[0] is not Match.NONE for route in available)


def route_problem(mention: PathMention, available: Iterable[BaseRoute]) -> str | None:
    """None when a route serves the path (and method); else what is wrong."""
    path = mention.path
    wildcard = path.endswith(("/...", "/…", "/*"))
    prefix_only = path.endswith("/") and path != "/" and not _served(path[:-1], available)
    if wildcard or prefix_only:
        # A prefix in prose ("every /api/v1/... route", "paths under /api/"): some route
        # must start with it. "/mcp/" is not such a prefix: "/mcp" is a route of its own.
        prefix = path.rsplit("/", 1)[0].split("/")[1:]
        templates = [
            route.path.split("/")[1:] for route in available if isinstance(route, Route | Mount)
        ]
        if any(
            len(template) >= len(prefix) and _segments_match(prefix, template)
            for template in templates
        ):
            return None
        return f"line {mention.line}: no route starts with {path}"
    scope = {"type": "http", "path": path, "root_path": "", "method": mention.method or "GET"}
    outcomes = {route.matches(scope)[0] for route in available}
    if Match.FULL in outcomes or (mention.method is None and Match.PARTIAL in outcomes):
        return None
    if Match.PARTIAL in outcomes:
        return f"line {mention.line}: {mention.method} is not served at {path}"
    return f"line {mention.line}: no route serves {path}"


def curl_mentions(document: Document) -> Iterator[PathMention]:
    """``curl`` calls in code, with the method curl would send."""
    for snippet in document.snippets():
        for command in shell_commands(snippet.text):
            if program(command) != "curl":
                continue
            method = "GET"
            for option, value in zip(command, [*command[1:], ""], strict=True):
                if option in ("-X", "--request"):
                    method = value.upper()
                elif option in CURL_DATA_OPTIONS and method == "GET":
                    method = "POST"
                elif option in ("-I", "--head"):
                    method = "HEAD"
            for word in command[1:]:
                for mention in route_paths(Document.parse(word)):
                    yield PathMention(mention.path, method, snippet.line)


def check_routes(document: Document) -> Problems:
    mentions = [*route_paths(document), *curl_mentions(document)]
    problems = [route_problem(mention, routes()) for mention in mentions]
    return sorted({problem for problem in problems if problem is not None})


# -- make, pytest, python, variables --------------------------------------------------------------


@cache
def make_targets() -> frozenset[str]:
    text = (ROOT / "Makefile").read_text(encoding="utf-8")
    return frozenset(re.findall(r"^([A-Za-z0-9_.-]+)\s*:(?!=)", text, flags=re.MULTILINE))


def pytest_node_problem(node: str) -> str | None:
    """None when ``node`` (``path[::Class]::test[param]``) names a real test or path."""
    file, *names = node.split("::")
    target = ROOT / file
    if not target.exists():
        return f"{file} does not exist"
    if not names:
        return None
    if target.parent.joinpath("__init__.py").exists() and file.startswith("tests/"):
        module = importlib.import_module(file.removesuffix(".py").replace("/", "."))
    else:
        spec = importlib.util.spec_from_file_location(f"docs_check_{target.stem}", target)
        assert spec is not None
        assert spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    found: object = module
    for name in names:
        found = getattr(found, name.split("[", 1)[0], None)
        if found is None:
            return f"{node}: no {name}"
    return None


def _make_problems(arguments: list[str]) -> Problems:
    targets = [word for word in arguments if not word.startswith("-") and "=" not in word]
    return [f"make {word}: no such target" for word in targets if word not in make_targets()]


def _pytest_problems(arguments: list[str]) -> Problems:
    problems = []
    skip = False
    for word in arguments:
        if skip or word.startswith("-"):
            skip = word in PYTEST_VALUE_OPTIONS
            continue
        problem = pytest_node_problem(word)
        if problem:
            problems.append(f"pytest {problem}")
    return problems


def _python_problems(arguments: list[str]) -> Problems:
    if arguments[:1] == ["-m"] and len(arguments) > 1:
        module = arguments[1]
        return [] if importlib.util.find_spec(module) else [f"python -m {module}: no such module"]
    return _script_problems(arguments)


def _script_problems(arguments: list[str]) -> Problems:
    script = arguments[0] if arguments else ""
    if script.endswith((".py", ".sh")) and not (ROOT / script).exists():
        return [f"{script} does not exist"]
    return []


def program_problems(command: list[str]) -> Problems:
    """What is wrong with one ``make``, ``pytest``, ``python`` or ``bash`` command."""
    name = program(command)
    if name == "make":
        return _make_problems(command[1:])
    if name == "pytest":
        return _pytest_problems(command[1:])
    if name.startswith("python") and command[1:3] == ["-m", "pytest"]:
        return _pytest_problems(command[3:])
    if name.startswith("python"):
        return _python_problems(command[1:])
    if name in ("bash", "sh"):
        return _script_problems(command[1:])
    return []


def check_programs(document: Document) -> Problems:
    problems = [
        f"line {snippet.line}: {problem}"
        for snippet in document.snippets()
        for command in shell_commands(snippet.text)
        for problem in program_problems(command)
    ]
    # A test named on its own (`tests/x.py::test_y`, as in a table) must exist as well.
    for snippet in document.snippets():
        if not snippet.in_block and _NODE_ID.match(snippet.text):
            problem = pytest_node_problem(snippet.text)
            if problem:
                problems.append(f"line {snippet.line}: {problem}")
    return problems


@cache
def variables_read() -> frozenset[str]:
    """``CLARION_*`` names the code reads: quoted in Python (``env.get("CLARION_PORT")``, not a
    mere mention in a docstring), or anywhere in a shell script or the Makefile."""
    found: set[str] = set()
    for name in _SOURCES:
        path = ROOT / name
        files = [path] if path.is_file() else [p for p in path.rglob("*") if p.is_file()]
        for file in files:
            if "__pycache__" in file.parts or any(file.is_relative_to(s) for s in _NOT_SOURCES):
                continue
            if file.suffix == ".py":
                text = file.read_text(encoding="utf-8")
                found.update(re.findall(r"[\"'](CLARION_[A-Z0-9_]+)[\"']", text))
            elif file.suffix in (".sh", ""):
                text = file.read_text(encoding="utf-8", errors="replace")
                found.update(_ENV_VARIABLE.findall(text))
    return frozenset(found)


def check_variables(document: Document) -> Problems:
    text = "\n".join(document.lines)
    return sorted(
        f"{name} is read nowhere in the code"
        for name in set(_ENV_VARIABLE.findall(text))
        if name not in variables_read()
    )


# -- links ----------------------------------------------------------------------------------------


def check_links(path: Path, document: Document) -> Problems:
    problems = []
    for line, target in links(document):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target, flags=re.IGNORECASE):
            continue  # http:, https:, mailto: — not ours to check
        file, _, anchor = target.partition("#")
        linked = (path.parent / file).resolve() if file else path
        if not linked.exists():
            problems.append(f"line {line}: {target}: no such file")
        elif anchor and linked.suffix == ".md":
            anchors = {slug(heading) for heading in parsed(linked).headings()}
            if anchor not in anchors:
                problems.append(f"line {line}: {target}: no such heading")
    return problems


# -- the tests ------------------------------------------------------------------------------------


@each_document
def test_every_clarion_command_shown_parses_with_the_real_parser(path: Path) -> None:
    assert check_clarion_commands(parsed(path)) == []


def test_every_clarion_command_the_documents_name_has_working_help() -> None:
    parser = build_parser()
    for command in sorted(documented_command_paths()):
        stdout = io.StringIO()
        with contextlib.redirect_stdout(stdout), pytest.raises(SystemExit) as exited:
            parser.parse_args([*command, "--help"])
        assert exited.value.code == 0, command
        assert f"usage: clarion {' '.join(command)}".rstrip() in stdout.getvalue()


@each_document
def test_every_http_path_shown_is_a_route_of_the_application(path: Path) -> None:
    assert check_routes(parsed(path)) == []


@each_document
def test_every_make_pytest_and_python_command_shown_exists(path: Path) -> None:
    assert check_programs(parsed(path)) == []


@each_document
def test_every_clarion_environment_variable_shown_is_read_by_the_code(path: Path) -> None:
    assert check_variables(parsed(path)) == []


@each_document
def test_every_relative_link_points_to_an_existing_file_and_heading(path: Path) -> None:
    assert check_links(path, parsed(path)) == []


def test_the_readme_and_every_doc_are_checked() -> None:
    names = {str(path.relative_to(ROOT)) for path in DOCUMENTS}
    assert {"README.md", "docs/architecture.md", "docs/embedding.md"} <= names


SAMPLE = """\
# Sample

Start with `clarion serv` or `clarion tokens create --nmae x`, then:

    clarion users create
    make tset
    .venv/bin/pytest tests/docs/test_examples.py::test_no_such_test

```sh
curl -X DELETE http://127.0.0.1:8765/api/v1/clarification/pending
curl -s "$B/api/v1/clarificaton/pending"
```

Point your client at `http://127.0.0.1:8765/mcp/` and read [the guide](missing.md), the
[REST page](rest-api.md#no-such-heading) and `/api/v2/...`; set `CLARION_DATABSE_URL`.
See `tests/docs/test_examples.py::test_nothing_here`; send `POST /` to the inbox.

Fine: `clarion tokens create`, `POST /api/v1/clarification/{pending_id}/respond`, the inbox
at `http://localhost:8765/` (`GET /`), every `/api/v1/...` route, [REST](rest-api.md#rest-api),
a file in src/adapters/mcp/server.py, and `CLARION_AUTH`.
"""


def test_the_checks_catch_typos_and_let_prose_through() -> None:
    """The checks can fail: every planted mistake is reported, and nothing else."""
    document = Document.parse(SAMPLE)
    sample_path = ROOT / "docs" / "sample.md"
    checks: list[Callable[[], Problems]] = [
        lambda: check_clarion_commands(document),
        lambda: check_routes(document),
        lambda: check_programs(document),
        lambda: check_variables(document),
        lambda: check_links(sample_path, document),
    ]
    report = "\n".join(problem for check in checks for problem in check())
    planted = [
        "invalid choice: 'serv'",
        "unrecognized arguments: --nmae",
        "clarion users create: ",
        "make tset: no such target",
        "no test_no_such_test",
        "no test_nothing_here",
        "DELETE is not served at /api/v1/clarification/pending",
        "no route serves /api/v1/clarificaton/pending",
        "no route serves /mcp/",
        "POST is not served at /",
        "no route starts with /api/v2/...",
        "missing.md: no such file",
        "rest-api.md#no-such-heading: no such heading",
        "CLARION_DATABSE_URL is read nowhere",
    ]
    for mistake in planted:
        assert mistake in report
    assert len(report.splitlines()) == len(planted), report
