"""The README's commands, run as written (issue #30).

Every shell block of ``README.md`` is either run here, verbatim, by ``bash -e`` with the
machine's ``curl`` and ``jq`` against a real ``clarion serve``, or named in :data:`NOT_RUN` with
the reason; a block in neither (or an entry whose block is gone) fails
:func:`test_every_shell_block_of_the_readme_is_run_or_excused`.

:func:`test_the_readme_runs_as_written` plays a newcomer's terminals in README order, in a
temporary directory standing for the clone (its ``.venv`` is this interpreter's virtual
environment, so ``.venv/bin/clarion`` is the one under test and ``./clarion.db`` a fresh file):
the first terminal serves with ``make run``'s own serving command, the second runs the tour,
the third waits for the answer, then the server restarts with authentication, the tokens are
listed and revoked and a notification route is added. The only changes to the text are the
tour's ``B=`` line (a free port instead of 8765; the server and the CLI get the same port
through ``CLARION_PORT`` and ``CLARION_URL``) and the placeholder ``TOKEN_ID``, which the
reader copies from the list just above it. What each step prints is checked against the JSON
the README shows.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import attrs
import pytest

from tests.docs.extract import Document
from tests.sockets import free_port

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"

# Every shell block of the README, in order: a name, text it contains, and why the scenario does
# not run it (None: it does).
BLOCKS: tuple[tuple[str, str, str | None], ...] = (
    (
        "make",
        "make run     # creates .venv if missing",
        "sets up .venv and serves on port 8765: the scenario serves with the command `make -n run` "
        "prints last (asserted to be `.venv/bin/clarion serve`) on a free port; `make test` is "
        "what runs this test",
    ),
    ("setup", "B=http://127.0.0.1:8765", None),
    ("create", "WS=$(curl -s -X POST $B/api/v1/workspaces", None),
    ("ask", "PENDING=$(curl -s -X POST $B/api/v1/clarification/request", None),
    ("wait", "curl -s $B/api/v1/clarification/$PENDING/wait", None),
    ("list", "curl -s $B/api/v1/clarification/pending | jq", None),
    ("respond", '"custom_text": "Start small."}]}\' | jq', None),
    ("replay", "jq '{claimed, status, response}'", None),
    ("cli", '.venv/bin/clarion questions answer "$PENDING" --select db=q1_opt2', None),
    (
        "claude-ask",
        "claude mcp add --transport http clarion-ask",
        "needs Claude Code; the endpoint is tests/integration/mcp/test_agent.py's",
    ),
    (
        "claude-answer",
        "claude mcp add --transport http clarion http://127.0.0.1:8765/mcp",
        "needs Claude Code; /mcp and /mcp/session/<id> are tests/integration/mcp's",
    ),
    ("auth", ".venv/bin/clarion serve --auth enabled", None),
    ("revoke", ".venv/bin/clarion tokens revoke TOKEN_ID", None),
    (
        "postgres",
        "createdb -h 127.0.0.1 -U postgres clarion",
        "needs PostgreSQL's client tools and would create a database named clarion on a shared "
        "server; serving on PostgreSQL is tests/integration/cli/test_serve.py's and "
        "tests/integration/multiprocess's",
    ),
    ("notify", ".venv/bin/clarion notify add webhook:https://hooks.example/x", None),
)


@attrs.frozen
class Block:
    """A shell code block: its first line's number and its text."""

    line: int
    text: str

    @property
    def first(self) -> str:
        return self.text.splitlines()[0]


def shell_blocks(document: Document) -> list[Block]:
    """Fenced shell blocks and indented blocks, fences left out, in document order."""
    blocks: list[Block] = []
    lines: list[str] = []
    start = 0
    for index, line in enumerate([*document.lines, ""]):
        in_code = index in document.code and index not in document.foreign
        fence = line.lstrip().startswith(("```", "~~~"))
        if in_code and not fence:
            if not lines:
                start = index + 1
            lines.append(
                line[4:] if line.startswith("    ") and not _fenced(document, index) else line
            )
            continue
        if lines:
            blocks.append(Block(line=start, text="\n".join(lines)))
            lines = []
    return blocks


