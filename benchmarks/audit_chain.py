"""The audit chain's cost (issue #34): claims per second with and without it, the answer path's
CPU per answer with and without it, and ``audit verify`` time for a long chain.

In one run, on a fresh SQLite file and (with ``CLARION_TEST_POSTGRES_URL`` or
``--postgres-url``) a scratch PostgreSQL database:

- **claims/s, one caller**: one claim with the chain, then one without (a repository built
  with ``audit_chain=False``), alternating over ``--claims`` bundles, so load from other
  processes falls on both alike; also the calling thread's CPU per claim, each way;
- **claims/s, ``--threads`` callers** at once, every bundle in ONE workspace (the worst case:
  every claim waits for the same chain head), with and then without the chain; then the same
  over bundles spread across 8 workspaces (8 heads);
- **CPU per answer** (``benchmarks.answer_path_bench.measure``: REST answers with a bearer
  token and a cookie, auth enabled) with the chain and without it (its append skipped);
- **``audit verify``** over a chain of ``--records`` records (written in bulk with the
  domain's own link), timed through the use case the CLI runs.

Figures only; nothing is asserted. Run small to check it works::

    .venv/bin/python -m benchmarks.audit_chain --claims 100 --records 2000 --answers 20
"""

from __future__ import annotations

import argparse
import logging
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any
from unittest import mock

import attrs
import sqlalchemy as sa
import structlog
from sqlalchemy.engine import Connection, Engine

from benchmarks import answer_path_bench
from benchmarks.scratch import add_backend_flags, chosen_backends
from benchmarks.sql_bench import PENDING_SESSIONS, QUESTIONS, Loader, settle
from clarion.adapters.sql import SqlClaimRepository, upgrade_database
from clarion.adapters.sql.audit import _SCOPE, SqlAuditChain
from clarion.adapters.sql.schema import audit_chain, audit_heads, tasks
from clarion.adapters.system import SystemClock, UuidIds
from clarion.app.usecases.audit import AuditLog
from clarion.domain.audit_chain import (
    ChainEntry,
    ChainHead,
    ChainRecord,
    next_record,
    resolution_body,
)
from clarion.domain.model import ANSWERED, Answer

RESPONSES = {q.id: Answer(question_id=q.id, selected_options=(f"{q.id}_opt1",)) for q in QUESTIONS}
INSERT_CHUNK = 5_000


SPREAD = [f"ws-{n}" for n in range(8)]  # the workspaces of the spread run


def _bundles(loader: Loader, count: int, prefix: str = "") -> tuple[list[str], list[str]]:
    """``count`` bundles in no workspace, and ``count`` spread over :data:`SPREAD` (one in
    seven of their sessions in none); with ``prefix``, every workspace id (the empty one too)
    gets it, so these bundles' chains are apart from all others. One loader writes every
    bundle of a database, so ids never repeat."""
    owners = loader.sessions(PENDING_SESSIONS, [""])
    spread_owners = loader.sessions(PENDING_SESSIONS, SPREAD)
    if prefix:
        task_ids = [task for task, _, _ in owners + spread_owners]
        with loader.engine.begin() as connection:
            connection.execute(
                sa.update(tasks)
                .where(tasks.c.id.in_(task_ids))
                .values(workspace_id=prefix + tasks.c.workspace_id)
            )
    single = loader.bundles(count, owners, answered=False)
    spread = loader.bundles(count, spread_owners, answered=False)
    settle(loader.engine)
    return single, spread


# The design not taken (PostgreSQL only), for comparison: no head row; read the chain's last
# record, link to it and insert under the (scope, seq) primary key inside a savepoint; a racing
# insert of the same seq waits for the other transaction, fails, and retries from a new read.
_LAST_RECORD = sa.text(f"""
SELECT target.scope, last.seq, last.hash
FROM (SELECT {_SCOPE} AS scope) AS target
LEFT JOIN LATERAL (
    SELECT c.seq, c.hash FROM audit_chain AS c WHERE c.scope = target.scope
    ORDER BY c.seq DESC LIMIT 1
) AS last ON true
""")


class UniqueRetryClaims(SqlClaimRepository):
    """The claim with the unique-constraint-and-retry append instead of the head row (never
    folded into the claim's statement)."""

    retries = 0

    def _folds_append(self, *_args: Any) -> bool:
        return False

    def _chain_resolution(self, connection: Connection, *args: Any) -> None:
        entry = ChainEntry.resolution(*args)
        params = {"task_id": entry.task_id, "session_id": entry.session_id}
        while True:
            found = connection.execute(_LAST_RECORD, params).one()
            scope = str(found.scope)
            head = ChainHead(scope, int(found.seq), found.hash) if found.seq is not None else None
            record = next_record(head, scope, entry.pending_id, entry.body)
            try:
                with connection.begin_nested():
                    connection.execute(sa.insert(audit_chain).values(attrs.asdict(record)))
                return
            except sa.exc.IntegrityError:
                UniqueRetryClaims.retries += 1


