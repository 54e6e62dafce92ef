"""Auto-pagination: exact requests with aioresponses, concurrency on a loopback server."""

import asyncio
import contextlib
import gc
import logging
import random
import re
from typing import Any

import pytest
from aiohttp import web
from aioresponses import aioresponses

from payroll_async import APIStatusError, Page, PaginationError, PayrollClient, RetryPolicy
from tests import factories
from tests.conftest import BASE, BOTH_TRANSPORTS, TOKEN, Serve, loopback
from tests.resources.helpers import calls

pytestmark = BOTH_TRANSPORTS  # the same code above the seam over either transport

PATH = f"{BASE}/v1/payroll-connections"


def offsets_requested(mocked: aioresponses) -> list[tuple[int, int]]:
    return sorted(
        (int(url.query["offset"]), int(url.query["limit"])) for _, url, _ in calls(mocked)
    )


def add_pages(
    mocked: aioresponses, total: int, size: int, *, server_max: int | None = None, start: int = 0
) -> None:
    """Register offset/limit pages of `total` connections as a real server would answer."""
    per_page = min(size, server_max or size)
    for offset in range(start, total + per_page, per_page):
        items = [factories.connection(i) for i in range(offset, min(offset + per_page, total))]
        mocked.get(
            f"{PATH}?limit={size}&offset={offset}",
            payload=factories.envelope(items, offset=offset, limit=per_page, total=total),
        )


async def test_walks_every_page_in_order(mock_api: aioresponses, client: PayrollClient) -> None:
    add_pages(mock_api, total=250, size=100)
    items = await client.payroll_connections.list().collect()
    assert [str(c.id) for c in items] == [factories.uid(i, 1) for i in range(250)]
    assert offsets_requested(mock_api) == [(0, 100), (100, 100), (200, 100)]


async def test_nothing_is_sent_until_iterated(
    mock_api: aioresponses, client: PayrollClient
) -> None:
    paginator = client.payroll_connections.list()
    await asyncio.sleep(0)
    assert calls(mock_api) == []
    add_pages(mock_api, total=3, size=100)
    assert len(await paginator.collect()) == 3


async def test_stops_on_an_empty_page_even_if_total_says_more(
    mock_api: aioresponses, client: PayrollClient
) -> None:
    mock_api.get(
        f"{PATH}?limit=10&offset=0",
        payload=factories.envelope(
            [factories.connection(i) for i in range(10)], limit=10, total=35
        ),
    )
    mock_api.get(
        f"{PATH}?limit=10&offset=10", payload=factories.envelope([], offset=10, limit=10, total=35)
    )
    for offset in (20, 30):
        mock_api.get(
            f"{PATH}?limit=10&offset={offset}",
            payload=factories.envelope(
                [factories.connection(99)], offset=offset, limit=10, total=35
            ),
        )
    items = await client.payroll_connections.list(page_size=10).collect()
    assert len(items) == 10


async def test_stops_when_the_offset_reaches_total(
    mock_api: aioresponses, client: PayrollClient
) -> None:
    add_pages(mock_api, total=200, size=100)
    assert len(await client.payroll_connections.list().collect()) == 200
    assert offsets_requested(mock_api) == [(0, 100), (100, 100)]  # no request at offset 200


async def test_a_server_with_smaller_pages_still_yields_everything(
    mock_api: aioresponses, client: PayrollClient
) -> None:
    # Asked for 100, the server gives at most 40 (meta.limit 40): follow its page size.
    mock_api.get(
        f"{PATH}?limit=100&offset=0",
        payload=factories.envelope(
            [factories.connection(i) for i in range(40)], limit=40, total=130
        ),
    )
    for offset in (40, 80, 120):
        items = [factories.connection(i) for i in range(offset, min(offset + 40, 130))]
        mock_api.get(
            f"{PATH}?limit=40&offset={offset}",
            payload=factories.envelope(items, offset=offset, limit=40, total=130),
        )
    items = await client.payroll_connections.list().collect()
    assert [str(c.id) for c in items] == [factories.uid(i, 1) for i in range(130)]


