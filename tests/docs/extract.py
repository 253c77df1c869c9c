"""Reading Markdown the way a reader copies from it: code, shell commands, paths and links.

Only text a reader would run or follow is extracted: lines of fenced and indented code blocks,
inline code spans, HTTP paths of Clarion's own surfaces (wherever they appear), and Markdown
or HTML links. Prose is never parsed as a command.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator

import attrs

ROUTE_PREFIXES = ("/api/", "/mcp", "/openapi.json", "/healthz", "/static/")
HTTP_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"})
SHELL_OPERATORS = frozenset({"|", "||", "&&", ";", "&", ";;"})
REDIRECTIONS = frozenset({">", ">>", "<", ">&", "&>", "<<", "<<<", ">|", "&>>"})
COMMAND_PREFIXES = frozenset({"sudo", "env", "time", "exec", "nohup", "command"})
SHELL_LANGUAGES = frozenset({"", "sh", "bash", "shell", "console", "zsh"})

_FENCE = re.compile(r"^\s*(```|~~~)")
_INLINE_CODE = re.compile(r"(?<!`)`([^`\n]+)`(?!`)")
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_SUBSTITUTION = re.compile(r"\$\(([^()]*)\)")
_LOCAL_URL = re.compile(r"https?://(?:127\.0\.0\.1|localhost|\[::1\])(?::\d+)?(/[^\s`'\"<>)\]]*)?")
_PREFIXED = "|".join(
    re.escape(prefix) + ("" if prefix.endswith("/") else r"(?![\w-])") for prefix in ROUTE_PREFIXES
)
# A route path starts after a boundary a file path never has (so ``src/adapters/mcp`` and
# ``docs/mcp-tools.md`` are not routes) and ends where a path can no longer continue.
_ROUTE = re.compile(
    rf"(?:^|(?<=[\s`'\"(\[=]))(?:\$\{{?\w+\}}?|https?://[^\s/`'\"]+)?"
    rf"((?:{_PREFIXED})[^\s`'\"<>)\]]*)"
)
_METHOD = "|".join(sorted(HTTP_METHODS))
_ROOT_PATH = re.compile(rf"^(?:({_METHOD})\s+)?/$")  # `/`, `GET /`
_METHOD_BEFORE = re.compile(rf"\b({_METHOD})\s+`?$")
_LINK = re.compile(r"!?\[[^\]\n]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
_HTML_LINK = re.compile(r"<(?:img|a)\b[^>]*?\b(?:src|href)=\"([^\"]+)\"", re.IGNORECASE)
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")


@attrs.frozen
class Snippet:
    """A piece of a document a reader might copy: a code line or an inline code span."""

    text: str
    line: int
    in_block: bool  # True for code-block lines, False for inline code spans


@attrs.frozen
class PathMention:
    """An HTTP path of Clarion's surfaces, with the method written next to it, if any."""

    path: str
    method: str | None
    line: int


@attrs.frozen
class Document:
    """A Markdown document split into code-block lines and everything else."""

    lines: tuple[str, ...]
    code: frozenset[int]  # indexes of lines that belong to code blocks (fences included)
    foreign: frozenset[int]  # code lines in another language than the shell (```python)

    @classmethod
    def parse(cls, text: str) -> Document:
        lines = tuple(text.splitlines())
        code: set[int] = set()
        foreign: set[int] = set()
        fenced = False
        shell = True
        previous_blank = True
        indented = False
        for index, line in enumerate(lines):
            fence = _FENCE.match(line)
            if fence:
                code.add(index)
                if not fenced:
                    language = line[fence.end() :].strip().lower()
                    shell = language in SHELL_LANGUAGES
                fenced = not fenced
                continue
            if fenced:
                code.add(index)
                if not shell:
                    foreign.add(index)
                continue
            blank = not line.strip()
            indented = (
                line.startswith(("    ", "\t"))
                and not blank
                and (previous_blank or indented)
                and not _in_list_item(lines, index)
            )
            if indented:
                code.add(index)
            previous_blank = blank
        return cls(lines=lines, code=frozenset(code), foreign=frozenset(foreign))

    def prose_lines(self) -> Iterator[tuple[int, str]]:
        """Lines outside code blocks, with inline code spans blanked out."""
        for index, line in enumerate(self.lines):
            if index not in self.code:
                yield index + 1, _INLINE_CODE.sub(lambda m: " " * len(m.group(0)), line)

    def snippets(self) -> Iterator[Snippet]:
        """Shell code-block lines (continuations joined) and inline code spans."""
        pending = ""
        start = 0
        for index, line in enumerate(self.lines):
            if index in self.code:
                if _FENCE.match(line) or index in self.foreign:
                    continue
                if not pending:
                    start = index + 1
                if line.rstrip().endswith("\\"):
                    pending += line.rstrip()[:-1] + " "
                    continue
                yield Snippet(text=(pending + line).strip(), line=start, in_block=True)
                pending = ""
            else:
                for match in _INLINE_CODE.finditer(line):
                    yield Snippet(text=match.group(1).strip(), line=index + 1, in_block=False)

    def headings(self) -> list[str]:
        found = []
        for index, line in enumerate(self.lines):
            match = _HEADING.match(line)
            if match and index not in self.code:
                found.append(match.group(2))
        return found