def _fenced(document: Document, index: int) -> bool:
    """Whether code line ``index`` is inside a fence (rather than an indented block)."""
    fences = sum(1 for line in document.lines[:index] if line.lstrip().startswith(("```", "~~~")))
    return fences % 2 == 1


def json_after(document: Document, line: int) -> Any:
    """The first ```json block after ``line`` (1-based), parsed."""
    for index in range(line, len(document.lines)):
        if document.lines[index].strip() == "```json":
            end = document.lines.index("```", index + 1)
            return json.loads("\n".join(document.lines[index + 1 : end]))
    raise AssertionError(f"no ```json block after README line {line}")


def inline_commands(document: Document, prefix: str) -> list[str]:
    """The inline code spans of the README line that starts with ``prefix``."""
    for line in document.lines:
        if line.startswith(prefix):
            return re.findall(r"`([^`]+)`", line)
    raise AssertionError(f"no README line starts with {prefix!r}")


def _readme() -> tuple[Document, dict[str, Block]]:
    """The README and its shell blocks by the names :data:`BLOCKS` gives them."""
    document = Document.parse(README.read_text(encoding="utf-8"))
    found = shell_blocks(document)
    listed = "\n".join(f"  README line {block.line}: {block.first}" for block in found)
    assert len(found) == len(BLOCKS), (
        f"the README has {len(found)} shell blocks, BLOCKS names {len(BLOCKS)}: run a new one in "
        f"test_the_readme_runs_as_written or say in BLOCKS why not\n{listed}"
    )
    for block, (name, text, _) in zip(found, BLOCKS, strict=True):
        assert text in block.text, f"README line {block.line}: expected the {name} block ({text})"
    return document, {name: block for block, (name, _, _) in zip(found, BLOCKS, strict=True)}


def test_every_shell_block_of_the_readme_is_run_or_excused() -> None:
    """Each shell block is the one :data:`BLOCKS` expects there; those not run say why."""
    _, blocks = _readme()
    run = {name for name, _, reason in BLOCKS if reason is None}
    assert set(blocks) == {name for name, _, _ in BLOCKS}
    assert run == SCENARIO_BLOCKS, "the scenario must run exactly the blocks BLOCKS runs"


# -- the scenario --------------------------------------------------------------------------------

MARK = "@@ readme step "


