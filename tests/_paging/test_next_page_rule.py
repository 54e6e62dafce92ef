"""One next-page rule: ``Page.next_page_info()``, ``has_next_page()``/``get_next_page()``
chained by hand and the walk (``async for``, ``.pages()``, concurrent or not) agree item
for item and page for page, against a hostile loopback server."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs
import pytest
from aiohttp import web
from yarl import URL

from payroll_async import Page, PageInfo, PaginationError, PayrollClient
from tests import factories
from tests.conftest import BOTH_TRANSPORTS, TOKEN, Serve

pytestmark = BOTH_TRANSPORTS  # the same code above the seam over either transport

PATH = "/v1/payroll-connections"


@attrs.frozen
class Answer:
    """What the server answers one request: items ``first``..``stop`` (exclusive), the
    ``totalCount`` it claims, and a next link (a path and query, or a whole URL)."""

    first: int
    stop: int
    total: object = None
    link: str | None = None


Rule = Callable[[int | None, int | None, str | None], Answer]


def plain(total: int = 25, *, claimed: object = "same") -> Rule:
    """Offset pages of ``total`` items, claiming ``claimed`` as their total."""

    def answer(offset: int | None, limit: int | None, _cursor: str | None) -> Answer:
        assert offset is not None
        assert limit is not None
        return Answer(offset, min(offset + limit, total), total if claimed == "same" else claimed)

    return answer


def short_at(at: int, got: int, total: int = 35) -> Rule:
    """Offset pages, the one asked at ``at`` answering only ``got`` items."""

    def answer(offset: int | None, limit: int | None, _cursor: str | None) -> Answer:
        assert offset is not None
        assert limit is not None
        count = got if offset == at else limit
        return Answer(offset, min(offset + count, total), total)

    return answer


def linked(total: int, link: Callable[[int, int, int], str | None]) -> Rule:
    """Offset pages (or ``cursor=<offset>`` pages of 10) whose next link is ``link(offset,
    limit, stop)``."""

    def answer(offset: int | None, limit: int | None, cursor: str | None) -> Answer:
        if cursor is not None:
            offset, limit = int(cursor), 10
        assert offset is not None
        assert limit is not None
        stop = min(offset + limit, total)
        return Answer(offset, stop, total, link(offset, limit, stop))

    return answer


def offset_links(total: int = 25, short: int | None = None) -> Rule:
    """As the service: next is this request with the offset advanced (until the end); the
    page at ``short`` answers 6 items (its link says the offset after them)."""

    def answer(offset: int | None, limit: int | None, _cursor: str | None) -> Answer:
        assert offset is not None
        assert limit is not None
        stop = min(offset + (6 if offset == short else limit), total)
        link = f"{PATH}?limit={limit}&offset={stop}" if stop < total else None
        return Answer(offset, stop, total, link)

    return answer


def empty_with_next(offset: int | None, limit: int | None, _cursor: str | None) -> Answer:
    """Pages of 10 up to 20 items, then an empty page that still links to the next."""
    assert offset is not None
    assert limit is not None
    stop = min(offset + limit, 20)
    return Answer(offset, max(offset, stop), 100, f"{PATH}?limit={limit}&offset={offset + limit}")


def loop_ab(offset: int | None, limit: int | None, cursor: str | None) -> Answer:
    """A (offset 0) links to B (a cursor), B links back to A."""
    if cursor == "b":
        return Answer(10, 20, 100, f"{PATH}?limit=10&offset=0")
    return Answer(0, 10, 100, f"{PATH}?cursor=b")


def back_to_offsets(offset: int | None, limit: int | None, cursor: str | None) -> Answer:
    """Offset pages up to 10, then a cursor, whose page links back to offset pages."""
    if cursor is not None:
        return Answer(10, 20, 40, f"{PATH}?limit=10&offset=20")
    assert offset is not None
    assert limit is not None
    stop = min(offset + limit, 40)
    if offset == 0:
        return Answer(0, 10, 40, f"{PATH}?cursor=10")
    return Answer(offset, stop, 40, f"{PATH}?limit={limit}&offset={stop}" if stop < 40 else None)


SCENARIOS: dict[str, tuple[Rule, dict[str, Any]]] = {
    "offset pages": (plain(), {}),
    "offset pages, max_items mid-page": (plain(), {"max_items": 15}),
    "a short page mid-walk": (short_at(10, 6), {}),
    "a short page mid-walk, max_items in it": (short_at(10, 6), {"max_items": 14}),
    "a total that lies high": (plain(25, claimed=1000), {}),
    "a total that lies low (not believed)": (plain(25, claimed=3), {}),
    "a total of -1": (plain(25, claimed=-1), {}),
    "a total that ends the listing early": (plain(25, claimed=20), {}),
    "offset links": (offset_links(), {}),
    "offset links, a short page": (offset_links(35, short=10), {}),
    "offset links, max_items mid-page": (offset_links(), {"max_items": 13}),
    "an empty page with a next link": (empty_with_next, {}),
    "a link loop A->B->A": (loop_ab, {}),
    "a link to another host": (
        linked(30, lambda o, lim, s: f"http://elsewhere.test{PATH}?limit=10&offset={s}"),
        {},
    ),
    "a link to another scheme": (
        linked(30, lambda o, lim, s: f"ftp://127.0.0.1{PATH}?offset={s}"),
        {},
    ),
    "cursor links": (
        linked(30, lambda o, lim, s: f"{PATH}?cursor={s}" if s < 30 else None),
        {},
    ),
    "cursor links, max_items": (
        linked(30, lambda o, lim, s: f"{PATH}?cursor={s}" if s < 30 else None),
        {"max_items": 17},
    ),
    "cursors, then offset links again": (back_to_offsets, {}),
}


def app_of(rule: Rule) -> web.Application:
    async def handle(request: web.Request) -> web.Response:
        assert request.headers["Authorization"] == f"Bearer {TOKEN}"
        query = request.query
        offset = int(query["offset"]) if "offset" in query else None
        limit = int(query["limit"]) if "limit" in query else None
        answer = rule(offset, limit, query.get("cursor"))
        items = [factories.connection(i) for i in range(answer.first, answer.stop)]
        body = factories.envelope(items, offset=answer.first, limit=limit or 10)
        body["meta"]["totalCount"] = answer.total
        headers = {}
        if answer.link is not None:
            link = answer.link
            if link.startswith("/"):
                link = str(request.url.origin()) + link
            headers["Link"] = f'<{link}>; rel="next"'
        return web.json_response(body, headers=headers)

    app = web.Application()
    app.router.add_get(PATH, handle)
    return app


Pages = list[list[str]]


def ids(page: Page[Any]) -> list[str]:
    return [str(item.id) for item in page.items]


async def by_hand(client: PayrollClient, options: dict[str, Any]) -> tuple[Pages, str | None]:
    """``await`` the first page, then ``has_next_page()``/``get_next_page()`` to the end:
    the pages with items (and an empty first page), and the error that ended it."""
    page = await client.payroll_connections.list(page_size=10, **options)
    pages = [ids(page)]
    try:
        while page.has_next_page():
            info = page.next_page_info()  # the rule says what comes next
            assert info is not None
            page = await page.get_next_page()
            if info.url is None:
                assert (page.meta.offset, len(page.items) <= (info.limit or 0)) == (
                    info.offset,
                    True,
                )
            if page.items:
                pages.append(ids(page))
            else:  # an empty page is the end: nothing after it
                assert page.next_page_info() is None
        assert page.next_page_info() is None
    except PaginationError as exc:
        return pages, str(exc)
    return pages, None


async def walked(
    client: PayrollClient, options: dict[str, Any], concurrency: int, *, pages: bool
) -> tuple[list[Any], str | None]:
    """The walk's pages (``.pages()``: each page's ids) or items (``async for``: the ids),
    and the error that ended it."""
    seen: list[Any] = []
    listing = client.payroll_connections.list(page_size=10, concurrency=concurrency, **options)
    try:
        if pages:
            async for page in listing.pages():
                seen.append(ids(page))
                if page.items and not page.has_next_page():
                    assert page.next_page_info() is None
        else:
            async for item in listing:
                seen.append(str(item.id))
    except PaginationError as exc:
        return seen, str(exc)
    return seen, None


@pytest.mark.parametrize("name", list(SCENARIOS))
async def test_pages_chained_by_hand_and_every_walk_agree(serve: Serve, name: str) -> None:
    rule, options = SCENARIOS[name]
    base = await serve(app_of(rule))
    async with PayrollClient(base, TOKEN) as client:
        hand, hand_error = await by_hand(client, options)
        flat = [i for page in hand for i in page]
        for concurrency in (1, 3):
            assert await walked(client, options, concurrency, pages=True) == (hand, hand_error)
            assert await walked(client, options, concurrency, pages=False) == (flat, hand_error)
    # The items are the listing's, in order, each once; max_items is kept.
    assert flat == sorted(set(flat), key=flat.index)
    if "max_items" in options:
        assert len(flat) == options["max_items"]


async def test_what_each_scenario_ends_in(serve: Serve) -> None:
    """The table's promises, spelt out: a loop, another host or scheme are refused after
    the pages before them; a lying total neither truncates nor runs on; a short page is
    completed; an empty page ends the listing."""
    expected = {
        "a short page mid-walk": (35, None),
        "a total that lies high": (25, None),
        "a total that lies low (not believed)": (25, None),
        "a total that ends the listing early": (20, None),
        "an empty page with a next link": (20, None),
        "a link loop A->B->A": (20, "already visited"),
        "a link to another host": (10, "another origin"),
        "a link to another scheme": (10, "not http(s)"),
        "cursors, then offset links again": (40, None),
        "offset links, a short page": (35, None),
    }
    for name, (count, error) in expected.items():
        rule, options = SCENARIOS[name]
        base = await serve(app_of(rule))
        async with PayrollClient(base, TOKEN) as client:
            seen, raised = await walked(client, options, 3, pages=False)
        assert len(seen) == count, name
        assert seen == [factories.uid(i, 1) for i in range(count)], name
        if error is None:
            assert raised is None, name
        else:
            assert error in str(raised), name


async def test_next_page_info_says_the_next_request(serve: Serve) -> None:
    base = await serve(app_of(offset_links(35, short=10)))
    async with PayrollClient(base, TOKEN) as client:
        first = await client.payroll_connections.list(page_size=10)
        assert first.next_page_info() == PageInfo(offset=10, limit=10)
        short = await first.get_next_page()
        assert len(short.items) == 6
        assert short.next_page_info() == PageInfo(offset=16, limit=4)  # the rest of the page
        rest = await short.get_next_page()
        assert rest.next_page_info() == PageInfo(offset=20, limit=10)
        capped = await client.payroll_connections.list(page_size=10, max_items=13)
        assert capped.next_page_info() == PageInfo(offset=10, limit=3)
    base = await serve(app_of(loop_ab))
    async with PayrollClient(base, TOKEN) as client:
        a = await client.payroll_connections.list(page_size=10)
        info = a.next_page_info()
        assert info is not None
        assert info.offset is None
        assert info.url == URL(f"{base}{PATH}?cursor=b")
        b = await a.get_next_page()
        assert b.has_next_page()  # the listing says it goes on ...
        with pytest.raises(PaginationError, match="already visited"):
            b.next_page_info()  # ... to a page already walked: refused


async def test_a_next_link_that_echoes_the_token_is_not_in_the_infos_repr(serve: Serve) -> None:
    async def echoing(request: web.Request) -> web.Response:
        link = f"{request.url.origin()}{PATH}?cursor=b&access_token={TOKEN}&t={TOKEN}"
        body = factories.envelope([factories.connection(0)], limit=10, total=5)
        return web.json_response(body, headers={"Link": f'<{link}>; rel="next"'})

    app = web.Application()
    app.router.add_get(PATH, echoing)
    base = await serve(app)
    async with PayrollClient(base, TOKEN) as client:
        info = (await client.payroll_connections.list(page_size=10)).next_page_info()
    assert info is not None
    assert info.url is not None
    assert info.url.query["t"] == TOKEN  # the link as it came, to follow
    assert TOKEN not in repr(info)
    assert "cursor=b" in repr(info)
