"""Listings whose pages carry Link headers: concurrent by offset when the links allow it."""

import asyncio
import random

import pytest
from aiohttp import web

from payroll_async import PayrollClient
from tests import factories
from tests.conftest import BOTH_TRANSPORTS, TOKEN, Serve, StartEmulator

pytestmark = BOTH_TRANSPORTS  # the same code above the seam over either transport

TOTAL = 600
SIZE = 20


class LinkedBackend:
    """Pages with a Link header, as the service and the emulator send them.

    ``mode``: "offset" (next is this request with the offset advanced), "cursor" (next is
    an opaque cursor), or "drift" (offset links up to ``drift_at``, cursors after it).
    """

    def __init__(self, mode: str, *, drift_at: int = 200) -> None:
        self.mode = mode
        self.drift_at = drift_at
        self.in_flight = 0
        self.max_in_flight = 0
        self.requests: list[str] = []
        self.rng = random.Random(3)

    async def handle(self, request: web.Request) -> web.Response:
        assert request.headers["Authorization"] == f"Bearer {TOKEN}"
        self.requests.append(request.query_string)
        if "cursor" in request.query:
            offset, limit = int(request.query["cursor"]), SIZE
        else:
            offset, limit = int(request.query["offset"]), int(request.query["limit"])
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            await asyncio.sleep(self.rng.uniform(0.001, 0.01))
        finally:
            self.in_flight -= 1
        items = [factories.connection(i) for i in range(offset, min(offset + limit, TOTAL))]
        headers = {}
        following = offset + limit
        if following < TOTAL:
            cursor = self.mode == "cursor" or (self.mode == "drift" and offset >= self.drift_at)
            target = (
                request.url.with_query(cursor=following)
                if cursor
                else request.url.update_query(offset=following)
            )
            headers["Link"] = f'<{target}>; rel="next", <{request.url}>; rel="self"'
        return web.json_response(
            factories.envelope(items, offset=offset, limit=limit, total=TOTAL), headers=headers
        )

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_get("/v1/payroll-connections", self.handle)
        return app


async def walk(serve: Serve, backend: LinkedBackend, **options: int) -> list[str]:
    base = await serve(backend.app())
    async with PayrollClient(base, TOKEN, concurrency=8) as client:
        listing = client.payroll_connections.list(page_size=SIZE, **options)
        return [str(c.id) async for c in listing]


EVERY_ID = [factories.uid(i, 1) for i in range(TOTAL)]


async def test_next_links_that_match_the_offsets_are_fetched_concurrently(serve: Serve) -> None:
    backend = LinkedBackend("offset")
    assert await walk(serve, backend) == EVERY_ID
    assert backend.max_in_flight > 1
    assert len(backend.requests) == TOTAL // SIZE  # no page twice, none beyond the end


async def test_opaque_next_links_are_followed_one_by_one(serve: Serve) -> None:
    backend = LinkedBackend("cursor")
    assert await walk(serve, backend) == EVERY_ID
    assert backend.max_in_flight == 1
    assert all(q.startswith("cursor=") for q in backend.requests[1:])


async def test_links_that_stop_matching_mid_walk_are_followed_from_there(serve: Serve) -> None:
    backend = LinkedBackend("drift", drift_at=200)
    assert await walk(serve, backend) == EVERY_ID  # every item once, in order
    assert any(q.startswith("cursor=") for q in backend.requests)


@pytest.mark.parametrize("max_items", [1, 45, 599])
async def test_max_items_holds_on_linked_pages(serve: Serve, max_items: int) -> None:
    backend = LinkedBackend("offset")
    assert await walk(serve, backend, max_items=max_items) == EVERY_ID[:max_items]


async def test_the_emulator_with_link_headers_gives_every_item_once(
    start_emulator: StartEmulator,
) -> None:
    emu = await start_emulator(payroll_connections=700, seed=2)
    async with PayrollClient(emu.base_url, emu.token, concurrency=8) as client:
        ids = [c.id async for c in client.payroll_connections.list(page_size=10)]
    assert len(ids) == 700
    assert len(set(ids)) == 700
