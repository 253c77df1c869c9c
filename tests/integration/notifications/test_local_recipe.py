"""The local notifications recipe (docs/notifications.md, "Try it locally"; issue #30) runs as
written: its shell blocks, taken from the page, against a real ``clarion serve``, a real SMTP
sink and the page's own webhook receiver.

Only the ports change (free ones instead of 8765, 8025 and 8026), and the test's environment
adds ``CLARION_PORT`` and ``CLARION_URL`` for that port, plus a short worker poll interval.
Between the blocks the test waits for what the page tells the reader to look for.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest

from tests.sockets import free_port

ROOT = Path(__file__).resolve().parents[3]
PAGE = ROOT / "docs" / "notifications.md"
_BLOCK = re.compile(r"<!-- recipe: ([\w-]+) -->\n```sh\n(.*?)\n```", re.DOTALL)

pytestmark = pytest.mark.skipif(
    shutil.which("curl") is None or shutil.which("jq") is None,
    reason="the recipe uses curl and jq",
)


def recipe_blocks(text: str) -> dict[str, str]:
    """The page's recipe blocks by name, in the page's order."""
    return {name: body for name, body in _BLOCK.findall(text)}


def test_the_page_has_every_block_the_recipe_needs_in_order() -> None:
    assert list(recipe_blocks(PAGE.read_text(encoding="utf-8"))) == [
        "settings",
        "smtp-sink",
        "serve",
        "ask-by-mail",
        "answer-by-mail",
        "webhook-receiver",
        "ask-by-webhook",
        "answer-by-webhook",
    ]


def _until(condition: str) -> str:
    """Shell lines that wait (at most 20 s) for ``condition``, as the reader watches a terminal."""
    return (
        f"for _ in $(seq 200); do {condition} && break; sleep 0.1; done\n"
        f"{condition} || {{ echo 'timed out waiting for: {condition}' >&2; exit 1; }}\n"
    )


@pytest.fixture(name="terminals")
def terminals_fixture(tmp_path: Path) -> Iterator[list[subprocess.Popen[bytes]]]:
    started: list[subprocess.Popen[bytes]] = []
    yield started
    for process in started:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=10)


def test_the_local_notifications_recipe_runs_as_written(
    tmp_path: Path, terminals: list[subprocess.Popen[bytes]]
) -> None:
    port, smtp_port, hook_port = free_port(), free_port(), free_port()
    text = PAGE.read_text(encoding="utf-8")
    text = text.replace("8765", str(port)).replace("8025", str(smtp_port))
    blocks = recipe_blocks(text.replace("8026", str(hook_port)))
    env = {key: value for key, value in os.environ.items() if not key.startswith("CLARION_")}
    env.update(
        PATH=f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}",
        CLARION_PORT=str(port),
        CLARION_URL=f"http://127.0.0.1:{port}",
        CLARION_NOTIFY_POLL_S="0.2",
        CLARION_LOG_FORMAT="json",
    )

    def terminal(name: str, log: str) -> None:
        with open(tmp_path / log, "wb") as output:
            terminals.append(
                subprocess.Popen(
                    ["bash", "-c", blocks["settings"] + "\n" + blocks[name]],
                    cwd=tmp_path,
                    env=env,
                    stdout=output,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
            )

    terminal("smtp-sink", "terminal-1.log")
    terminal("serve", "serve.log")
    terminal("webhook-receiver", "hook.log")
    deadline = time.monotonic() + 30
    while True:
        try:
            if httpx2.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code == 200:
                break
        except httpx2.TransportError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)  # polling processes we started; there is no event to wait on

    script = "set -eu -o pipefail\n" + "\n".join(
        [
            blocks["settings"],
            blocks["ask-by-mail"],
            _until("grep -q /answer/ mail.log"),
            blocks["answer-by-mail"],
            _until("grep -q 'Subject: \\[Clarion\\] Answered' mail.log"),
            blocks["ask-by-webhook"],
            _until('grep -q "^answerable .*$PENDING" hook.log'),
            blocks["answer-by-webhook"],
            _until('grep -q "^resolved .*$PENDING" hook.log'),
            'echo "PENDING=$PENDING"',
        ]
    )
    shell = subprocess.run(
        ["bash", "-c", script], cwd=tmp_path, env=env, capture_output=True, timeout=120
    )
    out, err = shell.stdout.decode(), shell.stderr.decode()
    serve_log = (tmp_path / "serve.log").read_text(encoding="utf-8", errors="replace")
    assert shell.returncode == 0, f"{out}\n{err}\n{serve_log}"

    assert f"http://127.0.0.1:{port}/answer/" in out  # echo "$LINK"
    assert "Your answer was sent to the agent." in out
    assert re.search(r"answered +by .* via email\n +db: Which database\? → q1_opt1", out)
    pending = out.rsplit("PENDING=", 1)[1].strip()
    assert f"{pending}: answered (you answered it)" in out
    assert "signing secret: " in err  # the webhook route's, on stderr

    mail = (tmp_path / "mail.log").read_text(encoding="utf-8", errors="replace")
    assert "Subject: [Clarion] Question waiting: Which database?" in mail
    assert "Subject: [Clarion] Answered: Which database?" in mail
    assert "Subject: [Clarion] Question waiting: Ship today?" in mail
    hook = (tmp_path / "hook.log").read_text(encoding="utf-8")
    events = [line.split(" ", 1)[0] for line in hook.splitlines() if pending in line]
    assert events == ["answerable", "resolved"]
    resolved = next(line for line in hook.splitlines() if line.startswith("resolved"))
    assert '"status": "answered"' in resolved
    assert '"answers": []' in resolved  # no --include-answers: no answer text
    assert '"level": "error"' not in serve_log
