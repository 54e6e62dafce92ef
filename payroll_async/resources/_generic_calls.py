"""The client's generic calls: ``client.request``, ``get``, ``delete`` and ``get_api_list``
(``post``, ``put`` and ``patch`` are ``_generic_writes``'s), any operation of the service
through the same path as a built-in one."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeVar, overload

from .._core._types import QueryLike
from .._http._options import CallOptions, ListOptions, Unpack
from .._paging._pagination import AsyncPaginator
from ._generic import Generic
from ._generic_raw import ClientWithRawResponse
from ._generic_writes import GenericWrites

__all__ = ["GenericCalls"]

T = TypeVar("T")


class GenericCalls(GenericWrites):
    """The client's generic calls (``PayrollClient`` has them; see its reference)."""

    if TYPE_CHECKING:
        _generic: Generic

    @property
    def with_raw_response(self) -> ClientWithRawResponse:
        """The generic calls, each returning a [`RawResponse`][payroll_async.RawResponse].

        ```pycon
        >>> raw = await client.with_raw_response.get("/v1/payroll-platforms", cast_to=dict)
        >>> raw.status, raw.request_id
        (200, 'req-42')
        ```
        """
        return ClientWithRawResponse(self._generic)

    @overload
    async def request(
        self,
        method: str,
        path: str,
        *,
        cast_to: type[dict[Any, Any]],
        params: QueryLike | None = None,
        json: object = None,
        **options: Unpack[CallOptions],
    ) -> dict[str, Any]: ...
    @overload
    async def request(
        self,
        method: str,
        path: str,
        *,
        cast_to: type[list[Any]],
        params: QueryLike | None = None,
        json: object = None,
        **options: Unpack[CallOptions],
    ) -> list[Any]: ...
    @overload
    async def request(
        self,
        method: str,
        path: str,
        *,
        cast_to: None,
        params: QueryLike | None = None,
        json: object = None,
        **options: Unpack[CallOptions],
    ) -> None: ...
    @overload
    async def request(
        self,
        method: str,
        path: str,
        *,
        cast_to: type[T],
        params: QueryLike | None = None,
        json: object = None,
        **options: Unpack[CallOptions],
    ) -> T: ...
    async def request(
        self,
        method: str,
        path: str,
        *,
        cast_to: Any,
        params: QueryLike | None = None,
        json: object = None,
        **options: Unpack[CallOptions],
    ) -> Any:
        """Any operation of the service, with everything a built-in operation gets.

        The token (refreshed on a 401), retries with Retry-After, the client's and the
        fleet's gate, the response bound, typed errors with request ids, tracing and
        ``PAYROLL_LOG``: as for the operations this SDK wraps. GET and DELETE are sent
        again after an answer that was lost; POST, PUT and PATCH only on a 429 or when
        nothing was sent, because the SDK cannot look up what a generic write did.

        ```pycon
        >>> platform = await client.request("GET", f"/v1/payroll-platforms/{pid}", cast_to=dict)
        ```

        Args:
            method: ``GET``, ``POST``, ``PUT``, ``PATCH`` or ``DELETE``.
            path: Appended to the base URL: it starts with one ``/`` and may carry a
                query. An absolute or protocol-relative URL, a backslash, a fragment,
                spaces, control characters or ``..`` segments (however encoded) raise
                [`InvalidArgumentError`][payroll_async.InvalidArgumentError] before any
                request, so the token goes nowhere but the client's origin.
            cast_to: What the 2xx body becomes: an attrs class (structured as the models
                are), ``dict`` or ``list`` (its JSON), ``str``, ``bytes``, or ``None``
                (ignored).
            params: Query parameters; a name the path's query sets too is refused.
            json: The request body, sent as JSON (None: no body).
            **options: A call's options: ``timeout``, ``retry``, ``extra_query``,
                ``extra_headers`` ([`CallOptions`][payroll_async.CallOptions]).
        """
        return await self._generic.call(method, path, cast_to, params, json, options)

    @overload
    async def get(
        self,
        path: str,
        *,
        cast_to: type[dict[Any, Any]],
        params: QueryLike | None = None,
        json: object = None,
        **options: Unpack[CallOptions],
    ) -> dict[str, Any]: ...
    @overload
    async def get(
        self,
        path: str,
        *,
        cast_to: type[list[Any]],
        params: QueryLike | None = None,
        json: object = None,
        **options: Unpack[CallOptions],
    ) -> list[Any]: ...
    @overload
    async def get(
        self,
        path: str,
        *,
        cast_to: None,
        params: QueryLike | None = None,
        json: object = None,
        **options: Unpack[CallOptions],
    ) -> None: ...
    @overload
    async def get(
        self,
        path: str,
        *,
        cast_to: type[T],
        params: QueryLike | None = None,
        json: object = None,
        **options: Unpack[CallOptions],
    ) -> T: ...
    async def get(
        self,
        path: str,
        *,
        cast_to: Any,
        params: QueryLike | None = None,
        json: object = None,
        **options: Unpack[CallOptions],
    ) -> Any:
        """GET ``path``: [`request("GET", ...)`][payroll_async.PayrollClient.request].

        ```pycon
        >>> platform = await client.get(f"/v1/payroll-platforms/{pid}", cast_to=Platform)
        ```
        """
        return await self._generic.call("GET", path, cast_to, params, json, options)

    @overload
    async def delete(
        self,
        path: str,
        *,
        cast_to: type[dict[Any, Any]],
        params: QueryLike | None = None,
        json: object = None,
        **options: Unpack[CallOptions],
    ) -> dict[str, Any]: ...
    @overload
    async def delete(
        self,
        path: str,
        *,
        cast_to: type[list[Any]],
        params: QueryLike | None = None,
        json: object = None,
        **options: Unpack[CallOptions],
    ) -> list[Any]: ...
    @overload
    async def delete(
        self,
        path: str,
        *,
        cast_to: None,
        params: QueryLike | None = None,
        json: object = None,
        **options: Unpack[CallOptions],
    ) -> None: ...
    @overload
    async def delete(
        self,
        path: str,
        *,
        cast_to: type[T],
        params: QueryLike | None = None,
        json: object = None,
        **options: Unpack[CallOptions],
    ) -> T: ...
    async def delete(
        self,
        path: str,
        *,
        cast_to: Any,
        params: QueryLike | None = None,
        json: object = None,
        **options: Unpack[CallOptions],
    ) -> Any:
        """DELETE ``path``: [`request("DELETE", ...)`][payroll_async.PayrollClient.request].

        Sent again after a lost answer, as every delete is: a 404 on that second send
        counts as done (the first one deleted it), with an empty body, so ``cast_to=None``
        is the cast that always holds.
        """
        return await self._generic.call("DELETE", path, cast_to, params, json, options)

    @overload
    def get_api_list(
        self,
        path: str,
        *,
        model: type[dict[Any, Any]],
        params: QueryLike | None = None,
        **options: Unpack[ListOptions],
    ) -> AsyncPaginator[dict[str, Any]]: ...
    @overload
    def get_api_list(
        self,
        path: str,
        *,
        model: type[T],
        params: QueryLike | None = None,
        **options: Unpack[ListOptions],
    ) -> AsyncPaginator[T]: ...
    def get_api_list(
        self,
        path: str,
        *,
        model: type[Any],
        params: QueryLike | None = None,
        **options: Unpack[ListOptions],
    ) -> AsyncPaginator[Any]:
        """Any listing in the service's envelope (``data`` and ``meta``), walked as the
        built-in listings are.

        By offset, or by ``Link`` ``rel="next"``; pages fetched concurrently and yielded in
        order; ``max_items``, ``start_offset``, ``.skip()``, ``.pages()`` and ``await`` for
        the first [`Page`][payroll_async.Page], as for ``payroll_connections.list()``.
        Nothing is sent until it is iterated, but every argument is checked now.

        ```pycon
        >>> async for platform in client.get_api_list("/v1/payroll-platforms", model=Platform):
        ...     print(platform.name)
        ```

        Args:
            path: The listing's path, checked as for
                [`request()`][payroll_async.PayrollClient.request].
            model: Each item's type: an attrs class of yours (fields in snake_case, as
                the models are; unknown fields ignored) or ``dict`` (the item's JSON).
            params: Query parameters sent with every page (filters, ``sort``), not
                ``offset`` or ``limit``, which the walk sets.
            **options: A listing's options ([`ListOptions`][payroll_async.ListOptions]):
                ``page_size``, ``max_items``, ``start_offset``, ``concurrency`` and a
                call's.
        """
        return self._generic.listing(path, model, params, options)
