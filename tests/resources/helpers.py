"""Reading back what aioresponses saw."""

from __future__ import annotations

import json
from typing import Any

from aioresponses import aioresponses
from yarl import URL


def calls(mocked: aioresponses) -> list[tuple[str, URL, dict[str, Any]]]:
    """Every request sent, as (method, URL with query, kwargs), in order of first sending."""
    out = []
    for (method, url), requests in mocked.requests.items():
        for request in requests:
            out.append((method, url, request.kwargs))
    return out


def only_call(mocked: aioresponses) -> tuple[str, URL, dict[str, Any]]:
    sent = calls(mocked)
    assert len(sent) == 1, sent
    return sent[0]


def body_of(kwargs: dict[str, Any]) -> Any:
    return json.loads(kwargs["data"])
