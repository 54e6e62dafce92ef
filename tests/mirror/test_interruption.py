"""A mirror killed with SIGKILL at any point: the database stays consistent, the next run
finishes the work, and no item is ever recorded twice as inserted. Real processes, real
signals, real databases."""

from __future__ import annotations

import asyncio
import signal
from typing import Any

import pytest
from aiohttp import web

from payroll_async import PayrollClient
from payroll_async.emulator import Emulator
from payroll_async.mirror import mirror
from tests._postgres import query
from tests.cli._run import start
from tests.conftest import Asked

pytestmark = pytest.mark.slow  # real mirror processes, SIGKILLed


class Held(Asked):
    """``Asked``, whose n-th request and those after it are answered only once ``released``
    is set: the process is killed while it still has pages to fetch, however fast it
    writes the ones it has (without it, a kill at the 60th of 64 pages could come after
    the run's end)."""

    def __init__(self, requests: int) -> None:
        super().__init__(requests)
        self.released = asyncio.Event()

    async def __call__(self, request: web.Request, handler: Any) -> web.StreamResponse:
        if self.count + 1 >= self.requests:
            self.count += 1
            self.reached.set()
            await self.released.wait()
            response: web.StreamResponse = await handler(request)
            return response
        return await super().__call__(request, handler)


@pytest.mark.parametrize("kill_at", [2, 9, 30, 60])
async def test_sigkill_at_any_point_then_the_next_run_finishes(into: str, kill_at: int) -> None:
    emu = Emulator(seed=12, payroll_connections=1200, latency=0.005)
    killer = Held(kill_at)  # the mirror has asked for its n-th page
    emu.app.middlewares.append(killer)
    async with emu:
        process = await start(
            emu,
            "mirror",
            "payroll-connections",
            "--into",
            into,
            "--page-size",
            "20",
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.DEVNULL,
        )
        await killer.reached.wait()
        process.send_signal(signal.SIGKILL)
        assert await process.wait() == -signal.SIGKILL
        killer.released.set()
        if into.startswith("sqlite"):
            assert await query(into, "PRAGMA integrity_check") == [("ok",)]
        killed = await query(into, "SELECT complete, finished_at, items FROM mirror_runs")
        assert [(bool(c), f) for c, f, _ in killed] in ([], [(False, None)])
        stored = await query(into, "SELECT count(*) FROM payroll_connections")
        async with PayrollClient(emu.base_url, emu.token) as client:
            result = await mirror(client, "payroll-connections", into=into, page_size=20)
    assert result.complete
    assert result.inserted == 1200 - stored[0][0]
    per_item = await query(
        into,
        "SELECT item_id, count(*) FROM mirror_changes WHERE change = 'inserted' "
        "GROUP BY item_id HAVING count(*) > 1",
    )
    assert per_item == []
    total = await query(into, "SELECT count(*) FROM mirror_changes WHERE change = 'inserted'")
    assert total == [(1200,)]
    # The killed run's committed pages are its progress: what it wrote, it counted.
    if killed:
        assert killed[0][2] <= stored[0][0]