def _serving_command() -> str:
    """What ``make run`` serves with: the last command ``make -n run`` prints."""
    printed = subprocess.run(
        ["make", "-n", "-s", "-C", str(ROOT), "run"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    command = printed.splitlines()[-1]
    assert command == ".venv/bin/clarion serve", printed
    return command


def _step(name: str) -> str:
    return f"echo {shlex.quote(MARK + name)}"


def _until_healthy(log: str) -> str:
    """Wait for the server to answer /healthz (at most 30 s), printing its log if it never does."""
    return (
        "for _ in $(seq 300); do curl -sf $B/healthz >/dev/null && break; sleep 0.1; done; "
        f"curl -sf $B/healthz >/dev/null || {{ cat {log}; exit 1; }}"
    )


# Ctrl-C in the first terminal; a script's background job ignores SIGINT, so SIGTERM, which
# `clarion serve` takes the same way.
STOP_FIRST_TERMINAL = "kill -TERM $FIRST_TERMINAL; wait $FIRST_TERMINAL || true"

# The blocks the scenario runs (all but those BLOCKS excuses).
SCENARIO_BLOCKS = frozenset(
    {
        "setup",
        "create",
        "ask",
        "wait",
        "list",
        "respond",
        "replay",
        "cli",
        "auth",
        "revoke",
        "notify",
    }
)


def _script(blocks: dict[str, Block], document: Document, base: str, serve: str) -> str:
    """The terminals' commands as one ``bash -e`` script: the README's text, with the lines
    that stand for the reader (starting and stopping servers, copying an id) between them."""
    text = {name: block.text for name, block in blocks.items()}
    setup = text["setup"].replace("B=http://127.0.0.1:8765", f"B={base}", 1)
    assert setup != text["setup"]
    *auth, auth_serve = text["auth"].splitlines()
    assert auth_serve.startswith(".venv/bin/clarion serve --auth enabled")
    export, shell_list = inline_commands(document, "- Shell:")[:2]
    (expiring,) = inline_commands(document, "`.venv/bin/clarion tokens create")[:1]
    listing, revoke, deactivate = text["revoke"].splitlines()
    assert revoke.count("TOKEN_ID") == 1
    return "\n".join(
        [
            # The first terminal: make run.
            f"{serve} > serve.log 2>&1 &",
            "FIRST_TERMINAL=$!",
            # The second terminal: the tour.
            _step("setup"),
            setup,
            _until_healthy("serve.log"),
            _step("create"),
            text["create"],
            _step("ask"),
            text["ask"],
            # The third terminal, with the same B and PENDING.
            "(",
            text["wait"],
            ") > wait.out &",
            "THIRD_TERMINAL=$!",
            _step("list"),
            text["list"],
            _step("respond"),
            text["respond"],
            "wait $THIRD_TERMINAL",
            _step("waited"),
            "cat wait.out; echo",
            _step("replay"),
            text["replay"],
            _step("cli"),
            text["cli"],
            # Authentication: make run stops; the block's last line is the first terminal's.
            STOP_FIRST_TERMINAL,
            _step("auth"),
            *auth,
            # A group, so that the line's own comment stays as written.
            "{",
            auth_serve,
            "} > serve-auth.log 2>&1 &",
            "FIRST_TERMINAL=$!",
            _until_healthy("serve-auth.log"),
            'echo "alice=$ALICE token=${TOKEN%%_*}"',
            _step("rest"),
            inline_commands(document, "- REST:")[0],
            "echo",
            _step("unauthenticated"),
            "curl -s $B/api/v1/clarification/pending; echo",
            _step("shell"),
            export,
            shell_list,
            _step("expiring"),
            "EXPIRING=$(",
            expiring,
            ")",
            'echo "${EXPIRING%%_*}"',
            # The reader copies TOKEN_ID, the laptop token's id, from the list printed first.
            _step("tokens"),
            "{",
            listing,
            "} | tee tokens.txt",
            "TOKEN_ID_READ=$(awk '$NF == \"laptop\" {print $1}' tokens.txt)",
            _step("revoke"),
            revoke.replace("TOKEN_ID", '"$TOKEN_ID_READ"'),
            _step("revoked"),
            'curl -s -H "Authorization: Bearer $TOKEN" $B/api/v1/clarification/pending; echo',
            'curl -s -H "Authorization: Bearer $EXPIRING" $B/api/v1/clarification/pending; echo',
            _step("deactivate"),
            deactivate,
            _step("deactivated"),
            'curl -s -H "Authorization: Bearer $EXPIRING" $B/api/v1/clarification/pending; echo',
            _step("notify"),
            text["notify"],
            STOP_FIRST_TERMINAL,
            _step("end"),
        ]
    )


def _steps(stdout: str) -> dict[str, str]:
    steps: dict[str, str] = {}
    name = ""
    for line in stdout.splitlines():
        if line.startswith(MARK):
            name = line.removeprefix(MARK)
            steps[name] = ""
        elif name:
            steps[name] += line + "\n"
    return steps


VARYING = frozenset(
    {"pending_id", "task_id", "session_id", "created_at", "age_seconds", "responded_at"}
)


def assert_like(shown: Any, got: Any, where: str = "$") -> None:
    """``got`` has exactly the keys ``shown`` has, at every level, and the same values except
    ids and times, whose type must match."""
    if isinstance(shown, dict):
        assert isinstance(got, dict), (where, shown, got)
        assert set(got) == set(shown), (where, shown, got)
        for key, value in shown.items():
            if key in VARYING:
                assert type(got[key]) is type(value), (f"{where}.{key}", value, got[key])
            else:
                assert_like(value, got[key], f"{where}.{key}")
    elif isinstance(shown, list):
        assert isinstance(got, list), (where, shown, got)
        assert len(got) == len(shown), (where, shown, got)
        for index, (one, other) in enumerate(zip(shown, got, strict=True)):
            assert_like(one, other, f"{where}[{index}]")
    else:
        assert got == shown, (where, shown, got)


@pytest.mark.server
def test_the_readme_runs_as_written(tmp_path: Path) -> None:
    for tool in ("bash", "curl", "jq", "make"):
        assert shutil.which(tool), f"the README's commands need {tool}: install it"
    clarion = Path(sys.prefix) / "bin" / "clarion"
    assert clarion.exists(), f"{clarion} is missing: install Clarion into this environment"
    document, blocks = _readme()
    (tmp_path / ".venv").symlink_to(sys.prefix)
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    environment = {k: v for k, v in os.environ.items() if not k.startswith("CLARION_")}
    environment |= {"CLARION_PORT": str(port), "CLARION_URL": base}
    script = tmp_path / "readme.sh"
    script.write_text(_script(blocks, document, base, _serving_command()), encoding="utf-8")

    # Its own process group: whatever it leaves running (a server, on failure) is ended with it.
    bash = subprocess.Popen(
        ["bash", "-e", str(script)],
        cwd=tmp_path,
        env=environment,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        stdout, stderr = bash.communicate(timeout=180)
    except subprocess.TimeoutExpired:
        os.killpg(bash.pid, signal.SIGKILL)
        stdout, stderr = bash.communicate()
        stderr += "\n(the script did not finish within 180 s)"
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(bash.pid, signal.SIGKILL)
        bash.wait()
    logs = "".join(
        f"\n--- {log.name}\n{log.read_text()}" for log in sorted(tmp_path.glob("serve*.log"))
    )
    assert bash.returncode == 0, f"{stdout}\n--- stderr\n{stderr}{logs}"
    steps = _steps(stdout)
    assert "end" in steps, stdout

    listed = json.loads(steps["list"])
    assert_like(json_after(document, blocks["list"].line), listed)
    answered = json.loads(steps["respond"])
    assert_like(json_after(document, blocks["respond"].line), answered)
    pending_id = listed["bundles"][0]["pending_id"]
    assert answered["response"]["pending_id"] == pending_id

    # The third terminal got the same answers, with empty fields left out.
    waited = json.loads(steps["waited"])
    assert waited == {
        "pending_id": pending_id,
        "answers": answered["response"]["answers"],
        "responded_at": answered["response"]["responded_at"],
    }
    # "claimed": false, with the winner's status and response byte for byte.
    assert json.loads(steps["replay"]) == {
        "claimed": False,
        "status": "answered",
        "response": answered["response"],
    }
    assert "already settled" in steps["cli"] or "q1_opt1" in steps["cli"], steps["cli"]

    assert "already settled" in steps["cli"], steps["cli"]
    assert '  db: q1_opt1, "Start small."' in steps["cli"], steps["cli"]

    assert steps["auth"].splitlines()[-1].endswith(" token=clarion"), steps["auth"]
    assert json.loads(steps["rest"]) == {"bundles": [], "count": 0, "next_cursor": ""}
    refused = {"error": "authentication required"}
    assert json.loads(steps["unauthenticated"]) == refused
    assert steps["shell"] == "No pending questions.\n"
    assert steps["expiring"] == "clarion\n"
    assert re.search(r"^\S+  pat  active  .*  laptop$", steps["tokens"], re.MULTILINE)
    assert steps["revoke"].startswith("revoked "), steps["revoke"]
    # That token stops at once; her other token works until she is deactivated.
    laptop, other = steps["revoked"].splitlines()
    assert json.loads(laptop) == refused
    assert json.loads(other)["count"] == 0
    assert steps["deactivate"].startswith("deactivated "), steps["deactivate"]
    assert json.loads(steps["deactivated"]) == refused
    assert "webhook:https://hooks.example/x" in steps["notify"], steps["notify"]
