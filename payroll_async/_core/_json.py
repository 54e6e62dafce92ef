"""JSON in and out: orjson when installed (the ``speedups`` extra), else the stdlib.

Both paths raise ``ValueError`` for anything that is not JSON, including documents nested
too deeply to parse (orjson stops at 1024 levels; the stdlib would raise RecursionError,
which is turned into a ValueError here so that callers handle one kind of failure).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

__all__ = ["dumps", "loads"]

loads: Callable[[bytes | bytearray | memoryview | str], Any]
dumps: Callable[[Any], bytes]


def _stdlib_loads(data: bytes | bytearray | memoryview | str) -> Any:
    try:
        return json.loads(bytes(data) if isinstance(data, memoryview) else data)
    except RecursionError:
        raise ValueError("JSON nested too deeply to parse") from None


def _stdlib_dumps(obj: Any) -> bytes:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode()


try:
    import orjson
except ImportError:  # pragma: no cover - exercised when the speedups extra is absent
    loads = _stdlib_loads
    dumps = _stdlib_dumps
else:
    loads = orjson.loads
    dumps = orjson.dumps
