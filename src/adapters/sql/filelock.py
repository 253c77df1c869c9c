"""One Clarion process per SQLite file: an OS lock on ``<database>.lock`` beside the file.

The lock is a POSIX record lock (``fcntl.lockf``) on a small file next to the database, so the
operating system drops it when the holding process exits in any way, ``kill -9`` included —
there is no stale pid file to clean up. The holder writes its pid into the file, which is how a
refused process can name it. POSIX locks belong to a process, so several holders inside one
process (an embedding host building two services, a test restarting one) share the lock; it is
released when the last of them lets go.
"""

from __future__ import annotations

import fcntl
import os
import threading
from pathlib import Path

import attrs

from clarion.domain.errors import ClarionError


class DatabaseInUse(ClarionError):
    """Another process holds the SQLite file."""


@attrs.define
class _Held:
    fd: int
    count: int


_held: dict[Path, _Held] = {}
_guard = threading.Lock()


def lock_path(database: Path) -> Path:
    return database.with_name(database.name + ".lock")


def _holder(path: Path) -> str:
    try:
        text = path.read_text().strip()
    except OSError:
        return ""
    return text if text.isdigit() else ""


def acquire(database: str | os.PathLike[str]) -> Path:
    """Hold the lock of the SQLite file ``database``; returns the file's resolved path.

    Raises:
        DatabaseInUse: another process holds it (the message names the file and, when known,
            the holder's pid).
    """
    resolved = Path(database).resolve()
    path = lock_path(resolved)
    with _guard:
        held = _held.get(resolved)
        if held is not None:
            held.count += 1
            return resolved
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            pid = _holder(path)
            holder = f"process {pid}" if pid else "another process"
            raise DatabaseInUse(
                f"database file {resolved} is in use by {holder} (lock {path}); "
                "one Clarion process per SQLite file — stop it first, or use PostgreSQL "
                "for several processes"
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        _held[resolved] = _Held(fd=fd, count=1)
        return resolved


def release(resolved: Path) -> None:
    """Let go of one hold taken by :func:`acquire`; the last one unlocks the file."""
    with _guard:
        held = _held.get(resolved)
        if held is None:
            return
        held.count -= 1
        if held.count > 0:
            return
        del _held[resolved]
        # Closing the descriptor drops the process's POSIX lock on the file.
        os.close(held.fd)
