"""get_api_list: any listing walked as the built-in ones; Page.has_next_page/get_next_page."""

from __future__ import annotations

import asyncio
import datetime
import json
import uuid
from typing import Any

import attrs
import pytest
from aiohttp import web
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from payroll_async import (
    InvalidArgumentError,
    Page,
    PaginationError,
    PayrollClient,
    PayrollConnection,
    ResponseDecodeError,
)
from payroll_async.emulator import Emulator
from tests import factories
from tests.conftest import TOKEN, Serve, loopback

SERVICE_PAGE = 7  # the page size of the server below when none is asked for


class Listing:
    """``total`` connections at /v1/things and /v1/payroll-connections, paged as asked.

    ``links``: "none" (no Link header), "offset" (next is this request with the offset
    advanced) or "cursor" (an opaque cursor); ``server_max``: the largest page it sends;
    ``lie``: the totalCount it sends (None: the truth).
    """

    def __init__(
        self, total: int, *, links: str = "none", server_max: int = 50, lie: int | None = None
    ) -> None:
        self.total = total
        self.links = links
        self.server_max = server_max
        self.lie = lie
        self.requests: list[str] = []

    async def handle(self, request: web.Request) -> web.Response:
        assert request.headers["Authorization"] == f"Bearer {TOKEN}"
        self.requests.append(request.path_qs)
        query = request.query
        assert query.get("tag") == "t"
        if "cursor" in query:
            offset, limit = int(query["cursor"]), int(query["size"])
        else:
            offset, limit = int(query.get("offset", "0")), int(query.get("limit", SERVICE_PAGE))
        limit = min(limit, self.server_max)
        items = [factories.connection(i) for i in range(offset, min(offset + limit, self.total))]
        total = self.total if self.lie is None else self.lie
        headers = {}
        if self.links != "none":
            rel = [f'<{request.url}>; rel="self"']
            if offset + limit < self.total:
                target = (
                    request.url.update_query(offset=offset + limit)
                    if self.links == "offset"
                    else request.url.with_query(cursor=offset + limit, size=limit, tag="t")
                )
                rel.append(f'<{target}>; rel="next"')
            headers["Link"] = ", ".join(rel)
        return web.json_response(
            factories.envelope(items, offset=offset, limit=limit, total=total), headers=headers
        )

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_get("/v1/things", self.handle)
        app.router.add_get("/v1/payroll-connections", self.handle)
        return app


def ids(items: list[Any]) -> list[str]:
    return [str(item["id"]) if isinstance(item, dict) else str(item.id) for item in items]


async def chain(first: Page[Any]) -> list[Any]:
    """Every item from ``first`` on, page after page by get_next_page()."""
    page, items = first, list(first.items)
    while page.has_next_page():
        page = await page.get_next_page()
        items.extend(page.items)
    return items


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    total=st.integers(0, 40),
    links=st.sampled_from(["none", "offset", "cursor"]),
    server_max=st.integers(1, 12),
    page_size=st.one_of(st.none(), st.integers(1, 15)),
    start_offset=st.integers(0, 45),
    max_items=st.one_of(st.none(), st.integers(0, 45)),
    concurrency=st.integers(1, 4),
    lie=st.sampled_from([None, None, -1, 0]),
)
def test_a_generic_listing_walks_as_the_built_in_ones(
    total: int,
    links: str,
    server_max: int,
    page_size: int | None,
    start_offset: int,
    max_items: int | None,
    concurrency: int,
    lie: int | None,
) -> None:
    """Every item once, in order, from start_offset, at most max_items; the same as
    payroll_connections.list(); and the pages' get_next_page() chain agrees with the walk."""
    everything = [factories.uid(i, 1) for i in range(total)]
    expected = everything[start_offset:]
    if max_items is not None:
        expected = expected[:max_items]
    options: dict[str, Any] = {
        "page_size": page_size,
        "start_offset": start_offset,
        "max_items": max_items,
        "concurrency": concurrency,
        "extra_query": {"tag": "t"},
    }

    async def run() -> None:
        backend = Listing(total, links=links, server_max=server_max, lie=lie)
        async with loopback(backend.app()) as base, PayrollClient(base, TOKEN) as client:
            generic = client.get_api_list("/v1/things", model=dict, **options)
            assert ids([item async for item in generic]) == expected
            pages = [page async for page in generic.pages()]
            assert ids([i for page in pages for i in page.items]) == expected
            if pages:  # the last page says no, or its next page is empty (a lying total)
                assert len(await chain(pages[-1])) == len(pages[-1].items)
            built_in = client.payroll_connections.list(**options)
            assert ids(await built_in.collect()) == expected
            typed = client.get_api_list("/v1/things", model=PayrollConnection, **options)
            assert ids(await typed.collect()) == expected
            assert ids(await chain(await generic)) == expected

    asyncio.run(run())


