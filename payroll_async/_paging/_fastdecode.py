"""The msgspec decode path: pages and single bodies to the same attrs models, at C speed.

Used automatically when msgspec is installed (the ``speedups`` extra). The msgspec types
are derived from the attrs models' fields (one definition of the fields), and every body
the fast path cannot vouch for goes to the converter's path, which stays the definition:

- a body that msgspec rejects is decoded again by the converter, so every error (its
  type and its message) is the converter's;
- a body where msgspec's grammar is wider than the converter's (32-digit UUIDs without
  hyphens, more than 6 fraction digits) is recognised by a scan of the bytes, and one
  with integers past 64 bits by a check of the decoded integers; it goes to the converter
  too.

So both paths accept and reject the same bodies with the same results and errors; the
property test in ``tests/_paging/test_fastdecode.py`` holds them to it.
"""

from __future__ import annotations

import datetime
import operator
import re
import uuid
from collections.abc import Callable, Mapping
from typing import Annotated, Any, TypeVar, get_type_hints

import attrs
import msgspec

from .._core._converter import to_camel
from ..models import EventType, ListMeta, event_type

__all__ = ["FastDecoder"]

T = TypeVar("T")

# Where msgspec's grammar is wider than the converter's, in what a scan of the bytes can
# see: fractions of a second beyond microseconds (msgspec rounds them, the converter
# cuts). Such a body goes to the converter. (UUIDs without hyphens: see _CANONICAL_UUID.)
_LONG_FRACTION = re.compile(rb"\.[0-9]{7}")
# orjson reads integers past these bounds as floats, msgspec as ints: such a body goes to
# the converter too, so that both paths give what the converter gives.
_INT_MIN = -(2**63)
_INT_END = 2**64


def _wider(body: bytes) -> bool:
    """Whether the body may hold what msgspec reads more widely than the converter."""
    # No "." at all (a memchr) rules out long fractions without the scan.
    return b"." in body and _LONG_FRACTION.search(body) is not None


class _Defer(Exception):
    """The converter must decide this body."""


def _checked_int(value: int) -> int:
    if not _INT_MIN <= value < _INT_END:
        raise _Defer
    return value


def _checked_any(value: Any) -> Any:
    """A free-form JSON value (``filters``), refused when it holds an integer out of bounds."""
    if type(value) is int:
        _checked_int(value)
    elif type(value) is dict:
        for item in value.values():
            _checked_any(item)
    elif type(value) is list:
        for item in value:
            _checked_any(item)
    return value


_AWARE = Annotated[datetime.datetime, msgspec.Meta(tz=True)]
# A UUID is read as a string of exactly 36 characters, and made a UUID by msgspec's C
# conversion (which accepts the canonical 8-4-4-4-12 form only at that length): the
# hyphenless 32-digit form msgspec would also read fails the length here, in C, instead
# of costing every page a scan of its bytes.
_CANONICAL_UUID = Annotated[str, msgspec.Meta(min_length=36, max_length=36)]
_SCALARS: Mapping[Any, Any] = {
    uuid.UUID: _CANONICAL_UUID,
    datetime.datetime: _AWARE,
    str: str,
    bool: bool,
    int: int,
    Mapping[str, Any]: dict[str, Any],
    tuple[EventType | str, ...]: list[str],
}


def _event_types(values: list[str]) -> tuple[EventType | str, ...]:
    return tuple(map(event_type, values))


def _to_uuid(value: str) -> uuid.UUID:
    try:
        return _convert(value, uuid.UUID)
    except msgspec.ValidationError:
        raise _Defer from None


def id_blob(values: list[Any]) -> bytes | None:
    """The 16 bytes of each of ``values`` (big-endian, in order) when every one is an id's
    8-4-4-4-12 text, checked a column at a time in C (one join, one ``bytes.fromhex``);
    None when any is not (None, a number, another form: the caller decides one by one)."""
    count = len(values)
    if not count or type(values[0]) is not str:
        return None
    try:
        joined = "".join(values)
    except TypeError:
        return None
    hyphens = "-" * count
    if len(joined) != 36 * count or any(joined[at::36] != hyphens for at in (8, 13, 18, 23)):
        return None
    try:
        blob = bytes.fromhex(joined.replace("-", ""))
    except ValueError:
        return None
    return blob if len(blob) == 16 * count else None  # fromhex skips whitespace


_convert = msgspec.convert


