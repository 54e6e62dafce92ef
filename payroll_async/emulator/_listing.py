"""List operations: the query (offset, limit, sort, filters), the envelope, the Link header."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import attrs
from aiohttp import web
from yarl import URL

from .._core._assumed import EMULATOR_MAX_SORT_ITEMS, LIMIT_MAX, OFFSET_MAX
from ._data import Collection, SortSpec
from ._http import ApiError, json_response, request_url
from ._state import STATE

__all__ = ["LIST_PAGE_DEFAULT", "ListQuery", "collection_page", "envelope", "parse_query"]

# ASSUMED: default page size of operations 5-7 (not shown); the same as operation 1.
LIST_PAGE_DEFAULT = 20
_SORT_RE = re.compile(r"-?[A-Za-z0-9_]{1,100}(?:,-?[A-Za-z0-9_]{1,100}){0,2}\Z")
_UINT_RE = re.compile(r"[0-9]{1,10}\Z")  # ASCII digits only: int() would take "١٢" too
_FILTER_RE = re.compile(r"filter\[([A-Za-z0-9_]+)\]\[([A-Za-z_]+)\]\Z")


@attrs.frozen
class ListQuery:
    """A list request's parameters, checked."""

    offset: int
    limit: int
    spec: SortSpec
    sort: str
    filters: dict[str, dict[str, str]]


def parse_query(
    request: web.Request,
    *,
    sort_fields: frozenset[str],
    default_sort: str,
    default_limit: int,
    max_limit: int | None,
    filterable: Mapping[str, frozenset[str]] | None = None,
) -> ListQuery:
    """The list parameters of ``request``, or ApiError 400 naming every bad one."""
    errors: list[str] = []
    query = request.query
    filterable = filterable or {}

    def number(name: str, low: int, high: int, default: int) -> int:
        raw = query.get(name)
        if raw is None:
            return default
        if not _UINT_RE.match(raw) or not low <= int(raw) <= high:
            errors.append(f"{name}: must be an integer from {low} to {high}, got {raw!r}")
            return default
        return int(raw)

    limit = number("limit", 1, LIMIT_MAX, default_limit)
    offset = number("offset", 0, OFFSET_MAX, 0)
    if max_limit is not None:
        limit = min(limit, max_limit)
    sort_text = query.get("sort", default_sort)
    spec: list[tuple[str, bool]] = []
    if not _SORT_RE.match(sort_text):
        errors.append(
            "sort: 1 to 3 comma-separated fields of 1-100 word characters, "
            f"optionally prefixed with '-', got {sort_text!r}"
        )
    else:
        for part in sort_text.split(","):
            field = part.lstrip("-")
            if field not in sort_fields:
                errors.append(
                    f"sort: cannot sort by {field!r}; allowed: {', '.join(sorted(sort_fields))}"
                )
            spec.append((field, part.startswith("-")))
    filters: dict[str, dict[str, str]] = {}
    for key, value in query.items():
        if not key.startswith("filter"):
            continue
        match = _FILTER_RE.match(key)
        if match is None or match[1] not in filterable:
            errors.append(f"{key}: not a filter of this listing")
            continue
        field, op = match[1], match[2]
        if op not in filterable[field]:
            allowed = ", ".join(sorted(filterable[field]))
            errors.append(f"{key}: operator {op!r} not allowed; allowed: {allowed}")
            continue
        filters.setdefault(field, {})[op] = value
    if errors:
        raise ApiError(400, "Invalid request parameters", errors)
    return ListQuery(offset, limit, tuple(spec), sort_text, filters)


def envelope(
    request: web.Request, items: list[dict[str, Any]], query: ListQuery, total: int
) -> web.Response:
    """The list envelope (data, meta), with a Link header when the emulator sends them."""
    body = {
        "data": items,
        "meta": {
            "currentCount": len(items),
            "filters": query.filters,
            "limit": query.limit,
            "offset": query.offset,
            "sort": query.sort,
            "totalCount": total,
        },
    }
    headers = None
    if request.app[STATE].link_headers:
        headers = {"Link": _link_header(request_url(request), query.offset, query.limit, total)}
    return json_response(body, headers=headers)


def _link_header(url: URL, offset: int, limit: int, total: int) -> str:
    def at(rel: str, value: int) -> str:
        return f'<{url.update_query(limit=limit, offset=value)}>; rel="{rel}"'

    last = max(0, (total - 1) // limit * limit) if total else 0
    links = [at("self", offset), at("first", 0), at("last", last)]
    if offset > 0:
        links.append(at("prev", max(0, offset - limit)))
    if offset + limit < total:
        links.append(at("next", offset + limit))
    return ", ".join(links)


def collection_page(request: web.Request, collection: Collection) -> web.Response:
    """A page of one of the seeded collections (operations 5-7)."""
    query = parse_query(
        request,
        sort_fields=frozenset(collection.keys),
        default_sort=collection.default_sort,
        default_limit=LIST_PAGE_DEFAULT,
        max_limit=request.app[STATE].max_page_size,
    )
    default = collection.default_sort
    if query.spec not in (((default, False),), ((default, True),)) and (
        collection.size > EMULATOR_MAX_SORT_ITEMS
    ):
        raise ApiError(
            400,
            "Sort not available",
            [
                f"sort: the emulator sorts at most {EMULATOR_MAX_SORT_ITEMS:,} items by "
                f"{query.sort!r}; this collection has {collection.size:,} (sort by "
                f"{default!r} or '-{default}' instead, or start a smaller emulator)"
            ],
        )
    items = collection.page(query.offset, query.limit, query.spec)
    return envelope(request, items, query, collection.size)