# --- has_next_page on offset and Link listings, empty and last pages ------------------------


@pytest.mark.parametrize("links", ["none", "offset", "cursor"])
async def test_has_next_page_until_the_last_page(serve: Serve, links: str) -> None:
    backend = Listing(25, links=links)
    base = await serve(backend.app())
    async with PayrollClient(base, TOKEN, page_size=10) as client:
        page = await client.get_api_list("/v1/things", model=dict, extra_query={"tag": "t"})
        seen = [len(page.items)]
        while page.has_next_page():
            page = await page.get_next_page()
            seen.append(len(page.items))
        assert seen == [10, 10, 5]
        assert not page.has_next_page()
        with pytest.raises(PaginationError, match="last page"):
            await page.get_next_page()
    assert len(backend.requests) == 3


def _ring(size: int, pages: int) -> web.Application:
    """Pages 0 .. size-1 of /v1/things whose next links go round: page 0 is the URL first
    asked (``?p=N`` the others), and the last page's next link is that URL again."""
    first: list[str] = []

    async def page(request: web.Request) -> web.Response:
        if "p" not in request.query:
            first[:] = [str(request.url)]
        n = int(request.query.get("p", "0"))
        following = first[0] if n + 1 == size else f"{request.url.origin()}/v1/things?p={n + 1}"
        link = f'<{following}>; rel="next"'
        return web.json_response(
            factories.envelope([factories.connection(n)], total=pages),
            headers={"Link": link},
        )

    app = web.Application()
    app.router.add_get("/v1/things", page)
    return app


@pytest.mark.parametrize("size", [2, 3, 40])
async def test_a_while_loop_over_get_next_page_ends_on_a_loop_of_links(
    serve: Serve, size: int
) -> None:
    """A -> B -> A (and longer rings): each page remembers the chain it came from and
    refuses the link back into it, with the walk's own error."""
    base = await serve(_ring(size, 1000))
    async with PayrollClient(base, TOKEN) as client:
        listing = client.get_api_list("/v1/things", model=dict)
        with pytest.raises(PaginationError, match="already visited") as walked:
            async for _ in listing:
                pass
        page = await listing
        seen = 1
        with pytest.raises(PaginationError, match="already visited") as stepped:
            while page.has_next_page() and seen <= size:  # bounded: a failure, not a hang
                page = await page.get_next_page()
                seen += 1
    assert seen == size  # every page of the ring once, then refused
    assert str(stepped.value) == str(walked.value)


async def test_a_page_asked_for_its_next_twice_is_not_a_loop(serve: Serve) -> None:
    base = await serve(_ring(3, 1000))
    async with PayrollClient(base, TOKEN) as client:
        first = await client.get_api_list("/v1/things", model=dict)
        second = await first.get_next_page()
        again = await first.get_next_page()
        third = await again.get_next_page()
        assert second.items == again.items
        assert third.items != second.items
        with pytest.raises(PaginationError, match="already visited"):
            await third.get_next_page()


@pytest.mark.parametrize("links", ["none", "offset"])
async def test_an_empty_listing_has_no_next_page(serve: Serve, links: str) -> None:
    base = await serve(Listing(0, links=links).app())
    async with PayrollClient(base, TOKEN) as client:
        page = await client.get_api_list("/v1/things", model=dict, extra_query={"tag": "t"})
        assert page.items == []
        assert not page.has_next_page()


async def test_a_page_that_fills_the_total_exactly_is_the_last(serve: Serve) -> None:
    base = await serve(Listing(20).app())
    async with PayrollClient(base, TOKEN, page_size=10) as client:
        listing = client.get_api_list("/v1/things", model=dict, extra_query={"tag": "t"})
        pages = [page async for page in listing.pages()]
    assert [p.has_next_page() for p in pages] == [True, False]


