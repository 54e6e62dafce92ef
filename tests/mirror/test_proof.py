"""The mirror's proof against a service that lies: a row is marked deleted only after walks
that prove the item gone, whatever a loopback service says about its pages."""

from __future__ import annotations

import datetime
import random
import uuid
from collections.abc import Callable
from typing import Any

import pytest
from aiohttp import web

from payroll_async import PayrollClient
from payroll_async.mirror import MirrorResult, mirror
from tests import factories
from tests._postgres import query
from tests.conftest import TOKEN, Serve

PATH = "/v1/payroll-connections"
EPOCH = datetime.datetime(2024, 1, 1, tzinfo=datetime.timezone.utc)

Item = dict[str, Any]
Meta = dict[str, Any]
Lie = Callable[[int, int, list[Item], Meta], list[Item]]
"""(offset, limit, the honest page, its meta to edit) -> the page answered."""


def stamp(seconds: float) -> str:
    return (EPOCH + datetime.timedelta(seconds=seconds)).isoformat().replace("+00:00", "Z")


def spread_id(i: int) -> str:
    """An id whose halves both look random (unlike ``factories.uid``)."""
    return str(uuid.UUID(int=random.Random(i).getrandbits(128), version=4))


def connection(i: int, ident: Callable[[int], str] = spread_id) -> Item:
    """The ``i``th connection: createdAt ``i`` seconds after EPOCH (a strict order)."""
    return {**factories.connection(i), "id": ident(i), "createdAt": stamp(i)}


class Service:
    """``PATH`` on loopback: ``items`` in createdAt order, answered honestly unless ``lie``
    (given each request's offset and limit) says otherwise; ``asked`` logs each request."""

    def __init__(self, count: int, ident: Callable[[int], str] = spread_id) -> None:
        self.items = [connection(i, ident) for i in range(count)]
        self.lie: Lie | None = None
        self.asked: list[tuple[int, int]] = []

    def app(self) -> web.Application:
        async def handle(request: web.Request) -> web.Response:
            offset = int(request.query.get("offset", "0"))
            limit = int(request.query.get("limit", "20"))
            self.asked.append((offset, limit))
            page = self.items[offset : offset + limit]
            meta: Meta = factories.envelope([], offset=offset, limit=limit)["meta"]
            meta["totalCount"] = len(self.items)
            if self.lie is not None:
                page = self.lie(offset, limit, page, meta)
            meta["currentCount"] = len(page)
            return web.json_response({"data": page, "meta": meta})

        app = web.Application()
        app.router.add_get(PATH, handle)
        return app

    def ids(self) -> set[str]:
        return {item["id"] for item in self.items}


@pytest.fixture
def db(tmp_path: Any) -> str:
    return f"sqlite:///{tmp_path / 'mirror.db'}"


async def run(base: str, into: str, page_size: int = 40) -> MirrorResult:
    async with PayrollClient(base, TOKEN) as client:
        return await mirror(client, "payroll-connections", into=into, page_size=page_size)


async def live(into: str) -> set[str]:
    rows = await query(into, "SELECT id FROM payroll_connections WHERE mirror_deleted_at IS NULL")
    return {str(uuid.UUID(str(row[0]))) for row in rows}


async def deleted(into: str) -> set[str]:
    rows = await query(into, "SELECT item_id FROM mirror_changes WHERE change = 'deleted'")
    return {str(uuid.UUID(str(row[0]))) for row in rows}


async def mirrored(serve: Serve, service: Service, into: str, page_size: int = 40) -> str:
    """The service served, and mirrored once while it tells the truth (complete)."""
    base = await serve(service.app())
    first = await run(base, into, page_size)
    assert (first.inserted, first.complete) == (len(service.items), True)
    return base


# -- 1. A short page is a disturbance while totalCount says more, never an end ----------


async def test_a_short_first_page_while_totalcount_says_more_deletes_nothing(
    serve: Serve, into: str
) -> None:
    service = Service(300)
    base = await mirrored(serve, service, into, page_size=100)

    def half_a_first_page(offset: int, limit: int, page: list[Item], meta: Meta) -> list[Item]:
        return page[:50] if offset == 0 else page  # meta still says limit 100, total 300

    service.lie = half_a_first_page
    result = await run(base, into, page_size=100)
    assert (result.deleted, result.complete) == (0, False)
    assert await deleted(into) == set()
    assert await live(into) == service.ids()
    assert result.items == 300  # the walk went on past the short page, to the end


def short_then_empty(service: Service, offset: int, page: list[Item], meta: Meta) -> list[Item]:
    """A short middle page (20 of 40, totalCount 300) whose remainder comes back empty."""
    if offset == 78:
        return page[:20]
    return [] if 78 < offset < 118 else page


def another_limit(service: Service, offset: int, page: list[Item], meta: Meta) -> list[Item]:
    """A page that says it was cut at 39 items, with 40."""
    if offset == 39:
        meta["limit"] = 39
    return page