async def test_a_short_page_in_the_middle_is_completed(
    mock_api: aioresponses, client: PayrollClient
) -> None:
    def page(offset: int, count: int, limit: int = 10) -> dict[str, Any]:
        items = [factories.connection(i) for i in range(offset, offset + count)]
        return factories.envelope(items, offset=offset, limit=limit, total=30)

    mock_api.get(f"{PATH}?limit=10&offset=0", payload=page(0, 10))
    mock_api.get(f"{PATH}?limit=10&offset=10", payload=page(10, 6))  # 4 missing
    mock_api.get(f"{PATH}?limit=4&offset=16", payload=page(16, 4, limit=4))
    mock_api.get(f"{PATH}?limit=10&offset=20", payload=page(20, 10))
    items = await client.payroll_connections.list(page_size=10).collect()
    assert [str(c.id) for c in items] == [factories.uid(i, 1) for i in range(30)]


async def test_max_items_and_start_offset(mock_api: aioresponses, client: PayrollClient) -> None:
    mock_api.get(
        f"{PATH}?limit=100&offset=200",
        payload=factories.envelope(
            [factories.connection(i) for i in range(200, 300)], offset=200, total=1000
        ),
    )
    mock_api.get(
        f"{PATH}?limit=50&offset=300",
        payload=factories.envelope(
            [factories.connection(i) for i in range(300, 350)], offset=300, limit=50, total=1000
        ),
    )
    items = await client.payroll_connections.list(start_offset=200, max_items=150).collect()
    assert [str(c.id) for c in items] == [factories.uid(i, 1) for i in range(200, 350)]
    assert offsets_requested(mock_api) == [(200, 100), (300, 50)]


async def test_max_items_zero_sends_nothing(mock_api: aioresponses, client: PayrollClient) -> None:
    assert await client.payroll_connections.list(max_items=0).collect() == []
    assert calls(mock_api) == []


async def test_pages_expose_meta_links_and_headers(
    mock_api: aioresponses, client: PayrollClient
) -> None:
    add_pages(mock_api, total=150, size=100)
    pages: list[Page[Any]] = [p async for p in client.payroll_connections.list().pages()]
    assert [(p.meta.offset, len(p.items), p.meta.total_count) for p in pages] == [
        (0, 100, 150),
        (100, 50, 150),
    ]
    assert pages[0].links == {}
    assert pages[0].headers["Content-Type"].startswith("application/json")


def link_page(ids: range, next_url: str | None, total: int = 9) -> dict[str, Any]:
    headers = (
        {"Link": f'<{next_url}>; rel="next", <{PATH}?limit=3&offset=0>; rel="first"'}
        if next_url
        else {"Link": f'<{PATH}?limit=3&offset=0>; rel="first"'}
    )
    return {
        "payload": factories.envelope([factories.connection(i) for i in ids], limit=3, total=total),
        "headers": headers,
    }


async def test_follows_link_next_until_there_is_none(
    mock_api: aioresponses, client: PayrollClient
) -> None:
    mock_api.get(f"{PATH}?limit=3&offset=0", **link_page(range(3), f"{PATH}?cursor=b"))
    mock_api.get(
        f"{PATH}?cursor=b", **link_page(range(3, 6), "/v1/payroll-connections?cursor=c")
    )  # relative
    mock_api.get(f"{PATH}?cursor=c", **link_page(range(6, 8), None))
    pages = [p async for p in client.payroll_connections.list(page_size=3).pages()]
    assert [len(p.items) for p in pages] == [3, 3, 2]
    assert pages[0].links["next"] == f"{PATH}?cursor=b"
    assert [str(c.id) for p in pages for c in p.items] == [factories.uid(i, 1) for i in range(8)]


async def test_link_next_respects_max_items(mock_api: aioresponses, client: PayrollClient) -> None:
    mock_api.get(f"{PATH}?limit=3&offset=0", **link_page(range(3), f"{PATH}?cursor=b"))
    mock_api.get(f"{PATH}?cursor=b", **link_page(range(3, 6), f"{PATH}?cursor=c"))
    items = await client.payroll_connections.list(page_size=3, max_items=4).collect()
    assert len(items) == 4
    assert len(calls(mock_api)) == 2


