"""The walk's proof, property-based: whatever changes between its page fetches, a walk
that says it is proven has seen every item that existed during the whole walk; and
whatever a listing's answers lie about (short pages, a capped totalCount, the order, a
repeated or hidden item), a walk that says it is proven has seen every item."""

from __future__ import annotations

import asyncio
import operator
import random

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from payroll_async.mirror._proof import prove
from payroll_async.mirror._walk import Walk


@attrs.frozen
class Meta:
    total_count: int
    limit: int
    offset: int


@attrs.frozen
class FakePage:
    items: list[int]
    meta: Meta


class FakeListing:
    """What every fake listing gives a walk beside its ``request``: the answer is the page,
    and the walk's end is not recorded."""

    def page(self, answer: FakePage) -> FakePage:
        return answer

    def end(self, pages: int, items: int) -> None:
        pass


class ChangingListing(FakeListing):
    """A sorted listing of ints that changes (seeded) before each of its first ``busy``
    pages, then stays quiet (a listing that grows as fast as a walk advances could
    otherwise keep a walk going for ever)."""

    def __init__(
        self, size: int, seed: int, inserts: int, deletes: int, at_end: bool, busy: int = 40
    ) -> None:
        self.busy = busy
        self.items = list(range(0, size * 10, 10))
        self.rng = random.Random(seed)
        self.inserts = inserts
        self.deletes = deletes
        self.at_end = at_end
        self.next_new = size * 10
        self.ever: set[int] = set(self.items)
        self.removed: set[int] = set()
        self.born: set[int] = set()

    def change(self) -> None:
        if self.busy == 0:
            return
        self.busy -= 1
        for _ in range(self.rng.randint(0, self.deletes)):
            if self.items:
                self.removed.add(self.items.pop(self.rng.randrange(len(self.items))))
        for _ in range(self.rng.randint(0, self.inserts)):
            if self.at_end or not self.items:
                self.items.append(self.next_new)
                self.born.add(self.next_new)
                self.next_new += 10
            else:  # an item between two others (a stable order, as the proof needs)
                at = self.rng.randrange(len(self.items))
                value = self.items[at] - self.rng.randint(1, 9)
                if value not in self.ever and (at == 0 or self.items[at - 1] < value):
                    self.items.insert(at, value)
                    self.born.add(value)
            self.ever.update(self.items)

    def request(self, offset: int, limit: int) -> asyncio.Future[FakePage]:
        async def answer() -> FakePage:
            await asyncio.sleep(0)  # let other fetches interleave
            self.change()
            items = self.items[offset : offset + limit]
            return FakePage(list(items), Meta(len(self.items), limit, offset))

        return asyncio.ensure_future(answer())


async def walked(walk: Walk, least: int = 0) -> set[int]:
    """Every item the walk's batches held (a batch of fewer than ``least`` items waiting
    for the next page, as long as it takes)."""
    seen: set[int] = set()
    async for batch in walk.batches(3, least, 3600.0 if least else 0.0):
        for items in batch:
            seen.update(items)
    return seen


def same(item: int) -> int:
    """An item is its own id and order key."""
    return item


@settings(max_examples=300, deadline=None)
@given(
    size=st.integers(0, 120),
    page=st.integers(2, 12),
    seed=st.integers(0, 2**32),
    inserts=st.integers(0, 2),
    deletes=st.integers(0, 2),
    at_end=st.booleans(),
    concurrency=st.integers(1, 4),
    least=st.sampled_from([0, 7, 1000]),
)
def test_a_proven_walk_saw_every_item_that_existed_throughout(
    size: int,
    page: int,
    seed: int,
    inserts: int,
    deletes: int,
    at_end: bool,
    concurrency: int,
    least: int,
) -> None:
    listing = ChangingListing(size, seed, inserts, deletes, at_end)
    walk = Walk(listing, same, same, page_size=page, concurrency=concurrency)

    seen = asyncio.run(walked(walk, least))
    throughout = set(range(0, size * 10, 10)) - listing.removed
    if walk.proven:
        assert throughout <= seen
    if inserts == deletes == 0:
        assert walk.proven  # a quiet listing is always proven
        assert seen == set(listing.items)