def _claimer(
    engine: Engine, *, chained: bool, kind: type[SqlClaimRepository] = SqlClaimRepository
) -> Callable[[str], None]:
    claims = kind(engine, SystemClock(), UuidIds(), audit_chain=chained)

    def claim(pending_id: str) -> None:
        if not claims.complete_active_bundle(pending_id, ANSWERED, RESPONSES).claimed:
            raise RuntimeError(f"claim of {pending_id} lost")

    return claim


@attrs.frozen
class Alternating:
    """One caller's claims, with the chain and without: per second (wall) and the calling
    thread's CPU per claim (``time.thread_time``: on SQLite the database's work too, it runs
    in the thread; on PostgreSQL the client's only) — the CPU figure moves less with load from
    other processes than the wall one."""

    chained_per_s: float
    bare_per_s: float
    chained_cpu_us: float
    bare_cpu_us: float


def claims_alternating(engine: Engine, pending_ids: list[str]) -> Alternating:
    """One claim of each in turn over ``pending_ids``."""
    count = len(pending_ids) // 2
    claimers = (_claimer(engine, chained=True), _claimer(engine, chained=False))
    warm = min(20, count // 10)
    for index in range(warm):
        for side, claim in enumerate(claimers):
            claim(pending_ids[2 * index + side])
    wall, cpu = [0.0, 0.0], [0.0, 0.0]
    for index in range(warm, count):
        for side, claim in enumerate(claimers):
            started, thread_started = time.perf_counter(), time.thread_time()
            claim(pending_ids[2 * index + side])
            cpu[side] += time.thread_time() - thread_started
            wall[side] += time.perf_counter() - started
    timed = count - warm
    return Alternating(timed / wall[0], timed / wall[1], cpu[0] / timed * 1e6, cpu[1] / timed * 1e6)


ROUNDS = 5  # concurrent runs alternate with and without the chain, so load falls on both


def _concurrent(claim: Callable[[str], None], pending_ids: list[str], threads: int) -> float:
    """Seconds ``threads`` callers take to claim ``pending_ids`` between them."""
    shares = [pending_ids[n::threads] for n in range(threads)]
    barrier = threading.Barrier(threads + 1)
    errors: list[BaseException] = []

    def run(share: list[str]) -> None:
        barrier.wait()
        try:
            for pending_id in share:
                claim(pending_id)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    workers = [threading.Thread(target=run, args=(share,)) for share in shares]
    for worker in workers:
        worker.start()
    barrier.wait()
    started = time.perf_counter()
    for worker in workers:
        worker.join()
    elapsed = time.perf_counter() - started
    if errors:
        raise errors[0]
    return elapsed


def claims_concurrent(
    engine: Engine,
    pending_ids: list[str],
    threads: int,
    other: Callable[[str], None] | None = None,
) -> tuple[float, float]:
    """(claims/s with the chain, without — or with ``other`` instead), ``threads`` callers over
    ``pending_ids`` (half each), in :data:`ROUNDS` alternating rounds."""
    count = len(pending_ids) // 2
    with_chain = _claimer(engine, chained=True)
    without = other if other is not None else _claimer(engine, chained=False)
    chained_seconds = bare_seconds = 0.0
    size = count // ROUNDS
    for round_ in range(ROUNDS):
        chunk = slice(round_ * size, (round_ + 1) * size)
        chained_seconds += _concurrent(with_chain, pending_ids[:count][chunk], threads)
        bare_seconds += _concurrent(without, pending_ids[count:][chunk], threads)
    return ROUNDS * size / chained_seconds, ROUNDS * size / bare_seconds


def _chain_records(count: int) -> Iterator[list[dict[str, Any]]]:
    head: ChainHead | None = None
    at = SystemClock().now()
    batch: list[dict[str, Any]] = []
    for n in range(count):
        pending_id = f"bench-{n:09d}"
        body = resolution_body(pending_id, ANSWERED, RESPONSES, None, at)
        record: ChainRecord = next_record(head, "", pending_id, body)
        head = ChainHead("", record.seq, record.hash)
        batch.append(
            {"scope": "", "seq": record.seq, "pending_id": pending_id}
            | {"prev_hash": record.prev_hash, "hash": record.hash, "body": body}
        )
        if len(batch) == INSERT_CHUNK:
            yield batch
            batch = []
    if batch:
        yield batch
    if head is not None:
        yield [{"__head__": head}]


def verify_seconds(engine: Engine, count: int) -> float:
    """Seconds ``audit verify`` takes over a fresh chain of ``count`` records."""
    with engine.begin() as connection:
        connection.execute(sa.delete(audit_chain))
        connection.execute(sa.delete(audit_heads))
        for batch in _chain_records(count):
            if "__head__" in batch[0]:
                head: ChainHead = batch[0]["__head__"]
                values = {"scope": "", "seq": head.seq, "prev_hash": "", "hash": head.hash}
                # On SQLite the head trigger (migration 0020) has already moved it; set it
                # the same way on both databases.
                connection.execute(sa.delete(audit_heads))
                connection.execute(sa.insert(audit_heads).values(values))
            else:
                connection.execute(sa.insert(audit_chain), batch)
    settle(engine)
    started = time.perf_counter()
    (report,) = AuditLog(SqlAuditChain(engine)).verify("")
    elapsed = time.perf_counter() - started
    if not report.intact or report.records != count:
        raise RuntimeError(f"unexpected verification: {report}")
    return elapsed


@contextmanager
def _without_chain() -> Iterator[None]:
    """The answer path with every claim repository built with ``audit_chain=False`` (the
    switch the REST harness does not expose): no append, folded or not."""
    build = SqlClaimRepository.__init__

    def without(self: SqlClaimRepository, *args: Any, **kwargs: Any) -> None:
        build(self, *args, **{**kwargs, "audit_chain": False})

    with mock.patch.object(SqlClaimRepository, "__init__", without):
        yield


def cpu_per_answer(make: Callable[[], Any], answers: int) -> dict[str, float]:
    """Median CPU ms per bearer-token answer: with the chain, without (each on a fresh
    database of its own, so both start alike)."""
    with make() as engine:
        with_chain = answer_path_bench.measure(engine, answers)["bearer token"]["cpu_ms_median"]
    with make() as engine, _without_chain():
        without = answer_path_bench.measure(engine, answers)["bearer token"]["cpu_ms_median"]
    return {"with": with_chain, "without": without}


def _run(name: str, make: Callable[[], Any], args: argparse.Namespace) -> None:
    with make() as engine:
        upgrade_database(engine)
        loader = Loader(engine)
        single, spread = _bundles(loader, 4 * args.claims)
        half = 2 * args.claims
        one = claims_alternating(engine, single[:half])
        print(
            f"{name}: one caller: {one.chained_per_s:,.0f} claims/s with the chain, "
            f"{one.bare_per_s:,.0f} without; CPU per claim {one.chained_cpu_us:,.0f} µs with, "
            f"{one.bare_cpu_us:,.0f} µs without"
        )
        for where, pending_ids in (("one workspace", single[half:]), ("8 workspaces", spread)):
            chained, bare = claims_concurrent(engine, pending_ids[:half], args.threads)
            print(
                f"{name}: {args.threads} callers, {where}: {chained:,.0f} claims/s with the "
                f"chain, {bare:,.0f} without",
                flush=True,
            )
        if name == "postgresql":
            _compare_unique_retry(loader, args)
        seconds = verify_seconds(engine, args.records)
        print(
            f"{name}: audit verify of {args.records:,} records: {seconds:.2f} s "
            f"({args.records / seconds:,.0f} records/s)",
            flush=True,
        )
    cpu = cpu_per_answer(make, args.answers)
    print(
        f"{name}: CPU per answer (bearer token, median of {args.answers}): "
        f"{cpu['with']:.2f} ms with the chain, {cpu['without']:.2f} ms without",
        flush=True,
    )


def _compare_unique_retry(loader: Loader, args: argparse.Namespace) -> None:
    """The head row against the unique constraint with retries, alternating, each on fresh
    bundles whose chains the other never writes (the retrying one's workspaces prefixed)."""
    engine = loader.engine
    single, spread = _bundles(loader, args.claims)
    single_u, spread_u = _bundles(loader, args.claims, prefix="u:")
    unique = _claimer(engine, chained=True, kind=UniqueRetryClaims)
    for where, pending_ids in (
        ("one workspace", single + single_u),
        ("8 workspaces", spread + spread_u),
    ):
        head_row, retried = claims_concurrent(engine, pending_ids, args.threads, unique)
        print(
            f"postgresql: {args.threads} callers, {where}: {head_row:,.0f} claims/s with the "
            f"head row, {retried:,.0f} with a unique key and retries "
            f"({UniqueRetryClaims.retries} retries so far)",
            flush=True,
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--claims", type=int, default=1000)
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument("--answers", type=int, default=200)
    parser.add_argument("--records", type=int, default=100_000)
    add_backend_flags(parser)
    args = parser.parse_args(argv)
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    for name, make in chosen_backends(args):
        _run(name, make, args)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
