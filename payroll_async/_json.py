"""JSON in and out: orjson when installed (the ``speedups`` extra), else the stdlib."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

__all__ = ["HAVE_ORJSON", "dumps", "loads"]

loads: Callable[[bytes | str], Any]
dumps: Callable[[Any], bytes]

try:
    import orjson
except ImportError:  # pragma: no cover - exercised when the speedups extra is absent
    HAVE_ORJSON = False
    loads = json.loads

    def dumps(obj: Any) -> bytes:
        return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode()

else:
    HAVE_ORJSON = True
    loads = orjson.loads
    dumps = orjson.dumps
