"""The inbox's cost at the receiver, and how fast workers drain it.

    python benchmarks/receiver.py                     # 5,000 notifications a run
    python benchmarks/receiver.py --events 1000 --latency-count 200

Receivers are processes of their own (``_inbox_process.py``), each an EventRouter on a
loopback port; the sender is this process, delivering signed notifications. PostgreSQL is
the ``pgserver`` wheel's server (a fresh database, on its Unix socket); SQLite a file in a
temporary folder. Four measures, in one run:

- **accept latency**: one receiver, one delivery at a time, each timed; the median of a
  bare receiver (it only verifies and answers) against one that commits each
  notification into the inbox first (SQLite, PostgreSQL). Rounds interleave them, so
  drift on a shared machine hits all alike. PostgreSQL is measured twice: as it comes
  (each commit waits for the WAL on disk) and, for reference, on a database with
  ``synchronous_commit = off`` (a server crash may lose the last commits: not the
  inbox's default), which shows what the disk's flush costs.
- **throughput**: notifications/s accepted, ``--concurrency`` deliveries in flight: the
  bare receiver (1 and 3 processes), the SQLite inbox (1 process) and the PostgreSQL
  inbox (3 processes).
- **drain**: the events the PostgreSQL receivers stored, handled by 1 worker process,
  then (a fresh batch) by 3, each ``--worker-concurrency`` at once, with a handler that
  does nothing: events/s from ``go`` until nothing is pending.

Targets: the PostgreSQL inbox with 3 receivers accepts >= 2,000 notifications/s; the
inbox's median accept latency <= 3x the bare receiver's.

``--paired N`` measures issue 43's target alone: N interleaved pairs (at least 5), each
a run of ``--events`` notifications, ``--concurrency`` in flight, into 3 bare receivers
and into 3 PostgreSQL inbox receivers (so one commit serves the notifications that
arrive together), in alternating order; each delivery is timed. It prints, per pair, the
median accept latency of each and their ratio, the inbox's notifications/s, and then
the median over the pairs: target ratio <= 3.0 with >= 2,000 notifications/s.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import aiohttp
from _util import HERE, ROOT, machine, table
from fleet_receivers import body
from mirror import postgres

from payroll_async.events._signature import sign
from payroll_async.inbox import Inbox

SECRET = "whsec_" + "YmVuY2htYXJrLXNlY3JldC1mb3ItdGhlLWluYm94"
PROCESS = str(HERE / "_inbox_process.py")


async def _spawn(*args: str) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        sys.executable,
        PROCESS,
        *args,
        cwd=ROOT,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
    )


async def _end(processes: list[asyncio.subprocess.Process]) -> None:
    for process in processes:
        assert process.stdin is not None
        process.stdin.close()
    for process in processes:
        await process.wait()


@asynccontextmanager
async def receivers(url: str, count: int) -> AsyncIterator[list[str]]:
    """``count`` receiver processes for ``url`` (``bare``, or an inbox); their URLs."""
    processes = [await _spawn("receiver", SECRET, url) for _ in range(count)]
    try:
        urls = []
        for process in processes:
            assert process.stdout is not None
            line = (await process.stdout.readline()).decode()
            urls.append(f"http://127.0.0.1:{line.split()[-1]}/hooks")
        yield urls
    finally:
        await _end(processes)


async def deliver(session: aiohttp.ClientSession, url: str, event_id: str) -> None:
    data = body(event_id)
    headers = sign(SECRET, event_id, int(time.time()), data)
    headers["Content-Type"] = "application/json"
    async with session.post(url, data=data, headers=headers) as response:
        await response.read()
        if response.status != 200:
            raise SystemExit(f"{event_id}: unexpected answer {response.status}")


async def latency(urls: dict[str, str], count: int, rounds: int) -> dict[str, float]:
    """Median ms of one delivery, one at a time, per receiver; rounds interleaved."""
    times: dict[str, list[float]] = {name: [] for name in urls}
    async with aiohttp.ClientSession() as session:
        for name, url in urls.items():  # warm: connections, the table created
            await deliver(session, url, f"warm-{name}-{uuid.uuid4().hex}")
        for n in range(rounds):
            for name, url in urls.items():
                for i in range(count // rounds):
                    started = time.perf_counter()
                    await deliver(session, url, f"lat-{n}-{i}-{uuid.uuid4().hex}")
                    times[name].append((time.perf_counter() - started) * 1000)
    return {name: statistics.median(values) for name, values in times.items()}


async def commit_floor(url: str, count: int) -> float:
    """Median ms of one bare INSERT and commit on ``url`` (asyncpg, no HTTP, no SDK): the
    disk's flush, which no receiver that commits before answering can go under."""
    import asyncpg

    connection = await asyncpg.connect(url)
    try:
        await connection.execute("CREATE TABLE floor (k text PRIMARY KEY, b bytea)")
        times = []
        for n in range(count):
            started = time.perf_counter()
            await connection.execute("INSERT INTO floor VALUES ($1, $2)", str(n), body(str(n)))
            times.append((time.perf_counter() - started) * 1000)
        return statistics.median(times)
    finally:
        await connection.close()


