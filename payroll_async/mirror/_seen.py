"""The ids a walk or a pass saw (an exact set, 16 bytes an id), and the live rows' digests.

Up to ``_FEW`` ids are counted at ``freeze()`` by a set of their first halves. Past it,
each id goes, as its 16 bytes, into one of 256 buckets chosen by a byte of both halves
(ids sharing a half still spread), counted bucket by bucket as two ``array("Q")`` of
halves, so that a million ids never become a million Python ints at once (``tracemalloc``,
1,000,000 ids: 16.5 MB while adding, 17.7 MB at the peak of the freeze); the first lookup
sorts each bucket. Exact: no collision can hide an item or invent one.
"""

from __future__ import annotations

import contextlib
import operator
import sys
import uuid
from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Sequence
from functools import partial
from itertools import repeat

from .._paging._fastdecode import id_blob

__all__ = ["KNOWN_SET_ROWS", "KnownDigests", "SeenIds"]

_MASK = (1 << 64) - 1
_BUCKETS = 256
_LITTLE = sys.byteorder == "little"
_PENDING = 64 * 1024  # bytes of ids (4,096) put into their buckets at once
_FEW = 16 * 200_000  # bytes of ids counted at once (a set of 200,000 ints, about 13 MB)


def _as_int(value: uuid.UUID | int | str) -> int:
    if isinstance(value, str):  # an id as the service writes it (8-4-4-4-12 hex)
        return int(value.replace("-", ""), 16)
    return value.int if isinstance(value, uuid.UUID) else value % (1 << 128)


def _distinct(highs: Sequence[int], lows: Sequence[int]) -> int:
    """The distinct ids of these halves: first halves all different, so are the ids (one
    integer an id, no pair); else the pairs are counted."""
    count = len(set(highs))
    return count if count == len(highs) else len(set(zip(highs, lows, strict=True)))


class SeenIds:
    """An exact set of ids (``uuid.UUID``, their ``8-4-4-4-12`` text, or ints taken modulo
    2**128): add, freeze, look up."""

    def __init__(self) -> None:
        self._high = [array("Q") for _ in range(_BUCKETS)]
        self._low = [array("Q") for _ in range(_BUCKETS)]
        self._pending = bytearray()  # ids' bytes not in buckets yet (all, while few)
        self._records = [bytearray() for _ in range(_BUCKETS)]
        self._bucketed = False  # past ``_FEW``: the ids go into buckets as they come
        self.added = 0
        """How many ids were added, repeats included."""
        self.frozen = False
        self._sorted = False
        self._distinct = 0

    def add(self, ids: Iterable[uuid.UUID | int | str]) -> None:
        """Add ``ids`` (before ``freeze()``)."""
        values = ids if isinstance(ids, list) else list(ids)
        blob = id_blob(values)  # None: not all 8-4-4-4-12 text, so one at a time
        if blob is None:
            blob = b"".join([_as_int(value).to_bytes(16, "big") for value in values])
        self.add_blob(blob)

    def add_blob(self, blob: bytes) -> None:
        """Add the ids whose 16 bytes (big-endian, one id after another, as ``id_blob``
        gives them) ``blob`` holds (before ``freeze()``)."""
        if self.frozen:
            raise RuntimeError("SeenIds: add after freeze")
        self._pending += blob
        self.added += len(blob) // 16
        if len(self._pending) >= (_PENDING if self._bucketed else _FEW):
            self._flush()

    def _flush(self) -> None:
        """The pending ids' bytes into their buckets (16 bytes an id, big-endian): each
        id's bucket is the XOR of its two halves' last bytes, computed for all of them at
        once (big integers), so that the loop only copies each id's 16 bytes."""
        pending, self._pending = bytes(self._pending), bytearray()
        self._bucketed = True
        count = len(pending) // 16
        if not count:
            return
        highs = int.from_bytes(pending[7::16], "little")
        lows = int.from_bytes(pending[15::16], "little")
        buckets = (highs ^ lows).to_bytes(count, "little")  # (high ^ low) & 0xFF, each
        records = self._records
        for bucket, at in zip(buckets, range(0, len(pending), 16), strict=True):
            records[bucket] += pending[at : at + 16]

    def freeze(self) -> None:
        """Count the distinct ids; lookups work from now on."""
        if not self.frozen:
            if self._bucketed:
                self._bucket()
                self._distinct = sum(map(_distinct, self._high, self._low))
            else:  # few: as halves in any byte order (distinct or not alike), not copied
                with memoryview(self._pending) as view, view.cast("Q") as words:
                    self._distinct = _distinct(words[0::2], words[1::2])
            self.frozen = True

    def _bucket(self) -> None:
        """The ids into their buckets, each bucket's bytes as its halves."""
        self._flush()
        for at, records in enumerate(self._records):
            words = array("Q", records)  # 64-bit halves ("Q" is 8 bytes wherever CPython is)
            if _LITTLE:
                words.byteswap()  # the big-endian halves, as int(text, 16) gives them
            self._high[at].extend(words[0::2])
            self._low[at].extend(words[1::2])
            self._records[at] = bytearray()

    def _sort(self) -> None:
        """Sort each bucket and drop repeats (at the first lookup: a run whose walk saw
        every live row looks none up)."""
        if not self._bucketed:
            self._bucket()
        for at in range(_BUCKETS):
            pairs = sorted(set(zip(self._high[at], self._low[at], strict=True)))
            self._high[at] = array("Q", [high for high, _ in pairs])
            self._low[at] = array("Q", [low for _, low in pairs])
        self._sorted = True

    def __len__(self) -> int:
        if not self.frozen:
            raise RuntimeError("SeenIds: len before freeze")
        return self._distinct

    def __contains__(self, value: object) -> bool:
        if not self.frozen:
            raise RuntimeError("SeenIds: lookup before freeze")
        if not isinstance(value, (uuid.UUID, int, str)):
            return False
        if not self._sorted:
            self._sort()
        number = _as_int(value)
        high, low = number >> 64, number & _MASK
        at = (high ^ low) & (_BUCKETS - 1)  # as _flush's buckets
        highs = self._high[at]
        start = bisect_left(highs, high)
        if start == len(highs) or highs[start] != high:
            return False
        lows = self._low[at]
        if lows[start] == low:
            return True
        end = bisect_right(highs, high, start)  # ids sharing their first 64 bits
        found = bisect_left(lows, low, start, end)
        return found < end and lows[found] == low


