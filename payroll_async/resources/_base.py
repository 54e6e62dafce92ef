"""What every resource shares: the client's transport and defaults, and the list helper."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

import attrs

from .. import _validation as check
from .._converter import structure_hook
from .._pagination import AsyncPaginator, RequestOptions
from .._transport import Transport, decode_error, decode_json
from .._types import SortLike

__all__ = ["Context", "Resource"]

T = TypeVar("T")


@attrs.frozen
class Context:
    """The client's transport, defaults and per-call overrides, as resources see them."""

    transport: Transport
    page_size: int
    concurrency: int
    options: RequestOptions


class Resource:
    """A group of operations; holds the client's context."""

    def __init__(self, context: Context) -> None:
        self._context = context

    def _paginate(
        self,
        path: str,
        model: type[T],
        *,
        filters: Mapping[str, Any] | None = None,
        sort: SortLike | None,
        sort_fields: frozenset[str] | None = None,
        page_size: int | None,
        page_size_max: int | None = None,
        max_items: int | None,
        start_offset: int,
        concurrency: int | None,
        extra_query: Mapping[str, Any] | None,
        extra_headers: Mapping[str, str] | None,
    ) -> AsyncPaginator[T]:
        """Validate every listing option now, so bad input fails before iteration."""
        ctx = self._context
        if page_size is None:
            size = ctx.page_size if page_size_max is None else min(ctx.page_size, page_size_max)
        else:
            size = check.check_page_size(
                page_size, *(() if page_size_max is None else (page_size_max,))
            )
        params: dict[str, Any] = dict(filters or {})
        sort_value = check.check_sort(sort, sort_fields)
        if sort_value is not None:
            params["sort"] = sort_value
        params.update(check.check_extra_query(extra_query))
        return AsyncPaginator(
            ctx.transport,
            path,
            model,
            params=params,
            headers=check.check_extra_headers(extra_headers),
            page_size=size,
            max_items=check.check_max_items(max_items),
            start_offset=check.check_start_offset(start_offset),
            concurrency=ctx.concurrency
            if concurrency is None
            else check.check_concurrency(concurrency),
            options=ctx.options,
        )

    async def _send(
        self,
        method: str,
        path: str,
        *,
        json: Any = None,
        extras: tuple[dict[str, Any], dict[str, str]],
    ) -> tuple[int, str, bytes]:
        """One non-list request; the status, the URL and the body of its 2xx response.

        ``extras`` is ``checked_extras(extra_query, extra_headers)``, validated by the
        caller before anything is sent.
        """
        ctx = self._context
        query, headers = extras
        response, body = await ctx.transport.request(
            method,
            ctx.transport.url(path),
            params=query or None,
            json=json,
            headers=headers,
            policy=ctx.options.policy,
            timeout=ctx.options.timeout,
        )
        return response.status, str(response.url), body

    @staticmethod
    def _checked_extras(
        extra_query: Mapping[str, Any] | None, extra_headers: Mapping[str, str] | None
    ) -> tuple[dict[str, Any], dict[str, str]]:
        return check.check_extra_query(extra_query), check.check_extra_headers(extra_headers)

    @staticmethod
    def _structure(model: type[T], body: bytes, *, status: int, url: str, method: str) -> T:
        data = decode_json(body, status=status, url=url, method=method)
        try:
            return structure_hook(model)(data)
        except Exception as exc:
            raise decode_error(
                f"response is not a {model.__name__} ({type(exc).__name__}: {exc})",
                status=status,
                url=url,
                body=body,
                method=method,
            ) from None
