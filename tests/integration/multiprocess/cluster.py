"""Several Clarion replicas, each its own operating-system process, over one PostgreSQL
database: started on free ports, ready when uvicorn says it is listening, always killed."""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import IO

import attrs

from clarion.adapters.sql import upgrade_database
from tests.sockets import free_port

ROOT = Path(__file__).resolve().parents[3]
STARTUP_TIMEOUT_S = 60.0
READY_LINE = "Uvicorn running on"
PR_SET_PDEATHSIG = 1


def serve_command(
    database_url: str, port: int, live_delivery: str = "postgres", launcher: Sequence[str] = ()
) -> list[str]:
    """How one replica is started: exactly the documented ``clarion serve`` (live delivery
    over PostgreSQL is the default on a PostgreSQL database; ``auto`` for a SQLite file),
    run by ``python [launcher] -m clarion`` (a benchmark's profiler goes in ``launcher``)."""
    return [
        sys.executable,
        *launcher,
        "-m",
        "clarion",
        "serve",
        "--database-url",
        database_url,
        "--port",
        str(port),
        "--live-delivery",
        live_delivery,
    ]


@attrs.define(eq=False)
class Replica:
    """One running ``clarion serve`` process."""

    name: str
    port: int
    process: subprocess.Popen[str]
    log_path: Path
    ready: threading.Event = attrs.field(factory=threading.Event)
    pump: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def kill(self) -> None:
        """``kill -9``: no shutdown, no goodbye."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
        self.process.wait(STARTUP_TIMEOUT_S)
        if self.pump is not None:
            self.pump.join(STARTUP_TIMEOUT_S)

    def cpu_seconds(self) -> float:
        """User plus system CPU time the process has used so far (Linux ``/proc``)."""
        fields = Path(f"/proc/{self.process.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")


def _pump(replica: Replica, stream: IO[str]) -> None:
    """Copy the replica's output to its log file; note when it is ready."""
    with stream, replica.log_path.open("w") as log:
        for line in stream:
            log.write(line)
            log.flush()
            if READY_LINE in line:
                replica.ready.set()
    replica.ready.set()  # the process ended: whoever waits learns it from poll()


# Looked up before any fork: the child only calls it (no loader work after fork).
_PRCTL = ctypes.CDLL(None).prctl if sys.platform == "linux" else None


def _die_with_parent() -> None:
    """Linux: the replica is killed if the test process dies without its teardown."""
    if _PRCTL is not None:
        _PRCTL(PR_SET_PDEATHSIG, signal.SIGKILL)


def start_replica(
    database_url: str,
    name: str,
    folder: Path,
    *,
    auth: bool = False,
    env: Mapping[str, str] | None = None,
    launcher: Sequence[str] = (),
) -> Replica:
    """Start ``clarion serve`` (authentication disabled unless ``auth``; ``env``: more
    settings, e.g. a benchmark's raised limits). A SQLite database gets in-process delivery."""
    port = free_port()
    mode = "enabled" if auth else "disabled"
    environment = {**os.environ, "CLARION_LOG_FORMAT": "json", "CLARION_AUTH": mode, **(env or {})}
    delivery = "auto" if database_url.startswith("sqlite") else "postgres"
    process = subprocess.Popen(
        serve_command(database_url, port, delivery, launcher),
        cwd=ROOT,
        env=environment,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
        preexec_fn=_die_with_parent,
    )
    assert process.stdout is not None
    replica = Replica(name=name, port=port, process=process, log_path=folder / f"{name}.log")
    replica.pump = threading.Thread(target=_pump, args=(replica, process.stdout), daemon=True)
    replica.pump.start()
    return replica


@contextmanager
def running_cluster(
    database_url: str,
    folder: Path,
    names: Sequence[str] = ("a", "b", "c"),
    *,
    auth: bool = False,
    env: Mapping[str, str] | None = None,
    launcher_of: Callable[[str], Sequence[str]] | None = None,
) -> Iterator[list[Replica]]:
    """Start one replica per name (after migrating once; ``launcher_of(name)``: its
    ``launcher``), yield them, and kill them all."""
    upgrade_database(database_url)
    replicas: list[Replica] = []
    try:
        replicas.extend(
            start_replica(
                database_url,
                name,
                folder,
                auth=auth,
                env=env,
                launcher=launcher_of(name) if launcher_of else (),
            )
            for name in names
        )
        for replica in replicas:
            if not replica.ready.wait(STARTUP_TIMEOUT_S) or replica.process.poll() is not None:
                raise RuntimeError(f"replica {replica.name} did not start:\n{replica.log()}")
        yield replicas
    finally:
        for replica in replicas:
            replica.kill()