@pytest.mark.parametrize(
    "other",
    [
        "https://evil.example.test/v1/payroll-connections?o=3",
        "http://api.example.test/v1/payroll-connections?o=3",
        "https://api.example.test:8443/v1/payroll-connections?o=3",
    ],
)
async def test_refuses_a_next_link_to_another_origin(
    mock_api: aioresponses, client: PayrollClient, other: str
) -> None:
    mock_api.get(f"{PATH}?limit=3&offset=0", **link_page(range(3), other))
    mock_api.get(re.compile(".*"), payload=factories.envelope([]), repeat=True)
    seen = []
    with pytest.raises(PaginationError, match="another origin"):
        async for conn in client.payroll_connections.list(page_size=3):
            seen.append(conn)
    assert len(seen) == 3
    assert len(calls(mock_api)) == 1  # the token never went to the other origin


async def test_a_loop_is_found_whatever_the_order_of_parameters(
    mock_api: aioresponses, client: PayrollClient
) -> None:
    mock_api.get(f"{PATH}?limit=3&offset=0", **link_page(range(3), f"{PATH}?offset=3&limit=3"))
    mock_api.get(f"{PATH}?limit=3&offset=3", **link_page(range(3, 6), f"{PATH}?offset=0&limit=3"))
    with pytest.raises(PaginationError, match="already visited"):
        await client.payroll_connections.list(page_size=3).collect()


async def test_refuses_a_next_link_loop(mock_api: aioresponses, client: PayrollClient) -> None:
    mock_api.get(f"{PATH}?limit=3&offset=0", **link_page(range(3), f"{PATH}?cursor=b"))
    mock_api.get(f"{PATH}?cursor=b", **link_page(range(3, 6), f"{PATH}?limit=3&offset=0"))
    with pytest.raises(PaginationError, match="already visited"):
        await client.payroll_connections.list(page_size=3).collect()


# --- a real loopback server: concurrency, ordering, cancellation --------------------------


class Backend:
    """A server of `total` connections that answers pages after a random short delay."""

    def __init__(self, total: int, *, fail_at: int | None = None) -> None:
        self.total = total
        self.fail_at = fail_at
        self.in_flight = 0
        self.max_in_flight = 0
        self.requests: list[int] = []
        self.rng = random.Random(7)

    async def handle(self, request: web.Request) -> web.Response:
        assert request.headers["Authorization"] == f"Bearer {TOKEN}"
        offset, limit = int(request.query["offset"]), int(request.query["limit"])
        self.requests.append(offset)
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            await asyncio.sleep(self.rng.uniform(0.001, 0.02))  # answers arrive out of order
        finally:
            self.in_flight -= 1
        if offset == self.fail_at:
            return web.json_response(factories.error_body("bad page"), status=400)
        items = [factories.connection(i) for i in range(offset, min(offset + limit, self.total))]
        return web.json_response(
            factories.envelope(items, offset=offset, limit=limit, total=self.total)
        )

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_get("/v1/payroll-connections", self.handle)
        return app


def page_tasks() -> list[asyncio.Task[Any]]:
    return [t for t in asyncio.all_tasks() if t.get_name().startswith("payroll_async page")]


async def settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


async def test_concurrent_pages_are_bounded_and_yield_in_order(serve: Serve) -> None:
    backend = Backend(total=2000)
    base = await serve(backend.app())
    async with PayrollClient(base, TOKEN, concurrency=8) as client:
        items = [
            str(c.id) async for c in client.payroll_connections.list(page_size=50, concurrency=3)
        ]
    assert items == [factories.uid(i, 1) for i in range(2000)]
    assert 1 < backend.max_in_flight <= 3
    assert len(backend.requests) == 40


async def test_the_client_caps_requests_across_listings(serve: Serve) -> None:
    backend = Backend(total=1000)
    base = await serve(backend.app())
    async with PayrollClient(base, TOKEN, concurrency=4) as client:
        results = await asyncio.gather(
            *(client.payroll_connections.list(page_size=25).collect() for _ in range(3))
        )
    assert all(len(r) == 1000 for r in results)
    assert backend.max_in_flight <= 4