def too_many(service: Service, offset: int, page: list[Item], meta: Meta) -> list[Item]:
    """A page with one item more than asked."""
    return service.items[offset : offset + 41] if offset == 39 else page


def tie_reordered(service: Service, offset: int, page: list[Item], meta: Meta) -> list[Item]:
    """Items 38, 39 and 40 share a createdAt; the first page orders them one way, the
    others another way: item 40 is after page 0's last item (39) in one answer, before it
    in the other."""
    items = service.items
    for i in (38, 39, 40):
        items[i]["createdAt"] = stamp(38)
    if offset == 0:
        return items[:40]
    rotated = [items[40], items[38], items[39]]
    return (items[:38] + rotated + items[41:])[offset : offset + 40]


def out_of_order(service: Service, offset: int, page: list[Item], meta: Meta) -> list[Item]:
    """After the first page, item 60 answers with an earlier createdAt, sorted by it."""
    if offset == 0:
        return page
    moved = service.items[60]
    items = [item for item in service.items if item is not moved]
    items.insert(10, {**moved, "createdAt": stamp(9.5)})
    return items[offset : offset + 40]


def order_down(service: Service, offset: int, page: list[Item], meta: Meta) -> list[Item]:
    """Two neighbours swapped in one page: the order key goes down."""
    if offset == 78:
        page = list(page)
        page[5], page[6] = page[6], page[5]
    return page


def repeated_id(service: Service, offset: int, page: list[Item], meta: Meta) -> list[Item]:
    """Item 44 pushed out by item 10 again, in order by its (lying) createdAt."""
    if offset == 39:
        page = list(page)
        page[5] = {**service.items[10], "createdAt": page[5]["createdAt"]}
    return page


@pytest.mark.parametrize(
    "lie",
    [
        short_then_empty,
        another_limit,
        too_many,
        tie_reordered,
        out_of_order,
        order_down,
        repeated_id,
    ],
    ids=lambda lie: lie.__name__,
)
# -- 1, 2. What the pages say against what the service said; the order, checked ------


async def test_a_service_whose_pages_contradict_it_gets_nothing_deleted_and_no_proof(
    serve: Serve, db: str, lie: Callable[..., list[Item]]
) -> None:
    service = Service(300)
    base = await mirrored(serve, service, db)
    service.lie = lambda offset, limit, page, meta: lie(service, offset, page, meta)
    result = await run(base, db)
    assert await deleted(db) == set()
    assert await live(db) == service.ids()
    assert result.deleted == 0
    assert not result.complete


# -- 3. The seen ids are exact ---------------------------------------------------------


async def test_ids_that_share_their_first_64_bits_still_prove_every_deletion(
    serve: Serve, into: str
) -> None:
    # factories.uid: sequential in the low 64 bits, one value in the high 64 bits.
    service = Service(300, ident=lambda i: factories.uid(i, 1))
    assert len({uuid.UUID(item["id"]).int >> 64 for item in service.items}) == 1
    base = await mirrored(serve, service, into)
    gone = {item["id"] for item in service.items[::3]}
    service.items = [item for item in service.items if item["id"] not in gone]
    result = await run(base, into)
    assert (result.items, result.deleted, result.complete) == (200, 100, True)
    assert await deleted(into) == gone
    assert await live(into) == service.ids()


# -- 4. A capped totalCount ------------------------------------------------------------


async def test_a_capped_totalcount_mirrors_every_item_in_one_run_and_deletes_nothing(
    serve: Serve, db: str
) -> None:
    service = Service(3000)

    def capped(offset: int, limit: int, page: list[Item], meta: Meta) -> list[Item]:
        meta["totalCount"] = 100
        return page

    service.lie = capped
    base = await serve(service.app())
    first = await run(base, db, page_size=100)
    assert await live(db) == service.ids()  # all 3,000, though the service says 100
    assert (first.inserted, first.complete) == (3000, False)
    # Deletions are never proven while totalCount is below what the walks see.
    service.items = service.items[:-10]
    again = await run(base, db, page_size=100)
    assert (again.inserted, again.deleted, again.complete) == (0, 0, False)
    assert await deleted(db) == set()


# -- 27.3: one request a page, at the walk's page size ---------------------------------


async def test_the_walk_asks_each_page_once_at_its_own_page_size(serve: Serve, db: str) -> None:
    service = Service(300)
    base = await mirrored(serve, service, db)
    assert sorted(service.asked) == [(offset, 40) for offset in range(0, 300, 39)]
    service.asked.clear()

    def short(offset: int, limit: int, page: list[Item], meta: Meta) -> list[Item]:
        return page[:20] if offset == 78 else page

    service.lie = short
    await run(base, db)
    # A short page is never completed with a smaller request (a second page-size guess):
    # the walk goes on from its last item, at its own page size.
    assert {limit for _, limit in service.asked} == {40}
    assert (97, 40) in service.asked
