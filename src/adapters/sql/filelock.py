"""One Clarion process per SQLite file: an OS lock on the database file itself, and a pid file
``<database>.lock`` beside it.

The lock that decides is an ``flock`` on the database file, so it belongs to the file — its
inode — and not to the name it was opened by: two paths to one file (a hard link, a symlink, a
bind mount) lock the same thing (#29). The operating system drops it when the holding process
exits in any way, ``kill -9`` included — there is no stale lock to clean up. On Linux an
``flock`` and SQLite's own POSIX record locks on the same file never interact (on a network
filesystem they may; SQLite does not support those anyway).

Beside it, the holder takes a POSIX lock (``fcntl.lockf``) on ``<database>.lock`` and writes its
pid there, which is how a refused process can name it (and how a Clarion that predates the
``flock`` is still kept out). A process holds each file once, however many names or services
it reaches it by (an embedding host building two services, a test restarting one): holds are
counted per file (``st_dev``, ``st_ino``), and the last release unlocks.

Closing any descriptor of a file drops every POSIX lock the process holds on it — SQLite's
included — so the database file is opened only when this process does not hold it yet, and
closed at the last release, after the service has closed its connections.
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


FileKey = tuple[int, int]  # (st_dev, st_ino)


@attrs.define
class _Held:
    database_fd: int
    pid_fd: int
    count: int


_held: dict[FileKey, _Held] = {}
_keys: dict[Path, FileKey] = {}
_guard = threading.Lock()


def lock_path(database: Path) -> Path:
    return database.with_name(database.name + ".lock")


def _holder(path: Path) -> str:
    try:
        text = path.read_text().strip()
    except OSError:
        return ""
    return text if text.isdigit() else ""


def _in_use(resolved: Path, path: Path) -> DatabaseInUse:
    pid = _holder(path)
    holder = f"process {pid}" if pid else "another process"
    return DatabaseInUse(
        f"database file {resolved} is in use by {holder} (lock {path}); "
        "one Clarion process per SQLite file — stop it first, or use PostgreSQL "
        "for several processes"
    )


def _key(path: Path) -> FileKey | None:
    try:
        found = os.stat(path)
    except FileNotFoundError:
        return None
    return found.st_dev, found.st_ino


def acquire(database: str | os.PathLike[str]) -> Path:
    """Hold the lock of the SQLite file ``database`` (created empty, readable by its owner
    only, when missing); returns the file's resolved path, to pass to :func:`release`.

    Raises:
        DatabaseInUse: another process holds the file, by this name or any other (the message
            names the file and, when known, the holder's pid).
    """
    resolved = Path(database).resolve()
    path = lock_path(resolved)
    with _guard:
        key = _key(resolved)
        held = _held.get(key) if key is not None else None
        if held is not None and key is not None:
            held.count += 1
            _keys[resolved] = key
            return resolved
        database_fd = os.open(resolved, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(database_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(database_fd)
            raise _in_use(resolved, path) from None
        pid_fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.lockf(pid_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(pid_fd)
            os.close(database_fd)
            raise _in_use(resolved, path) from None
        os.ftruncate(pid_fd, 0)
        os.pwrite(pid_fd, f"{os.getpid()}\n".encode(), 0)
        stat = os.fstat(database_fd)
        key = (stat.st_dev, stat.st_ino)
        _held[key] = _Held(database_fd=database_fd, pid_fd=pid_fd, count=1)
        _keys[resolved] = key
        return resolved


def release(resolved: Path) -> None:
    """Let go of one hold taken by :func:`acquire`; the last one on the file unlocks it (call
    it after the service's connections to the file are closed)."""
    with _guard:
        key = _keys.get(resolved)
        held = _held.get(key) if key is not None else None
        if held is None or key is None:
            return
        held.count -= 1
        if held.count > 0:
            return
        del _held[key]
        for name in [name for name, value in _keys.items() if value == key]:
            del _keys[name]
        # Closing the descriptors drops the flock and the pid file's POSIX lock.
        os.close(held.pid_fd)
        os.close(held.database_fd)
