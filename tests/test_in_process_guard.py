"""The guard that keeps ``make quick`` in-process (issue #30): a test without one of the marks
that leave it out of ``make quick`` fails when it starts a server or a child process, naming
what it started; a marked test may. Each test here calls the guard's check itself (as the
``pytest_runtest_call`` hook would) and so consumes the note it made."""

from __future__ import annotations

import socket
import subprocess
from pathlib import Path

import pytest

from tests.conftest import NOT_QUICK, guard


def test_an_unmarked_test_that_listens_fails_naming_the_server(
    request: pytest.FixtureRequest,
) -> None:
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        address = server.getsockname()
    with pytest.raises(pytest.fail.Exception) as failure:
        guard.check(request.node)
    assert str(failure.value).startswith(
        f"{request.node.nodeid} started a server listening on {address!r} but is not marked server"
    )
    guard.check(request.node)  # the note is consumed: the hook's own check passes


def test_an_unmarked_test_that_starts_a_child_process_fails_naming_it(
    request: pytest.FixtureRequest,
) -> None:
    subprocess.run(["true"], check=True)
    with pytest.raises(pytest.fail.Exception, match=r"started a child process \['true'\] but"):
        guard.check(request.node)


def test_a_test_that_starts_nothing_passes(request: pytest.FixtureRequest) -> None:
    socket.socket().close()  # a socket that never listens is a client's
    guard.check(request.node)


@pytest.mark.server
def test_a_test_marked_server_may_listen(request: pytest.FixtureRequest) -> None:
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(1)
    guard.check(request.node)


def test_the_marks_that_leave_a_test_out_of_make_quick_are_the_makefiles() -> None:
    """The guard exempts exactly the marks ``make quick`` deselects."""
    makefile = Path(__file__).resolve().parents[1] / "Makefile"
    lines = makefile.read_text(encoding="utf-8").splitlines()
    quick = next(line for line in lines if line.startswith("QUICK_TESTS"))
    expression = quick.split('"')[1]
    assert expression == " and ".join(f"not {mark}" for mark in NOT_QUICK)
