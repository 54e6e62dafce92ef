"""``await paginator`` is the first Page, in one request (as openai-python's list calls)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from aiohttp import web

from payroll_async import Page, PayrollClient, PayrollConnection
from payroll_async.emulator import Emulator
from tests.conftest import BOTH_TRANSPORTS, TOKEN, Serve

pytestmark = BOTH_TRANSPORTS  # the same code above the seam over either transport


@pytest.fixture
async def emu() -> AsyncIterator[Emulator]:
    async with Emulator(seed=1, payroll_connections=250, webhook_subscriptions=0) as emu:
        yield emu


async def test_await_gives_the_first_page_in_one_request(emu: Emulator) -> None:
    async with PayrollClient(emu.base_url, emu.token, concurrency=8) as client:
        listing = client.payroll_connections.list(page_size=100)
        before = emu.stats["requests"]
        page = await listing
        assert emu.stats["requests"] - before == 1  # no fetch-ahead of the next pages
        assert isinstance(page, Page)
        assert page.meta.offset == 0
        assert page.meta.total_count == 250
        first_items = [conn async for conn in listing][:100]
        assert list(page.items) == first_items
        assert all(isinstance(item, PayrollConnection) for item in page.items)


async def test_await_honours_max_items_and_start_offset(emu: Emulator) -> None:
    async with PayrollClient(emu.base_url, emu.token) as client:
        everything = await client.payroll_connections.list().collect()
        page = await client.payroll_connections.list(page_size=100, max_items=3, start_offset=7)
        assert list(page.items) == everything[7:10]
        assert page.meta.offset == 7
        short = await client.payroll_connections.list(page_size=2, max_items=5)
        assert list(short.items) == everything[:2]


async def test_await_on_an_empty_listing_is_an_empty_page(emu: Emulator) -> None:
    async with PayrollClient(emu.base_url, emu.token) as client:
        page = await client.webhooks.list()
        assert list(page.items) == []
        assert page.meta.total_count == 0


async def test_a_paginator_can_be_awaited_again(emu: Emulator) -> None:
    async with PayrollClient(emu.base_url, emu.token) as client:
        listing = client.employer_identifiers.list(page_size=5)
        assert (await listing).items == (await listing).items


async def test_max_items_0_sends_nothing_awaited_or_iterated(serve: Serve) -> None:
    requests: list[str] = []

    async def listing(request: web.Request) -> web.Response:
        requests.append(request.path)
        meta = {"currentCount": 0, "filters": {}, "limit": 10, "offset": 0, "sort": ""}
        return web.json_response({"data": [], "meta": {**meta, "totalCount": 0}})

    app = web.Application()
    app.router.add_get("/v1/payroll-connections", listing)
    base = await serve(app)
    async with PayrollClient(base, TOKEN) as client:
        nothing = client.payroll_connections.list(max_items=0, start_offset=5)
        assert [conn async for conn in nothing] == []
        page = await nothing
        assert await client.payroll_connections.list().skip(0).collect() == []  # served
    assert list(page.items) == []
    assert (page.meta.offset, page.meta.current_count, dict(page.links)) == (5, 0, {})
    assert requests == ["/v1/payroll-connections"]  # only the listing without max_items=0