def _in_list_item(lines: tuple[str, ...], index: int) -> bool:
    """An indented line continuing a list item is prose, not code."""
    for previous in range(index - 1, -1, -1):
        line = lines[previous]
        if not line.strip():
            continue
        if re.match(r"^\s*(?:[-*+]|\d+[.)])\s", line):
            return True
        if not line.startswith((" ", "\t")):
            return False
    return False


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"`|\*|_(?=\W)|(?<=\W)_|\[([^\]]*)\]\([^)]*\)", r"\1", heading).lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


# -- shell commands ----------------------------------------------------------------------------


def shell_commands(text: str) -> list[list[str]]:
    """The simple commands of one shell line: ``$(...)`` bodies first, then the line split at
    pipes and lists, each with leading assignments, wrappers and redirections removed.

    A line that is not valid shell (unbalanced quotes: prose or JSON) yields nothing.
    """
    text = text.removeprefix("$ ").strip()
    inner: list[str] = _SUBSTITUTION.findall(text)
    outer = _SUBSTITUTION.sub("SUBSTITUTED", text)
    commands: list[list[str]] = []
    for line in (*inner, outer):
        try:
            lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
            lexer.whitespace_split = True
            lexer.commenters = "#"
            tokens = list(lexer)
        except ValueError:
            continue
        current: list[str] = []
        for token in [*tokens, ";"]:
            if token in SHELL_OPERATORS:
                if current:
                    commands.append(_simple_command(current))
                current = []
            else:
                current.append(token)
    return [command for command in commands if command]


def _simple_command(tokens: list[str]) -> list[str]:
    words: list[str] = []
    skip_next = False
    for token in tokens:
        if skip_next:
            skip_next = False
            continue
        if token in REDIRECTIONS or set(token) <= set("<>&|"):
            if words and words[-1].isdigit():
                words.pop()
            skip_next = True
            continue
        words.append(token)
    while words and (_ASSIGNMENT.match(words[0]) or words[0] in COMMAND_PREFIXES):
        words.pop(0)
    return words


def program(command: list[str]) -> str:
    """The program's base name (``.venv/bin/clarion`` → ``clarion``)."""
    return command[0].rsplit("/", 1)[-1] if command else ""


# -- paths and links ---------------------------------------------------------------------------


def route_paths(document: Document) -> list[PathMention]:
    """Every HTTP path of Clarion's surfaces in the document, in code or prose."""
    found: list[PathMention] = []
    for index, line in enumerate(document.lines):
        for match in _LOCAL_URL.finditer(line):
            method = _method_before(line, match.start())
            found.append(PathMention(_clean(match.group(1) or "/"), method, index + 1))
        masked = _LOCAL_URL.sub(lambda m: " " * len(m.group(0)), line)
        for match in _ROUTE.finditer(masked):
            method = _method_before(masked, match.start())
            found.append(PathMention(_clean(match.group(1)), method, index + 1))
    for snippet in document.snippets():
        root = _ROOT_PATH.match(snippet.text)
        if root and not snippet.in_block:
            found.append(PathMention("/", root.group(1), snippet.line))
    return found


def _method_before(line: str, position: int) -> str | None:
    match = _METHOD_BEFORE.search(line[:position])
    return match.group(1) if match else None


def _clean(path: str) -> str:
    path = re.split(r"[?#]", path, maxsplit=1)[0]
    while path.endswith((".", ",", ";", ":", "!")) and not path.endswith(("...", "/.")):
        path = path[:-1]
    return path or "/"


def links(document: Document) -> list[tuple[int, str]]:
    """Targets of Markdown and HTML links outside code."""
    found: list[tuple[int, str]] = []
    for number, line in document.prose_lines():
        for pattern in (_LINK, _HTML_LINK):
            found.extend((number, match.group(1)) for match in pattern.finditer(line))
    return found