def test_a_walk_chasing_a_listing_that_grows_as_fast_as_it_advances_stops_unproven() -> None:
    listing = ChangingListing(50, seed=1, inserts=0, deletes=0, at_end=True, busy=0)

    def grow() -> None:  # a page's worth of new items before every page
        listing.items.extend(range(listing.next_new, listing.next_new + 50, 10))
        listing.next_new += 50

    listing.change = grow  # type: ignore[method-assign]
    walk = Walk(listing, same, same, page_size=5, concurrency=2)

    async def run() -> int:
        pages = 0
        async for _ in walk.batches(1):  # a page at a time
            pages += 1
        return pages

    pages = asyncio.run(asyncio.wait_for(run(), 30))
    assert not walk.proven
    assert pages <= 2 * (50 // 4) + 16 + 2 * 2 + 1


LIES = ("short", "empty", "capped", "swap", "repeat", "hide", "long")


class LyingListing(FakeListing):
    """A listing of ints that stays the same, answered with a lie (seeded, one of
    ``lies``) to about one request in ``every``."""

    def __init__(self, size: int, seed: int, lies: list[str], every: int) -> None:
        self.items = list(range(0, size * 10, 10))
        self.rng = random.Random(seed)
        self.lies = lies
        self.every = every
        self.told = 0

    def lie(self, offset: int, limit: int) -> tuple[list[int], int]:
        items, total = self.items[offset : offset + limit], len(self.items)
        if not self.lies or self.rng.randrange(self.every):
            return items, total
        self.told += 1
        lie = self.rng.choice(self.lies)
        at = self.rng.randrange(max(1, len(items)))
        if lie == "short":  # fewer items than asked, totalCount unchanged
            return items[:at], total
        if lie == "empty":
            return [], total
        if lie == "capped":  # a totalCount below the listing's size
            return items, self.rng.randrange(total + 1)
        if lie == "swap" and len(items) >= 2:  # two neighbours the other way round
            at = min(at, len(items) - 2)
            items[at], items[at + 1] = items[at + 1], items[at]
        elif lie == "repeat" and offset > 0 and items:  # an earlier item in place of one
            items[at] = self.items[self.rng.randrange(offset)]
        elif lie == "hide" and items:  # one item left out, the next one pulled in
            items = items[:at] + self.items[offset + at + 1 : offset + limit + 1]
        elif lie == "long":  # one item more than asked
            items = self.items[offset : offset + limit + 1]
        return items, total

    def request(self, offset: int, limit: int) -> asyncio.Future[FakePage]:
        async def answer() -> FakePage:
            await asyncio.sleep(0)
            items, total = self.lie(offset, limit)
            return FakePage(items, Meta(total, limit, offset))

        return asyncio.ensure_future(answer())


@settings(max_examples=300, deadline=None)
@given(
    size=st.integers(0, 120),
    page=st.integers(2, 12),
    seed=st.integers(0, 2**32),
    lies=st.lists(st.sampled_from(LIES), unique=True),
    every=st.integers(1, 6),
    concurrency=st.integers(1, 4),
    least=st.sampled_from([0, 1000]),
)
def test_a_walk_of_a_listing_that_lies_is_proven_only_if_it_saw_every_item(
    size: int, page: int, seed: int, lies: list[str], every: int, concurrency: int, least: int
) -> None:
    listing = LyingListing(size, seed, lies, every)
    walk = Walk(listing, same, same, page_size=page, concurrency=concurrency)

    seen = asyncio.run(walked(walk, least))
    if walk.proven:
        assert seen == set(listing.items)
    if listing.told == 0:
        assert walk.proven


class GatedListing(FakeListing):
    """A listing of ints whose pages answer at once, but for one offset's, which answers
    (or fails with ``failure``) when ``gate`` is set."""

    def __init__(self, size: int, slow: int, failure: Exception | None = None) -> None:
        self.items = list(range(0, size * 10, 10))
        self.slow = slow
        self.failure = failure
        self.gate = asyncio.Event()
        self.waiting = asyncio.Event()  # the slow page was asked for

    def request(self, offset: int, limit: int) -> asyncio.Future[FakePage]:
        async def answer() -> FakePage:
            if offset == self.slow:
                self.waiting.set()
                await self.gate.wait()
                if self.failure is not None:
                    raise self.failure
            items = self.items[offset : offset + limit]
            return FakePage(items, Meta(len(self.items), limit, offset))

        return asyncio.ensure_future(answer())


def firsts(batches: list[list[list[int]]]) -> list[list[int]]:
    """Each batch as the first item of each of its pages."""
    return [[page[0] for page in batch] for batch in batches]


async def idle() -> None:
    """Let every task that can go on do so (no time passes: each hop is one turn)."""
    for _ in range(20):
        await asyncio.sleep(0)


def test_a_batch_smaller_than_least_waits_for_the_next_page_within_the_hold() -> None:
    async def run() -> list[list[list[int]]]:
        listing = GatedListing(20, slow=8)  # pages at offsets 0, 4, 8, 12, 16
        walk = Walk(listing, same, same, page_size=5, concurrency=4)
        batches = walk.batches(10, 1000, 3600.0)
        first = asyncio.ensure_future(anext(batches))
        await listing.waiting.wait()
        await idle()
        assert not first.done()  # pages 0 and 4 came, 8 has not: the batch waits
        listing.gate.set()
        got = [await first]
        got += [batch async for batch in batches]
        return got

    got = asyncio.run(run())
    assert firsts(got) == [[0, 40, 80, 120, 160]]


def test_a_batch_waits_no_longer_than_the_hold() -> None:
    async def run() -> list[list[list[int]]]:
        listing = GatedListing(20, slow=8)
        walk = Walk(listing, same, same, page_size=5, concurrency=4)
        batches = walk.batches(10, 1000, 0.0)
        got = [await anext(batches)]  # given while page 8 has not come
        listing.gate.set()
        got += [batch async for batch in batches]
        return got

    got = asyncio.run(run())
    assert 80 not in firsts(got)[0]  # given before the slow page came
    assert [first for batch in firsts(got) for first in batch] == [0, 40, 80, 120, 160]


def test_a_held_batch_is_given_before_the_failure_of_the_page_it_waited_for() -> None:
    class Down(Exception):
        pass

    async def run() -> tuple[list[list[int]], BaseException | None]:
        listing = GatedListing(20, slow=8, failure=Down("page 8 failed"))
        walk = Walk(listing, same, same, page_size=5, concurrency=4)
        batches = walk.batches(10, 1000, 3600.0)
        first = asyncio.ensure_future(anext(batches))
        await listing.waiting.wait()
        await idle()
        assert not first.done()
        listing.gate.set()
        batch = await first
        try:
            await anext(batches)
        except Down as exc:
            return batch, exc
        return batch, None

    batch, failure = asyncio.run(run())
    assert firsts([batch]) == [[0, 40]]
    assert isinstance(failure, Exception)
    assert str(failure) == "page 8 failed"


def test_no_batch_of_a_near_listing_waits() -> None:
    async def run() -> list[list[list[int]]]:
        listing = GatedListing(20, slow=8)  # its first page comes at once
        walk = Walk(listing, same, same, page_size=5, concurrency=4)
        batches = walk.batches(10, 1000, 3600.0, near=3600.0)
        first = asyncio.ensure_future(anext(batches))
        await listing.waiting.wait()
        await idle()
        assert first.done()  # given while page 8 has not come: no wait
        got = [first.result()]
        listing.gate.set()
        got += [batch async for batch in batches]
        return got

    got = asyncio.run(run())
    assert 80 not in firsts(got)[0]
    assert [first for batch in firsts(got) for first in batch] == [0, 40, 80, 120, 160]


# -- the proof alone: a pure function of the pages given, in order ---------------------


def _pages(*pages: list[int], total: int, size: int = 5) -> list[tuple[int, FakePage]]:
    """Pages asked at offsets 0, size - 1, 2 * (size - 1)... (overlapping by one)."""
    return [
        (k * (size - 1), FakePage(items, Meta(total, size, k * (size - 1))))
        for k, items in enumerate(pages)
    ]


def test_pages_that_overlap_and_end_on_their_total_are_proven() -> None:
    pages = _pages([0, 1, 2, 3, 4], [4, 5, 6, 7, 8], [8, 9, 10, 11], total=12)
    proof = prove(pages, 5, same, same)
    assert (proof.proven, proof.doubt) == (True, None)


@pytest.mark.parametrize(
    ("pages", "total", "doubt"),
    [
        (([0, 1, 2, 3, 4], [5, 6, 7, 8, 9], [9, 10, 11]), 12, "does not start with the previous"),
        (([0, 1, 2, 3, 4], [4, 5, 6, 7, 8], [8, 9, 2]), 11, "items out of order"),
        (([0, 1, 2, 3, 4], [4, 5, 6, 7, 8], [8, 9]), 12, "totalCount says more"),
        (([0, 1, 2, 3, 4], [4, 5, 6, 7, 8], [8, 9, 10, 11]), 3, "totalCount 3 below"),
        (([0, 1, 2, 3, 4], [4, 5, 1, 7, 8], [8, 9, 10, 11]), 12, "items out of order"),
    ],
)
def test_pages_that_disagree_with_what_the_service_said_are_not_proven(
    pages: tuple[list[int], ...], total: int, doubt: str
) -> None:
    proof = prove(_pages(*pages, total=total), 5, same, same)
    assert not proof.proven
    assert proof.doubt is not None
    assert doubt in proof.doubt


def test_an_id_seen_twice_is_found_at_the_end() -> None:
    """Items (id, order key) in order, one id twice (as a repeated item pushes another out
    of a page): only the ids, at the end, tell."""
    first = [(i, i) for i in range(5)]
    second = [(4, 4), (5, 5), (6, 6), (1, 7)]
    pages = [(0, FakePage(first, Meta(8, 5, 0))), (4, FakePage(second, Meta(8, 5, 4)))]
    proof = prove(pages, 5, operator.itemgetter(0), operator.itemgetter(1))
    assert (proof.proven, proof.doubt) == (False, "an id seen twice")