KNOWN_SET_ROWS = 500_000
"""Up to this many live rows, their digests are looked up in a set (a look-up in C, about
64 bytes a row); past it, in a sorted array (8 bytes a row, a binary search each)."""

_NEAR = 4096  # how far from where it expects them the cursor looks for the pages' items


class KnownDigests:
    """The live rows' digests when a run began (``mirror_digest``), in the order read (in
    SQLite the rows' order, the order a walk meets their items in): which of a page's
    digests are among them. A cursor follows the walk: a page whose digests are the next
    ones is known whole by one comparison in C; any other is looked up digest by digest
    (in a set, or a sorted array past ``KNOWN_SET_ROWS`` rows), and the cursor moves to
    its last known item."""

    def __init__(self, digests: Iterable[int] | None = None) -> None:
        self._order = array("q")
        self._pos = 0
        self._exact: set[int] | None = None
        self._sorted: array[int] | None = None
        if digests is not None:
            self.add(list(digests))

    def add(self, digests: list[int]) -> None:
        """Add some digests (64-bit signed integers), before the first look-up."""
        self._order.fromlist(digests)  # (twice as fast as extend)

    def __bool__(self) -> bool:
        return bool(self._order)

    def found(self, digests: array[int]) -> list[bool]:
        """For each of ``digests`` (a page's, in order), whether it is known."""
        count = len(digests)
        order, at = self._order, self._pos
        # The page's items after the last page's (or from its last one: pages overlap).
        if order[at : at + count] == digests:
            self._pos = at + count
            return [True] * count
        if at and order[at - 1 : at - 1 + count] == digests:
            self._pos = at - 1 + count
            return [True] * count
        same = self._look_up(digests)
        for value, known in zip(reversed(digests), reversed(same), strict=True):
            if known:  # the cursor goes on from the page's last known item, if near
                with contextlib.suppress(ValueError):
                    self._pos = order.index(value, max(0, at - _NEAR), at + count + _NEAR) + 1
                break
        return same

    def _look_up(self, digests: array[int]) -> list[bool]:
        if self._exact is None and self._sorted is None:
            if len(self._order) <= KNOWN_SET_ROWS:
                self._exact = set(self._order)
            else:
                self._sorted = array("q", sorted(self._order))
        if self._exact is not None:
            return list(map(self._exact.__contains__, digests))
        known = self._sorted
        assert known is not None
        spots = map(min, map(partial(bisect_left, known), digests), repeat(len(known) - 1))
        return list(map(operator.eq, digests, map(known.__getitem__, spots)))
