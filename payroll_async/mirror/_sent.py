"""Pages for the mirror: each item's fields and its JSON bytes exactly as the service sent them.

The mirror keeps the item as sent (``mirror_item``, unknown fields included) and compares a
digest of those bytes with the one kept in its row, so an unchanged item costs no typed
comparison. With msgspec (the ``speedups`` extra) the fields come from msgspec's decode
and no model is built; every page msgspec cannot vouch for goes through the models, with
their errors, as any listing's (``RawPageDecoder`` does the same for the export).
"""

from __future__ import annotations

import hashlib
import operator
from collections.abc import Callable
from typing import Any

from .._core._converter import to_dict
from .._core._json import dumps
from .._http._response import Response
from .._paging._decode import PageDecoder, _fast
from ..models import ListMeta
from ._driver import id_text

__all__ = ["Sent", "SentPageDecoder", "digest", "sent_listing"]


def digest(raw: Any) -> int:
    """A 64-bit digest of an item's bytes (``mirror_digest``), signed to fit a BIGINT."""
    return int.from_bytes(hashlib.blake2b(raw, digest_size=8).digest(), "big", signed=True)


class Sent:
    """One item as sent: ``key`` (its id as lower-case ``8-4-4-4-12`` text), ``item`` (its
    fields by the model's attribute names), ``raw`` (its JSON bytes)."""

    __slots__ = ("item", "key", "raw")

    def __init__(self, key: str, item: Any, raw: Any) -> None:
        self.key = key
        self.item = item
        self.raw = raw


class SentPageDecoder:
    """The pages of one listing as `Sent` items: ``decode(response) -> (items, meta)``.

    The items have the id as an attribute of the key's name too (``sent.id``, ...), as the
    walk reads it.
    """

    def __init__(self, model: type[Any], key: str) -> None:
        self._models = PageDecoder(model)
        self._fast = _fast(model)
        self._get_key = operator.attrgetter(key)
        self._type: Callable[[str, Any, Any], Sent] = type(
            f"Sent{model.__name__}", (Sent,), {"__slots__": (), key: property(_key_of)}
        )

    def decode(self, response: Response) -> tuple[list[Sent], ListMeta]:
        make, key = self._type, self._get_key
        fast = self._fast
        if fast is not None:
            result = fast.decode_wire_page(response.body)
            if result is not None:
                wires, raws, meta = result
                return [make(key(w).lower(), w, r) for w, r in zip(wires, raws, strict=True)], meta
        items, meta = self._models.decode_slow(response)  # the errors, as for models
        raws = None if fast is None else fast.raw_items(response.body)
        if raws is None or len(raws) != len(items):
            raws = [dumps(to_dict(item)) for item in items]
        return [make(id_text(key(m)), m, r) for m, r in zip(items, raws, strict=True)], meta


def _key_of(sent: Sent) -> str:
    return sent.key


def sent_listing(listing: Callable[..., Any], key: str) -> Callable[..., Any]:
    """``listing`` (a list method of the client) with its pages decoded as `Sent` items."""
    decoders: dict[type[Any], SentPageDecoder] = {}

    def sent(**options: Any) -> Any:
        paginator = listing(**options)
        model = paginator.model
        decoder = decoders.get(model)
        if decoder is None:
            decoder = decoders[model] = SentPageDecoder(model, key)
        return paginator._with_decoder(decoder)

    return sent
