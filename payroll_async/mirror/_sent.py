"""Pages for the mirror: each item's fields and its JSON bytes exactly as the service sent them.

The mirror keeps the item as sent (``mirror_item``, unknown fields included) and compares a
digest of those bytes with the one kept in its row, so an unchanged item costs no typed
comparison. With msgspec (the ``speedups`` extra) the fields come from msgspec's decode
and no model is built; every page msgspec cannot vouch for goes through the models, with
their errors, as any listing's (``RawPageDecoder`` does the same for the export).

A page is a `SentPage`: a list of the items' fields (msgspec's structs, or the models),
with the items' ids as text and their bytes beside it, so that the walk and the store do
their per-item work a page at a time (``map`` over the page, not a Python object an item).
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

import xxhash

from .._core._converter import to_dict
from .._core._json import dumps
from .._http._response import Response
from .._paging._decode import PageDecoder, _fast
from ..models import ListMeta
from ._driver import id_text

__all__ = ["SentPage", "SentPageDecoder", "digest", "digests", "sent_listing"]

_xxh3 = xxhash.xxh3_64_intdigest
_SIGNED = 1 << 63


def digest(raw: Any) -> int:
    """A 64-bit digest of an item's bytes (``mirror_digest``): XXH3, signed to fit a BIGINT."""
    return _xxh3(raw) - _SIGNED


def digests(raws: list[Any]) -> list[int]:
    """``digest`` of each of ``raws``."""
    return [value - _SIGNED for value in map(_xxh3, raws)]


class SentPage(list):  # type: ignore[type-arg]
    """One page as sent: the items' fields (each by the model's attribute names), ``ids``
    (each item's id as lower-case ``8-4-4-4-12`` text) and ``raws`` (each item's JSON
    bytes), in the same order."""

    __slots__ = ("ids", "raws")

    def __init__(self, items: list[Any], ids: list[str], raws: list[Any]) -> None:
        super().__init__(items)
        self.ids = ids
        self.raws = raws


def _lower(ids: list[str]) -> list[str]:
    """Ids as text, lower-cased a page at a time (ids hold no line break)."""
    joined = "\n".join(ids)
    lowered = joined.lower()
    return ids if lowered == joined else lowered.split("\n")


class SentPageDecoder:
    """The pages of one listing as `SentPage` items: ``decode(response) -> (page, meta)``."""

    def __init__(self, model: type[Any], key: str) -> None:
        self._models = PageDecoder(model)
        self._fast = _fast(model)
        self._get_key = operator.attrgetter(key)

    def decode(self, response: Response) -> tuple[SentPage, ListMeta]:
        key = self._get_key
        fast = self._fast
        if fast is not None:
            result = fast.decode_wire_page(response.body)
            if result is not None:
                wires, raws, meta = result
                return SentPage(wires, _lower(list(map(key, wires))), raws), meta
        items, meta = self._models.decode_slow(response)  # the errors, as for models
        raws = None if fast is None else fast.raw_items(response.body)
        if raws is None or len(raws) != len(items):
            raws = [dumps(to_dict(item)) for item in items]
        return SentPage(items, [id_text(key(m)) for m in items], raws), meta


def sent_listing(listing: Callable[..., Any], key: str) -> Callable[..., Any]:
    """``listing`` (a list method of the client) with its pages decoded as `SentPage`s."""
    decoders: dict[type[Any], SentPageDecoder] = {}

    def sent(**options: Any) -> Any:
        paginator = listing(**options)
        model = paginator.model
        decoder = decoders.get(model)
        if decoder is None:
            decoder = decoders[model] = SentPageDecoder(model, key)
        return paginator._with_decoder(decoder)

    return sent