def _checked(items: list[Any], checks: list[tuple[str, Any]], key: str | None) -> bytes | None:
    """Check what building the models of ``items`` would check beyond msgspec's types
    (raises msgspec's errors or _Defer); the ``id_blob`` of the column ``key``."""
    found: bytes | None = None
    for name, check in checks:
        values = [getattr(item, name) for item in items]
        if check is _to_uuid:  # the whole column at once, in C
            blob = id_blob(values)
            if blob is None:  # not all canonical: msgspec decides
                _convert(values, list[uuid.UUID])
            elif name == key:
                found = blob
            continue
        for value in values:
            check(value)
    return found


_CONVERSIONS: Mapping[Any, Callable[[Any], Any]] = {
    tuple[EventType | str, ...]: _event_types,
    int: _checked_int,
    Mapping[str, Any]: _checked_any,
    uuid.UUID: _to_uuid,
}
_C_CONVERSIONS = frozenset({uuid.UUID})  # what msgspec.convert does itself, in C


def _many(model: type[Any], build: Callable[[Any], Any]) -> Callable[[list[Any]], list[Any]]:
    """A page's items built at once: in C by msgspec when no field needs converting."""
    hints = get_type_hints(model)
    if any(
        hints[f.name] in _CONVERSIONS and hints[f.name] not in _C_CONVERSIONS
        for f in attrs.fields(model)
    ):
        return lambda wires: [build(wire) for wire in wires]
    target = list[model]  # type: ignore[valid-type]
    return lambda wires: msgspec.convert(wires, target, from_attributes=True)


def _struct_for(model: type[Any]) -> tuple[type[msgspec.Struct], Callable[[Any], Any]]:
    """A msgspec Struct with the model's fields (camelCase on the wire) and a builder."""
    hints = get_type_hints(model)
    fields = attrs.fields(model)
    spec = [(f.name, _SCALARS[hints[f.name]]) for f in fields]
    struct = msgspec.defstruct(
        f"_{model.__name__}Wire",
        spec,
        rename={f.name: to_camel(f.name) for f in fields},
        frozen=True,
        gc=False,
    )
    names = [f.name for f in fields]
    get = operator.attrgetter(*names)
    conversions = [
        (i, _CONVERSIONS[hints[n]]) for i, n in enumerate(names) if hints[n] in _CONVERSIONS
    ]
    if len(names) == 1:

        def build_one(wire: Any) -> Any:
            return model(get(wire))

        return struct, build_one
    if not conversions:

        def build(wire: Any) -> Any:
            return model(*get(wire))

        return struct, build

    def build_converted(wire: Any) -> Any:
        values = list(get(wire))
        for index, convert in conversions:
            values[index] = convert(values[index])
        return model(*values)

    return struct, build_converted


def _supported(model: type[Any]) -> bool:
    try:
        hints = get_type_hints(model)
    except Exception:
        return False
    return attrs.has(model) and all(hints[f.name] in _SCALARS for f in attrs.fields(model))


