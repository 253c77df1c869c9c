"""``benchmarks/middleware_bench.py`` runs whole at a small size (issue #35's CPU per request
outside the store): every kind of request is answered as it should be before anything is timed
(the bench raises otherwise), with authentication disabled and with a personal access token,
and it prints one figure per kind."""

from __future__ import annotations

import logging

import pytest
import structlog

from benchmarks.middleware_bench import KINDS, main


@pytest.mark.parametrize("auth", [False, True])
def test_every_kind_is_timed(auth: bool, capsys: pytest.CaptureFixture[str]) -> None:
    config, handlers = structlog.get_config(), list(logging.getLogger().handlers)
    figures = main(["--requests", "3", "--rounds", "2", *(["--auth"] if auth else [])])
    assert [figure.kind for figure in figures] == list(KINDS)
    for figure in figures:
        assert 0 < figure.low_us <= figure.median_us
        assert figure.rounds == 2
    printed = capsys.readouterr().out
    assert ("auth enabled" if auth else "auth disabled") in printed
    assert all(kind in printed for kind in KINDS)
    # The bench logged as `clarion serve` does, and left the logging configuration as it was.
    assert structlog.get_config() == config
    assert logging.getLogger().handlers == handlers


def test_bad_flags_are_named(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["--rounds", "0"])
    assert "--requests and --rounds must be at least 1" in capsys.readouterr().err