async def throughput(
    urls: list[str], events: int, concurrency: int, times: list[float] | None = None
) -> float:
    """Notifications/s accepted by ``urls`` (round robin), ``concurrency`` in flight;
    each delivery's ms appended to ``times`` if given."""
    ids = iter(f"thr-{uuid.uuid4().hex}" for _ in range(events))
    connector = aiohttp.TCPConnector(limit=concurrency)
    async with aiohttp.ClientSession(connector=connector) as session:

        async def sender(n: int) -> None:
            for event_id in ids:
                started = time.perf_counter()
                await deliver(session, urls[n % len(urls)], event_id)
                if times is not None:
                    times.append((time.perf_counter() - started) * 1000)

        started = time.perf_counter()
        await asyncio.gather(*(sender(n) for n in range(concurrency)))
        return events / (time.perf_counter() - started)


async def paired(pg: str, pairs: int, events: int, concurrency: int) -> int:
    """Issue 43's inbox target: accept latency under load, 3 PostgreSQL inbox receivers
    against 3 bare ones, as ``pairs`` interleaved pairs; 0 if met."""
    rows, ratios, rates = [], [], []
    async with receivers("bare", 3) as bare, receivers(pg, 3) as inbox:
        for urls in (bare, inbox):  # warm: connections, the table created
            await throughput(urls, 3 * concurrency, concurrency)
        for n in range(pairs):
            medians: dict[str, float] = {}
            rate = 0.0
            order = [("bare", bare), ("inbox", inbox)]
            for name, urls in order if n % 2 == 0 else order[::-1]:
                times: list[float] = []
                got = await throughput(urls, events, concurrency, times)
                medians[name] = statistics.median(times)
                rate = got if name == "inbox" else rate
            ratio = medians["inbox"] / medians["bare"]
            ratios.append(ratio)
            rates.append(rate)
            rows.append(
                [
                    str(n + 1),
                    f"{medians['bare']:.2f}",
                    f"{medians['inbox']:.2f}",
                    f"{ratio:.2f}",
                    f"{rate:,.0f}",
                ]
            )
    print(
        table(
            ["pair", "bare median ms", "inbox median ms", "inbox vs bare", "inbox notif./s"],
            rows,
        )
    )
    ratio, rate = statistics.median(ratios), statistics.median(rates)
    print(
        f"\nmedian of {pairs} pairs: PostgreSQL inbox accept latency vs bare, 3 receivers = "
        f"{ratio:.2f}x; PostgreSQL inbox notifications/s = {rate:,.0f}"
    )
    met = ratio <= 3.0 and rate >= 2000.0
    print(f"  {'PASS' if met else 'FAIL'}  target: <= 3.0x with >= 2,000 notifications/s")
    return 0 if met else 1


async def drain(url: str, workers: int, concurrency: int) -> float:
    """Events/s of ``workers`` processes emptying the inbox at ``url``."""
    processes = [await _spawn("worker", url, str(concurrency)) for _ in range(workers)]
    try:
        for process in processes:
            assert process.stdout is not None
            await process.stdout.readline()  # READY: started, connected
        async with Inbox(url) as inbox:
            pending = (await inbox.stats()).pending
            started = time.perf_counter()
            for process in processes:
                assert process.stdin is not None
                process.stdin.write(b"go\n")
            while (await inbox.stats()).pending:  # noqa: ASYNC110 (the database's state)
                await asyncio.sleep(0.05)
            return pending / (time.perf_counter() - started)
    finally:
        await _end(processes)


