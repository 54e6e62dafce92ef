"""A long-running worker's view: one client, many requests, cancellations and faults.

    python benchmarks/soak.py                        # 200,000 requests
    python benchmarks/soak.py --requests 20000       # a quick look

The emulator (its own process) answers 2% of requests with 500/503 and drops 1% of
connections. One PayrollClient runs rounds of work until the request count is reached:
listings walked to the end, listings left early (``break``), listings cancelled from
outside mid-flight, timeouts that cancel a call, webhook listings. Every 10% it samples
RSS, tasks alive and open connections; at the end it reports warnings and event-loop
errors. Targets: flat RSS (the last sample within 10 MB of the one at 20%), no task or
connection left once the client is closed, no warning, no loop error.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import logging
import os
import random
import warnings
from typing import Any

import psutil
from _util import TOKEN, machine, report_targets, serving_emulator, table

from payroll_async import PayrollClient, PayrollError, RetryPolicy


class CountRequests(logging.Handler):
    """Counts the client's attempts from its DEBUG log lines: one per request sent."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.count = 0

    def emit(self, record: logging.LogRecord) -> None:
        if (
            getattr(record, "attempt", None) is not None
            and getattr(record, "status", None) is not None
        ):
            self.count += 1


def connections_to(port: int) -> int:
    return sum(
        1
        for c in psutil.Process().net_connections(kind="tcp")
        if c.raddr and c.raddr.port == port and c.status == psutil.CONN_ESTABLISHED
    )


async def soak(base: str, target: int) -> int:
    port = int(base.rsplit(":", 1)[1])
    counter = CountRequests()
    logger = logging.getLogger("payroll_async")
    logger.addHandler(counter)
    logger.setLevel(logging.DEBUG)
    logger.propagate = False
    loop_errors: list[dict[str, Any]] = []
    asyncio.get_running_loop().set_exception_handler(lambda loop, ctx: loop_errors.append(ctx))
    rng = random.Random(1)
    proc = psutil.Process()
    samples: list[list[str]] = []
    failures = 0
    policy = RetryPolicy(max_attempts=6, backoff_initial=0.001, backoff_max=0.01)
    next_sample = target // 10

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        async with PayrollClient(base, TOKEN, retry=policy, concurrency=8) as client:

            async def walk(limit: int) -> None:
                async for _ in client.payroll_connections.list(page_size=20, max_items=limit):
                    pass

            async def leave_early() -> None:
                async for _ in client.payroll_connections.list(page_size=10):
                    if rng.random() < 0.05:
                        break

            async def cancelled_from_outside() -> None:
                task = asyncio.create_task(walk(2000))
                await asyncio.sleep(rng.uniform(0, 0.01))
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)

            async def timed_out() -> None:
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(walk(1000), timeout=rng.uniform(0.001, 0.02))

            async def webhooks() -> None:
                await client.webhooks.list().collect()

            work = [
                lambda: walk(rng.randint(1, 400)),
                leave_early,
                cancelled_from_outside,
                timed_out,
                webhooks,
            ]
            while counter.count < target:
                batch = [rng.choice(work)() for _ in range(8)]
                for result in await asyncio.gather(*batch, return_exceptions=True):
                    if isinstance(result, PayrollError):
                        failures += 1  # attempts ran out on a faulty stretch: a worker moves on
                    elif isinstance(result, BaseException):
                        raise result
                if counter.count >= next_sample:
                    next_sample += target // 10
                    samples.append(
                        [
                            f"{counter.count:,}",
                            f"{proc.memory_info().rss / 2**20:.1f}",
                            str(len(asyncio.all_tasks()) - 1),
                            str(connections_to(port)),
                        ]
                    )
        gc.collect()
        await asyncio.sleep(0.1)
        tasks_after = len(asyncio.all_tasks()) - 1
        connections_after = connections_to(port)
    logger.removeHandler(counter)

    print(
        f"Soak: one client, {counter.count:,} requests with cancellations and injected faults; "
        f"{machine()}\n"
    )
    print(table(["requests", "RSS MB", "tasks alive", "open connections"], samples))
    print(f"\nCalls whose retries ran out (expected with injected faults): {failures}")
    print(
        f"After close: {tasks_after} tasks alive, {connections_after} open connections, "
        f"{len(caught)} warnings, {len(loop_errors)} event-loop errors"
    )
    for w in caught[:5]:
        print(f"  warning: {w.category.__name__}: {w.message}")
    for ctx in loop_errors[:5]:
        print(f"  loop error: {ctx.get('message')} {ctx.get('exception')!r}")
    growth = float(samples[-1][1]) - float(samples[min(1, len(samples) - 1)][1])
    checks = [
        ("RSS growth after 20% of the run (MB)", growth, 10.0),
        ("tasks alive after close", tasks_after, 0),
        ("open connections after close", connections_after, 0),
        ("warnings", len(caught), 0),
        ("event-loop errors", len(loop_errors), 0),
    ]
    return report_targets(checks)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--requests", type=int, default=200_000)
    args = parser.parse_args()
    faults = ["--error-rate", "0.02", "--drop-rate", "0.01"]
    with serving_emulator(
        "--payroll-connections",
        "100000",
        "--no-link-headers",
        "--webhook-subscriptions",
        "30",
        *faults,
    ) as base:
        return asyncio.run(soak(base, args.requests))


if __name__ == "__main__":
    os.environ.setdefault("PYTHONASYNCIODEBUG", "0")
    raise SystemExit(main())
