"""Pages for the mirror: each item's fields, and its JSON bytes exactly as the service sent them.

A page is a `SentPage`: the items' fields (msgspec's structs with the ``speedups`` extra,
else the models, with their errors, as any listing's), with their ids, bytes and digests
beside them, so that the walk and the store work a page at a time. An item whose digest a
live row had when the run began is unchanged (its bytes are the row's ``mirror_item``):
only its id and order key are decoded; a page with an item the decode refuses goes whole
the models' way, with the same error. The digests are seeded by the model's fields
(``digest_seed``), so that a release whose model differs decodes every item again.
"""

from __future__ import annotations

import operator
import sys
from array import array
from collections.abc import Callable
from itertools import compress
from typing import Any, get_type_hints

import attrs
import xxhash

from .._core._converter import to_dict
from .._core._json import dumps
from .._http._seam import Response
from .._paging._decode import PageDecoder, fast_decoder
from .._sql import has_upper, id_text
from ..models import ListMeta
from ._seen import KnownDigests, SeenIds

__all__ = ["SentPage", "SentPageDecoder", "digest_seed", "digests", "record_ids"]

_xxh3 = xxhash.xxh3_64_intdigest
_xxh3_bytes = xxhash.xxh3_64_digest
_LITTLE = sys.byteorder == "little"


def digest_seed(model: type[Any]) -> int:
    """The seed of the digests of ``model``'s items: its fields' names and types, so that
    a release whose model reads the items differently never takes an item for unchanged."""
    hints = get_type_hints(model)
    fields = [f"{f.name}: {hints[f.name]!r}" for f in attrs.fields(model)]
    return _xxh3(f"{model.__qualname__}({', '.join(fields)})".encode())


def digests(raws: list[Any], seed: int = 0) -> array[int]:
    """XXH3 of each of ``raws`` (``mirror_digest``) as a signed 64-bit integer, in C."""
    hashed = array("q", b"".join(map(_xxh3_bytes, raws, [seed] * len(raws))))
    if _LITTLE:
        hashed.byteswap()
    return hashed


class SentPage(list):  # type: ignore[type-arg]
    """One page as sent: the items' fields (of an unchanged item, its id and order key),
    ``ids`` (lower-case ``8-4-4-4-12`` text; not given: ``key`` of each item, when first
    read), ``raws`` (each item's JSON bytes), ``digests`` (of those), ``known`` (whether a
    live row holds an item's very bytes; None: none does) and ``blob`` (the ids' 16 bytes
    each, when msgspec read the page), in order."""

    __slots__ = ("_ids", "blob", "body", "digests", "key", "known", "raws")

    def __init__(
        self,
        items: list[Any],
        ids: list[str] | None,
        raws: list[Any],
        digests: array[int],
        known: list[bool] | None,
        blob: bytes | None,
        key: Callable[[Any], str],
    ) -> None:
        super().__init__(items)
        self._ids, self.key = ids, key
        self.raws = raws
        self.digests = digests
        self.known = known
        self.blob = blob
        self.body: bytes = b""
        """The page's body as the service sent it (SQLite reads the items from it)."""

    @property
    def ids(self) -> list[str]:
        if self._ids is None:  # (most pages of a re-mirror are never written: never read)
            self._ids = _lower(list(map(self.key, self)))
        return self._ids

    def changed(self) -> bool:
        """Whether some item of the page is not known (to be written, or compared)."""
        return bool(self) and (self.known is None or not all(self.known))


def _lower(ids: list[str]) -> list[str]:
    """Ids as text, lower-cased a page at a time (ids hold no line break)."""
    joined = "\n".join(ids)
    return joined.lower().split("\n") if has_upper(joined) else ids


class SentPageDecoder:
    """The pages of one listing as `SentPage` items (``known``: the live rows' digests;
    ``order``: the field the walk checks the order of)."""

    def __init__(
        self,
        model: type[Any],
        key: str,
        order: str | None = None,
        known: KnownDigests | None = None,
    ) -> None:
        self._models = PageDecoder(model)
        self._fast = fast_decoder(model)
        self._key = key
        self._get_key = operator.attrgetter(key)
        self._few = tuple(dict.fromkeys((key, order or key)))
        self._known = known
        self._seed = digest_seed(model)

    def decode(self, response: Response) -> tuple[SentPage, ListMeta]:
        page, meta = self._decode(response)
        page.body = response.body
        return page, meta

    def _decode(self, response: Response) -> tuple[SentPage, ListMeta]:
        fast = self._fast
        if fast is not None:
            body = response.body
            known = self._known
            if known:
                # Rows are kept: the fields of the items that changed only.
                few = fast.decode_few_fields(body, self._few, self._key)
                if few is not None:
                    page = self._some_known(fast, known, *few)
                    if page is not None:
                        return page
            result = fast.decode_keyed_page(body, self._key)
            if result is not None:
                wires, raws, meta, blob = result
                return self._whole(wires, None, raws, blob), meta
        items, meta = self._models.decode_slow(response)  # the errors, as for models
        raws = None if fast is None else fast.raw_items(response.body)
        if raws is None or len(raws) != len(items):
            raws = [dumps(to_dict(item)) for item in items]
        key = self._get_key
        ids = [id_text(key(m)) for m in items]
        return self._whole(items, ids, raws, None), meta

    def _whole(
        self, items: list[Any], ids: list[str] | None, raws: list[Any], blob: bytes | None
    ) -> SentPage:
        hashes = digests(raws, self._seed)
        known = self._known.found(hashes) if self._known else None
        return SentPage(items, ids, raws, hashes, known, blob, self._get_key)

    def _some_known(
        self,
        fast: Any,
        known: KnownDigests,
        few: list[Any],
        raws: list[Any],
        meta: ListMeta,
        blob: bytes | None,
    ) -> tuple[SentPage, ListMeta] | None:
        """The page, decoding whole only the items not known (None: the decode refuses one)."""
        hashes = digests(raws, self._seed)
        same = known.found(hashes)
        if all(same):
            return SentPage(few, None, raws, hashes, same, blob, self._get_key), meta
        changed = [at for at in range(len(few)) if not same[at]]
        whole = fast.decode_items(list(compress(raws, map(operator.not_, same))))
        if whole is None:
            return None
        items = list(few)
        for at, item in zip(changed, whole, strict=True):
            items[at] = item
        return SentPage(items, None, raws, hashes, same, blob, self._get_key), meta


def record_ids(seen: SeenIds, page: SentPage, start: int) -> None:
    """The ids of ``page`` from its ``start``th item on into ``seen`` (its ids' 16 bytes
    each when msgspec read the page, else their text)."""
    if page.blob is not None:
        seen.add_blob(page.blob[16 * start :])
    else:
        seen.add(page.ids[start:])