async def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--events", type=int, default=5000, help="notifications a run")
    parser.add_argument("--concurrency", type=int, default=64, help="deliveries in flight")
    parser.add_argument("--latency-count", type=int, default=600)
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--worker-concurrency", type=int, default=16)
    parser.add_argument(
        "--paired", type=int, metavar="N", help="only issue 43's target, as N interleaved pairs"
    )
    args = parser.parse_args()
    print(
        f"{args.events:,} signed notifications a run, {args.concurrency} in flight; {machine()}\n"
    )
    with tempfile.TemporaryDirectory() as folder:
        server, pg = postgres(Path(folder))
        # The same server, commits not waiting for the disk: what the WAL flush costs.
        server.psql("CREATE DATABASE bench_async;")
        server.psql("ALTER DATABASE bench_async SET synchronous_commit = off;")
        pg_async = server.get_uri("bench_async")
        if args.paired is not None:
            try:
                return await paired(pg, args.paired, args.events, args.concurrency)
            finally:
                server.cleanup()
        sqlite = f"sqlite:///{Path(folder) / 'inbox.db'}"
        try:
            async with (
                receivers("bare", 1) as (bare,),
                receivers(sqlite, 1) as (lite,),
                receivers(pg, 1) as (post,),
                receivers(pg_async, 1) as (post_async,),
            ):
                medians = await latency(
                    {
                        "bare": bare,
                        "sqlite": lite,
                        "postgresql": post,
                        "postgresql, synchronous_commit=off": post_async,
                    },
                    args.latency_count,
                    args.rounds,
                )
            floors = {
                "a bare INSERT + commit (asyncpg, no HTTP)": await commit_floor(
                    pg, args.latency_count
                ),
                "the same, synchronous_commit=off": await commit_floor(
                    pg_async, args.latency_count
                ),
            }
            rates: dict[str, float] = {}
            for name, url, count in (
                ("bare, 1 receiver", "bare", 1),
                ("bare, 3 receivers", "bare", 3),
                ("SQLite inbox, 1 receiver", sqlite, 1),
                ("PostgreSQL inbox, 3 receivers", pg, 3),
                ("PostgreSQL inbox, 3 receivers, synchronous_commit=off", pg_async, 3),
            ):
                async with receivers(url, count) as urls:
                    rates[name] = await throughput(urls, args.events, args.concurrency)
            async with Inbox(pg) as inbox:
                await inbox.purge(done_before=datetime.timedelta(0))
            drains = {1: await drain(pg, 1, args.worker_concurrency)}
            async with receivers(pg, 3) as urls:
                await throughput(urls, args.events, args.concurrency)
            drains[3] = await drain(pg, 3, args.worker_concurrency)
        finally:
            server.cleanup()
    base = medians["bare"]

    def bare_of(name: str) -> str:
        return "bare, 3 receivers" if "3 receivers" in name else "bare, 1 receiver"

    print(
        table(
            ["one receiver, one delivery at a time", "median ms", "vs bare"],
            [
                *([name, f"{ms:.3f}", f"{ms / base:.2f}"] for name, ms in medians.items()),
                *([f"PostgreSQL floor: {name}", f"{ms:.3f}", ""] for name, ms in floors.items()),
            ],
        )
    )
    print()
    print(
        table(
            ["receivers", "notifications/s accepted", "vs bare (same receivers)"],
            [
                [
                    name,
                    f"{rate:,.0f}",
                    f"{rate / rates[bare_of(name)]:.2f}",
                ]
                for name, rate in rates.items()
            ],
        )
    )
    print()
    print(
        table(
            [f"PostgreSQL inbox, drained by ({args.worker_concurrency} at once each)", "events/s"],
            [
                [f"{n} worker process{'es' if n > 1 else ''}", f"{r:,.0f}"]
                for n, r in drains.items()
            ],
        )
    )
    checks = [
        (
            "PostgreSQL inbox, 3 receivers: notifications/s",
            rates["PostgreSQL inbox, 3 receivers"],
            ">=",
            2000.0,
        ),
        ("SQLite inbox median accept latency vs bare", medians["sqlite"] / base, "<=", 3.0),
        ("PostgreSQL inbox median accept latency vs bare", medians["postgresql"] / base, "<=", 3.0),
    ]
    print("\nTargets")
    failed = 0
    for label, value, sense, limit in checks:
        ok = value >= limit if sense == ">=" else value <= limit
        failed += not ok
        print(f"  {'PASS' if ok else 'FAIL'}  {label} = {value:,.2f} (target {sense} {limit:g})")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(asyncio.run(main()))