async def test_leaving_the_loop_early_cancels_what_is_in_flight(serve: Serve) -> None:
    backend = Backend(total=100_000)
    base = await serve(backend.app())
    async with PayrollClient(base, TOKEN, concurrency=8) as client:
        async for _ in client.payroll_connections.list(page_size=10):
            assert page_tasks()  # pages are being fetched ahead
            break
        await settle()
        assert page_tasks() == []
        sent = len(backend.requests)
        await asyncio.sleep(0.05)
        assert len(backend.requests) == sent <= 9


async def test_aclosing_cancels_at_the_point_of_leaving(serve: Serve) -> None:
    backend = Backend(total=100_000)
    base = await serve(backend.app())
    async with PayrollClient(base, TOKEN, concurrency=8) as client:
        paginator = client.payroll_connections.list(page_size=10)
        async with contextlib.aclosing(aiter(paginator)) as items:
            async for _ in items:
                assert page_tasks()
                break
        assert page_tasks() == []  # cancelled and awaited: no loop turn needed


async def test_an_error_in_one_page_cancels_the_rest_and_is_raised(
    serve: Serve, caplog: pytest.LogCaptureFixture
) -> None:
    backend = Backend(total=5000, fail_at=500)
    base = await serve(backend.app())
    seen = 0
    async with PayrollClient(base, TOKEN, retry=RetryPolicy(max_attempts=1)) as client:
        with pytest.raises(APIStatusError, match="bad page"):
            async for _ in client.payroll_connections.list(page_size=100):
                seen += 1
        await settle()
        assert page_tasks() == []
    assert seen == 500
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR and r.name == "asyncio"]


async def test_a_paginator_can_be_walked_twice(serve: Serve) -> None:
    backend = Backend(total=30)
    base = await serve(backend.app())
    async with PayrollClient(base, TOKEN) as client:
        paginator = client.payroll_connections.list(page_size=10)
        assert await paginator.collect() == await paginator.collect()
    assert len(backend.requests) == 6


async def test_page_size_none_walks_at_the_services_own_page_size(
    mock_api: aioresponses, client: PayrollClient
) -> None:
    # No limit is sent at first; the page's meta.limit tells the service's page size.
    first = [factories.connection(i) for i in range(3)]
    mock_api.get(f"{PATH}?offset=0", payload=factories.envelope(first, limit=3, total=7))
    for offset in (3, 6):
        items = [factories.connection(i) for i in range(offset, min(offset + 3, 7))]
        mock_api.get(
            f"{PATH}?limit=3&offset={offset}",
            payload=factories.envelope(items, offset=offset, limit=3, total=7),
        )
    got = await client.payroll_connections.list(page_size=None).collect()
    assert [str(c.id) for c in got] == [factories.connection(i)["id"] for i in range(7)]
    sent = [url.query.get("limit") for _, url, _ in calls(mock_api)]
    assert sent[0] is None
    assert sorted(sent[1:]) == ["3", "3"]


def test_a_walk_kept_after_its_client_closes_reports_nothing_at_collection() -> None:
    # Pages fetched ahead that failed, of a walk nobody went on with and that outlives its
    # client and its loop, are nobody's error: collecting the walk must not log "Task
    # exception was never retrieved" (nor raise in __del__ on the closed loop).
    ahead: list[int] = []
    reported: list[str] = []

    async def handle(request: web.Request) -> web.Response:
        offset = int(request.query["offset"])
        if offset == 0:
            items = [factories.connection(i) for i in range(100)]
            return web.json_response(factories.envelope(items, offset=0, limit=100, total=1000))
        ahead.append(offset)
        return web.json_response(factories.error_body("no"), status=400)

    async def keep_a_walk() -> Any:
        loop = asyncio.get_running_loop()
        loop.set_exception_handler(lambda _, context: reported.append(context["message"]))
        app = web.Application()
        app.router.add_get("/v1/payroll-connections", handle)
        async with loopback(app) as base, PayrollClient(base, TOKEN, concurrency=3) as client:
            walk = client.payroll_connections.list().__aiter__()
            await walk.__anext__()  # the first page is in; the next are fetched ahead
            pages = [
                t for t in asyncio.all_tasks() if t.get_name().startswith("payroll_async page")
            ]
            assert pages
            await asyncio.wait(pages)  # each failed with the 400; nobody has looked
        return walk

    walk = asyncio.run(keep_a_walk())
    del walk
    gc.collect()
    assert ahead
    assert reported == []
