"""What every resource shares: one client's binding (transport, options, state) and helpers."""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeVar

from yarl import URL

from .. import _otel
from .. import _validation as check
from .._decode import structure_body
from .._exceptions import ClientClosedError
from .._pagination import AsyncPaginator
from .._raw import WithRawResponse, record
from .._response import Response
from .._retry import RetryPolicy, check_retry
from .._transport import Transport
from .._types import NOT_GIVEN, NotGiven, RequestOptions, SortLike, TimeoutLike

__all__ = ["Binding", "Resource"]

T = TypeVar("T")


class Binding:
    """One client as its resources and paginators see it.

    Every request goes through ``send()``, which refuses to send once this client (or
    the client it was copied from) is closed, and lays the call's options over the
    client's.
    """

    def __init__(
        self,
        transport: Transport,
        *,
        options: RequestOptions,
        page_size: int | None,
        closed: Callable[[], bool],
    ) -> None:
        self.transport = transport
        self.options = options
        self.page_size = page_size
        self._closed = closed

    @property
    def origin(self) -> URL:
        return self.transport.origin

    def url(self, path: str) -> str:
        return self.transport.url(path)

    async def send(
        self,
        method: str,
        url: str | URL,
        *,
        options: RequestOptions,
        params: Mapping[str, Any] | None = None,
        json: Any = None,
    ) -> Response:
        if self._closed():
            raise ClientClosedError("this PayrollClient is closed; create a new one")
        response = await self.transport.send(
            method, url, options=options.over(self.options), params=params, json=json
        )
        record(response)
        return response


def request_options(
    timeout: TimeoutLike | NotGiven,
    retry: RetryPolicy | NotGiven | None,
    extra_query: Mapping[str, Any] | None,
    extra_headers: Mapping[str, str] | None,
) -> RequestOptions:
    """A call's options, validated (InvalidArgumentError before anything is sent)."""
    return RequestOptions(
        timeout=NOT_GIVEN if isinstance(timeout, NotGiven) else check.check_timeout(timeout),
        retry=check_retry(retry),
        extra_query=check.check_extra_query(extra_query),
        extra_headers=check.check_extra_headers(extra_headers),
    )


F = TypeVar("F", bound=Callable[..., Awaitable[Any]])


def operation(name: str) -> Callable[[F], F]:
    """An async operation, in a span of its own when OpenTelemetry is installed."""

    def wrap(method: F) -> F:
        @functools.wraps(method)
        async def run(*args: Any, **kwargs: Any) -> Any:
            with _otel.operation(name):
                return await method(*args, **kwargs)

        return run  # type: ignore[return-value]

    return wrap


class Resource:
    """A group of operations, bound to one client."""

    _name = "resource"
    """The operation spans' prefix: ``payroll_connections`` in ``payroll_connections.list``."""

    def __init__(self, binding: Binding) -> None:
        self._binding = binding

    @property
    def with_raw_response(self) -> WithRawResponse:
        """These operations, each returning a RawResponse (status, headers, request id).

        ```pycon
        >>> raw = await client.webhooks.with_raw_response.delete(sid)
        >>> raw.status, raw.request_id
        (204, 'req-42')
        ```
        """
        return WithRawResponse(self)

    def _paginate(
        self,
        path: str,
        model: type[T],
        *,
        filters: Mapping[str, Any] | None = None,
        sort: SortLike | None,
        sort_fields: frozenset[str] | None = None,
        page_size: int | NotGiven | None,
        page_size_max: int | None = None,
        max_items: int | None,
        start_offset: int,
        concurrency: int | NotGiven | None,
        options: RequestOptions,
    ) -> AsyncPaginator[T]:
        """Validate every listing option now, so bad input fails before iteration."""
        binding = self._binding
        if isinstance(page_size, NotGiven):
            size = binding.page_size
            if size is not None and page_size_max is not None:
                size = min(size, page_size_max)
        elif page_size is None:
            size = None
        else:
            size = check.check_page_size(
                page_size, *(() if page_size_max is None else (page_size_max,))
            )
        params: dict[str, Any] = dict(filters or {})
        sort_value = check.check_sort(sort, sort_fields)
        if sort_value is not None:
            params["sort"] = sort_value
        width = binding.transport.concurrency
        if not isinstance(concurrency, NotGiven) and concurrency is not None:
            width = check.check_concurrency(concurrency)
        return AsyncPaginator(
            binding,
            path,
            model,
            params=params,
            page_size=size,
            max_items=check.check_max_items(max_items),
            start_offset=check.check_start_offset(start_offset),
            concurrency=width,
            options=options,
            operation=f"{self._name}.list",
        )

    async def _send(
        self,
        method: str,
        path: str,
        *,
        options: RequestOptions,
        json: Any = None,
    ) -> Response:
        """One non-list request; the Response of its 2xx."""
        binding = self._binding
        return await binding.send(method, binding.url(path), options=options, json=json)

    async def _send_for(
        self,
        model: type[T],
        method: str,
        path: str,
        *,
        options: RequestOptions,
        json: Any = None,
    ) -> T:
        """One non-list request whose 2xx body is a ``model``."""
        return structure_body(model, await self._send(method, path, options=options, json=json))
