"""The service's scalars read strictly and fast: canonical UUIDs and ISO 8601 date-times
with a time zone (the converter's hooks, and the notification parser's)."""

from __future__ import annotations

import datetime
import re
import sys
import uuid

__all__ = ["format_datetime", "parse_datetime", "parse_uuid"]

_UUID = uuid.UUID
_SAFE_UNKNOWN = uuid.SafeUUID.unknown
_new = object.__new__
_setattr = object.__setattr__


_fromhex = bytes.fromhex
_from_bytes = int.from_bytes


def parse_uuid(value: object, _: object = None) -> uuid.UUID:
    """Parse the canonical 8-4-4-4-12 form only (no braces, no urn:, no bare hex)."""
    if type(value) is not str or len(value) != 36:
        raise ValueError(f"not a UUID: {value!r}")
    if value[8] != "-" or value[13] != "-" or value[18] != "-" or value[23] != "-":
        raise ValueError(f"not a UUID: {value!r}")
    hexdigits = value.replace("-", "")
    # isalnum rules out spaces, signs and underscores, which fromhex or int() would let by.
    if len(hexdigits) != 32 or not hexdigits.isalnum():
        raise ValueError(f"not a UUID: {value!r}")
    try:
        number = _from_bytes(_fromhex(hexdigits), "big")
    except ValueError:
        raise ValueError(f"not a UUID: {value!r}") from None
    # The same object uuid.UUID(value) builds, without its generic parsing: this runs for
    # every identifier of every item of a bulk export.
    result = _new(_UUID)
    _setattr(result, "int", number)
    _setattr(result, "is_safe", _SAFE_UNKNOWN)
    return result


_fromisoformat = datetime.datetime.fromisoformat
# Python 3.10's fromisoformat accepts neither "Z" nor fractions of other than 3 or 6 digits.
_ISO_310 = re.compile(
    r"(?P<base>\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2})(?:\.(?P<frac>\d+))?"
    r"(?P<tz>Z|z|[+-]\d{2}:?\d{2})\Z"
)


def _normalise_iso(value: str) -> str:
    match = _ISO_310.match(value)
    if match is None:
        raise ValueError(f"not an ISO 8601 date-time with a time zone: {value!r}")
    frac = (match["frac"] or "")[:6].ljust(6, "0")
    tz = match["tz"]
    if tz in ("Z", "z"):
        tz = "+00:00"
    elif ":" not in tz:
        tz = f"{tz[:3]}:{tz[3:]}"
    return f"{match['base']}.{frac}{tz}"


def parse_datetime(value: object, _: object = None) -> datetime.datetime:
    """Parse an ISO 8601 date-time that carries a time zone (``Z`` or an offset)."""
    if type(value) is not str:
        raise ValueError(f"not a date-time string: {value!r}")
    try:
        result = _fromisoformat(value)
    except ValueError:
        if sys.version_info >= (3, 11):
            if "z" not in value:
                raise
            # RFC 3339 allows a lower-case "z" (and "t"), which fromisoformat does not.
            result = _fromisoformat(value.replace("z", "Z"))
        else:
            result = _fromisoformat(_normalise_iso(value))
    if result.tzinfo is None:
        raise ValueError(f"date-time without a time zone: {value!r}")
    return result


def format_datetime(value: datetime.datetime) -> str:
    """ISO 8601, with ``Z`` for UTC, as the service writes date-times."""
    text = value.isoformat()
    return text[:-6] + "Z" if text.endswith("+00:00") else text
