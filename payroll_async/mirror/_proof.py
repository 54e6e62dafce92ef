"""The mirror's proof: whether the pages of a walk, in the order it took them, can have
missed an item, a pure function of those pages (``prove``; ``Proof`` takes them one at a
time as the walk gets them).

Page 0 holds every item up to its last one, and a page k+1 that starts with page k's last
item holds every item after it up to its own last one, whenever each page was fetched.
When every overlap holds and a page shorter than asked reaches its own ``totalCount``,
every item that existed during the whole walk was seen: the walk is *proven*. Anything
that disagrees with what the service said makes it unproven (``doubt``: the first
reason):

- a page that does not start with the previous page's last item;
- a page shorter than asked while its ``totalCount`` says more (the walk goes on from its
  last item), or longer than asked;
- ``meta.limit`` other than the page size walked, ``meta.offset`` other than asked, or no
  integer ``totalCount``;
- a ``totalCount`` below the items seen up to that page (a capped count: the walk goes on
  while pages come back full, up to its bound);
- order keys (``_assumed.MIRROR_ORDER``) going down, changing for the boundary item, or
  tying at a page's edge;
- one id seen twice, other than each boundary item (found at the end of the walk, or of
  the pass when the walk adds its ids to the pass's ``seen``).
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from .._paging._page import Page
from ._seen import SeenIds

__all__ = ["END", "GO_ON", "SHORT", "Proof", "prove"]

GO_ON, END, SHORT = range(3)
"""What comes after a page: the next one, the end, or a walk on from its last item."""


class Proof:
    """The proof of one walk, page by page; ``proven`` once ``end()`` said so."""

    def __init__(
        self,
        key: Callable[[Any], Any],
        order: Callable[[Any], Any],
        page_size: int,
        *,
        seen: SeenIds | None = None,
        record: Callable[[SeenIds, Any, int], None] | None = None,
    ) -> None:
        self._key = key
        self._order = order
        self.size = page_size
        """The page size walked (the service's own, once its first page says it is smaller)."""
        self._record = record
        """How a page's ids from ``start`` on go into the ids seen (None: ``key`` of each)."""
        # The ids seen, each once (a boundary item only in its first page): the proof's
        # own, to find an id seen twice at its end; or ``seen``, which the caller checks so.
        self._own = seen is None
        self._ids: SeenIds | None = SeenIds() if seen is None else seen
        self._boundary: Any = None  # the item the next page must start with
        self.capped = False
        """Whether a ``totalCount`` was below the items seen."""
        self.latest = 0
        """The latest page's ``totalCount``."""
        self.proven = False
        self.doubt: str | None = None
        """Why the walk is not proven (the first reason seen), or None."""

    def doubts(self, why: str) -> None:
        """The walk is not proven, for ``why`` (kept if it is the first reason)."""
        if self.doubt is None:
            self.doubt = why
            if self._own:
                self._ids = None  # no proof to keep ids for any more

    def end(self) -> bool:
        """The walk is over: whether it is proven."""
        ids = self._ids
        if self._own and ids is not None:
            ids.freeze()
            if len(ids) != ids.added:
                self.doubts("an id seen twice")
        self.proven = self.doubt is None
        return self.proven

    def page(self, offset: int, page: Page[Any]) -> int:
        """Check the next page (asked at ``offset``) against the pages before it and the
        service's words: ``GO_ON``, ``END`` or ``SHORT`` (walk on from its last item)."""
        outcome = self._check(offset, page, self._boundary)
        items = page.items
        self._boundary = items[-1] if outcome == GO_ON or len(items) >= 2 else None
        return outcome

    def _check(self, offset: int, page: Page[Any], boundary: Any) -> int:
        items = page.items
        got = len(items)
        meta = page.meta
        # Read as values of any type: whatever the service sent, nothing is taken on trust.
        counted: object = meta.total_count
        limit: object = meta.limit
        at: object = meta.offset
        total = counted if type(counted) is int else None
        if total is None:
            self.doubts("a page without an integer totalCount")
        else:
            self.latest = total
        if type(limit) is int and limit != self.size:
            self.doubts(f"meta.limit {limit} on a walk of pages of {self.size}")
        if type(at) is int and at != offset:
            self.doubts(f"meta.offset {at} for offset {offset}")
        if got > self.size:
            self.doubts(f"{got} items where {self.size} were asked for")
        start = 0
        if boundary is not None:
            if not items or self._key(items[0]) != self._key(boundary):
                self.doubts("a page that does not start with the previous page's last item")
            else:
                start = 1
                if self._order(items[0]) != self._order(boundary):
                    self.doubts("the boundary item's order key changed between pages")
        if self.doubt is None:
            self._check_order(items)
        if self._ids is not None:
            if self._record is not None:  # the page's own ids (a mirror's page: `SentPage`)
                self._record(self._ids, items, start)
            else:
                self._ids.add(list(map(self._key, items))[start:])
        reached = offset + got
        if got < self.size:
            if total is not None and reached == total:
                return END
            if total is not None and reached > total:
                self.doubts(f"totalCount {total} below the {reached} items seen")
                return END  # the service says no more, twice
            self.doubts(f"a short page ({got} of {self.size}) while totalCount says more")
            return SHORT
        if total is not None and reached > total:
            self.doubts(f"totalCount {total} below the {reached} items seen")
            self.capped = True
        return GO_ON

    def _check_order(self, items: Sequence[Any]) -> None:
        """Order keys never go down, and never tie at a page's edge (a page at a time:
        ``map`` in C)."""
        last = len(items) - 1
        if last < 1:
            return
        try:
            keys = list(map(self._order, items))
            if any(map(operator.lt, keys[1:], keys)):
                self.doubts("items out of order")
            elif not (keys[0] < keys[1] and keys[last - 1] < keys[last]):
                self.doubts("two items with the same order key at a page's edge")
        except TypeError:  # an order key that does not compare (None, another type)
            self.doubts("an order key that does not compare")


def prove(
    pages: Iterable[tuple[int, Page[Any]]],
    page_size: int,
    key: Callable[[Any], Any],
    order: Callable[[Any], Any],
) -> Proof:
    """The proof of the ``pages`` a walk took, in order, each with the offset it was asked
    at (pages after the end are not read)."""
    proof = Proof(key, order, page_size)
    for offset, page in pages:
        if proof.page(offset, page) == END:
            break
    proof.end()
    return proof