async def test_max_items_ends_the_chain_as_it_ends_the_walk(serve: Serve) -> None:
    backend = Listing(100)
    base = await serve(backend.app())
    async with PayrollClient(base, TOKEN, page_size=10) as client:
        listing = client.get_api_list(
            "/v1/things", model=dict, max_items=15, extra_query={"tag": "t"}
        )
        page = await listing
        second = await page.get_next_page()
        assert (len(page.items), len(second.items), second.has_next_page()) == (10, 5, False)
    assert "offset=10" in backend.requests[-1]
    assert "limit=5" in backend.requests[-1]


async def test_a_lying_total_is_not_believed_by_has_next_page(serve: Serve) -> None:
    base = await serve(Listing(12, lie=0).app())
    async with PayrollClient(base, TOKEN, page_size=5) as client:
        page = await client.get_api_list("/v1/things", model=dict, extra_query={"tag": "t"})
        assert ids(await chain(page)) == [factories.uid(i, 1) for i in range(12)]


async def test_built_in_listings_pages_know_their_next_too() -> None:
    async with Emulator(payroll_connections=25) as emu, PayrollClient(emu.base_url, emu.token) as c:
        page = await c.payroll_connections.list(page_size=10)
        assert page.links  # the emulator sends Link headers
        assert len(await chain(page)) == 25
    async with (
        Emulator(employer_identifiers=8, link_headers=False) as emu,
        PayrollClient(emu.base_url, emu.token) as c,
    ):
        page = await c.employer_identifiers.list(page_size=3)
        assert not page.links
        assert len(await chain(page)) == 8


async def test_a_page_made_by_hand_has_no_next(serve: Serve) -> None:
    page = Page(items=[1], meta=None, links={}, headers={})  # type: ignore[arg-type]
    assert not page.has_next_page()
    with pytest.raises(PaginationError):
        await page.get_next_page()


# --- the emulator's ASSUMED payroll platforms, with a model of the user's ---------------------


@attrs.frozen
class Platform:
    id: uuid.UUID
    name: str
    created_at: datetime.datetime


async def test_the_emulators_payroll_platforms(start_emulator: Any) -> None:
    emu: Emulator = await start_emulator(seed=3)
    async with PayrollClient(emu.base_url, emu.token, page_size=2) as client:
        listing = client.get_api_list("/v1/payroll-platforms", model=Platform)
        platforms = await listing.collect()
        assert len(platforms) == 7
        assert len({p.id for p in platforms}) == 7
        one = await client.get(f"/v1/payroll-platforms/{platforms[3].id}", cast_to=Platform)
        assert one == platforms[3]
        by_name = await client.get_api_list(
            "/v1/payroll-platforms", model=dict, params={"sort": "-name"}
        ).collect()
        assert [p["name"] for p in by_name] == sorted((p.name for p in platforms), reverse=True)
        with pytest.raises(ResponseDecodeError):
            await client.get_api_list("/v1/payroll-platforms", model=PayrollConnection).collect()
        with pytest.raises(InvalidArgumentError):
            client.get_api_list("/v1/payroll-platforms", model=Platform, page_size=0)


async def test_a_generic_listing_exports_as_the_built_in_ones(
    start_emulator: Any, tmp_path: Any
) -> None:
    from payroll_async.export import ExportError, export_to_file

    emu: Emulator = await start_emulator(seed=3)
    async with PayrollClient(emu.base_url, emu.token, page_size=3) as client:
        as_dicts = client.get_api_list("/v1/payroll-platforms", model=dict)
        result = await export_to_file(as_dicts, tmp_path / "p.jsonl")
        lines = (tmp_path / "p.jsonl").read_text().splitlines()
        assert result.items == len(lines) == 7
        assert ids([json.loads(line) for line in lines]) == ids(await as_dicts.collect())
        typed = client.get_api_list("/v1/payroll-platforms", model=Platform)
        assert (await export_to_file(typed, tmp_path / "p.csv", format="csv")).items == 7
        assert (tmp_path / "p.csv").read_text().splitlines()[0] == "id,name,createdAt"
        with pytest.raises(ExportError, match="CSV"):
            await export_to_file(as_dicts, tmp_path / "d.csv", format="csv")
    assert not (tmp_path / "d.csv").exists()
