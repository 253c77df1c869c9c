"""Issue #13: ``/healthz`` checks the database on a connection and a thread of its own, so a
pool and a worker pool filled by other requests do not make a liveness probe fail."""

from __future__ import annotations

import threading
from pathlib import Path

import anyio
from sqlalchemy.engine import Connection
from sqlalchemy.pool import QueuePool
from starlette.testclient import TestClient

from clarion.app.root.compose import build_clarion
from clarion.app.root.settings import Settings


def test_healthz_answers_ok_while_every_pooled_connection_and_worker_is_taken(
    tmp_path: Path,
) -> None:
    clarion = build_clarion(Settings(database_url=f"sqlite:///{tmp_path / 'busy.db'}"))
    engine = clarion.engine
    assert engine is not None
    pool = engine.pool
    assert isinstance(pool, QueuePool)
    held: list[Connection] = []
    release = threading.Event()
    limiter = clarion.services.limiter
    try:
        with TestClient(clarion.asgi_app) as client:
            # Every connection the pool may hand out, taken (start-up recovery has run).
            overflow: int = pool._max_overflow
            held.extend(engine.connect() for _ in range(pool.size() + overflow))
            busy = threading.Semaphore(0)

            def occupy() -> None:
                busy.release()
                release.wait(60)

            async def fill_workers() -> None:
                async with anyio.create_task_group() as tasks:
                    for _ in range(int(limiter.total_tokens)):
                        tasks.start_soon(lambda: anyio.to_thread.run_sync(occupy, limiter=limiter))

            assert client.portal is not None
            filling = client.portal.start_task_soon(fill_workers)
            for _ in range(int(limiter.total_tokens)):
                assert busy.acquire(timeout=30)
            assert limiter.available_tokens == 0
            response = client.get("/healthz")
            assert response.status_code == 200, response.text
            assert response.json() == {"status": "ok", "database": "ok"}
            release.set()
            filling.result(timeout=30)
    finally:
        release.set()
        for connection in held:
            connection.close()
        clarion.close()