class FastDecoder:
    """Pages (``decode_page``) or single bodies (``decode_body``) of one model.

    Each returns None when the converter must decide (see the module's docstring).
    """

    def __init__(self, model: type[Any]) -> None:
        item, self._build = _struct_for(model)
        self._build_many = _many(model, self._build)
        meta, self._build_meta = _struct_for(ListMeta)
        items: Any = list[item]  # type: ignore[valid-type]
        envelope = msgspec.defstruct(
            f"_{model.__name__}PageWire", [("data", items), ("meta", meta)], gc=False
        )
        self._page = msgspec.json.Decoder(envelope)
        self._body = msgspec.json.Decoder(item)
        raw: Any = list[msgspec.Raw]
        self._raw_page = msgspec.json.Decoder(
            msgspec.defstruct(
                f"_{model.__name__}RawPageWire", [("data", raw), ("meta", meta)], gc=False
            )
        )
        hints = get_type_hints(model)
        # What building the model would check beyond msgspec's types (integer bounds).
        self._checks = [
            (f.name, _CONVERSIONS[hints[f.name]])
            for f in attrs.fields(model)
            if hints[f.name] in _CONVERSIONS and hints[f.name] is not tuple[EventType | str, ...]
        ]
        self._model = model
        self._items = msgspec.json.Decoder(list[item])  # type: ignore[valid-type]
        self._few: dict[tuple[str, ...], tuple[Any, list[tuple[str, Any]]]] = {}

    @staticmethod
    def supports(model: type[Any]) -> bool:
        """Whether every field of ``model`` has a msgspec type here."""
        return _supported(model) and _supported(ListMeta)

    def decode_page(self, body: bytes) -> tuple[list[Any], ListMeta] | None:
        if _wider(body):
            return None
        try:
            wire: Any = self._page.decode(body)
            return self._build_many(wire.data), self._build_meta(wire.meta)
        except (msgspec.DecodeError, RecursionError, _Defer):
            return None

    def decode_raw_page(self, body: bytes) -> tuple[list[msgspec.Raw], ListMeta] | None:
        """Each item's bytes as sent and the meta, the items checked as ``decode_page`` would.

        None when the converter must decide (as ``decode_page``); no model is built.
        """
        result = self.decode_wire_page(body)
        return None if result is None else (result[1], result[2])

    def decode_wire_page(self, body: bytes) -> tuple[list[Any], list[msgspec.Raw], ListMeta] | None:
        """As ``decode_raw_page``, and each item's fields as decoded (a frozen struct with
        the model's attribute names; ids as their text, event types as strings)."""
        result = self.decode_keyed_page(body, None)
        return None if result is None else result[:3]

    def decode_keyed_page(
        self, body: bytes, key: str | None
    ) -> tuple[list[Any], list[msgspec.Raw], ListMeta, bytes | None] | None:
        """As ``decode_wire_page``, and the 16 bytes of each item's ``key`` (an id field),
        as ``id_blob`` gives them (None when ``key`` is None or the ids are not all in
        8-4-4-4-12 form)."""
        if _wider(body):
            return None
        try:
            wire: Any = self._page.decode(body)
            blob = _checked(wire.data, self._checks, key)
            raw: Any = self._raw_page.decode(body)
            return wire.data, raw.data, self._build_meta(raw.meta), blob
        except (msgspec.DecodeError, RecursionError, _Defer):
            return None

    def decode_few_fields(
        self, body: bytes, names: tuple[str, ...], key: str
    ) -> tuple[list[Any], list[msgspec.Raw], ListMeta, bytes | None] | None:
        """Each item's bytes, and only its fields ``names`` (a frozen struct with those
        attribute names, ``key`` among them), each checked as ``decode_keyed_page`` checks
        it; the 16 bytes of each item's ``key``. The other fields are not checked: a
        caller gets them, checked, from ``decode_items`` of the items it needs whole.
        None when the converter must decide the page."""
        few = self._few.get(names)
        if few is None:
            few = self._few[names] = self._few_decoder(names)
        decoder, checks = few
        if _wider(body):
            return None
        try:
            wire: Any = decoder.decode(body)
            blob = _checked(wire.data, checks, key)
            raw: Any = self._raw_page.decode(body)
            return wire.data, raw.data, self._build_meta(raw.meta), blob
        except (msgspec.DecodeError, RecursionError, _Defer):
            return None

    def _few_decoder(self, names: tuple[str, ...]) -> tuple[Any, list[tuple[str, Any]]]:
        """A page decoder of the fields ``names`` alone (others skipped), and their checks."""
        hints = get_type_hints(self._model)
        fields = [f for f in attrs.fields(self._model) if f.name in names]
        item = msgspec.defstruct(
            f"_{self._model.__name__}FewWire",
            [(f.name, _SCALARS[hints[f.name]]) for f in fields],
            rename={f.name: to_camel(f.name) for f in fields},
            frozen=True,
            gc=False,
        )
        items: Any = list[item]  # type: ignore[valid-type]
        page = msgspec.defstruct(
            f"_{self._model.__name__}FewPageWire",
            [("data", items), ("meta", msgspec.Raw)],
            gc=False,
        )
        return msgspec.json.Decoder(page), [c for c in self._checks if c[0] in names]

    def decode_items(self, raws: list[Any]) -> list[Any] | None:
        """Each item's fields (as ``decode_wire_page`` gives them) from its bytes (items of
        a page that ``decode_few_fields`` accepted), checked as ``decode_wire_page`` checks
        a page's; None when the converter must decide."""
        joined = b"".join((b"[", b",".join(raws), b"]"))
        if _wider(joined):
            return None
        try:
            items: list[Any] = self._items.decode(joined)
            _checked(items, self._checks, None)
        except (msgspec.DecodeError, RecursionError, _Defer):
            return None
        return items

    def raw_items(self, body: bytes) -> list[msgspec.Raw] | None:
        """Each item's bytes of a page the converter has accepted (None if msgspec cannot)."""
        try:
            raw: Any = self._raw_page.decode(body)
        except (msgspec.DecodeError, RecursionError):
            return None
        items: list[msgspec.Raw] = raw.data
        return items

    def decode_body(self, body: bytes) -> Any | None:
        if _wider(body):
            return None
        try:
            return self._build(self._body.decode(body))
        except (msgspec.DecodeError, RecursionError, _Defer):
            return None
