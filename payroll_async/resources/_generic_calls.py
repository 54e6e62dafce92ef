"""The generic calls' faces: ``client.request``, ``get``, ``post``, ``put``, ``patch``,
``delete``, ``get_api_list`` and their ``with_raw_response`` forms, their overloads written
once as a protocol per shape of call (``Generic`` does the work)."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Awaitable, Callable, Coroutine
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, cast, overload

from .._core._types import QueryLike
from .._http._options import CallOptions, ListOptions, Unpack
from .._http._seam import RawResponse, call_raw
from .._paging._pagination import AsyncPaginator
from ._generic import Generic

__all__ = ["ClientWithRawResponse", "GenericCalls"]

T = TypeVar("T")
_Call = Coroutine[Any, Any, T]


class _Verb(Protocol):
    """``client.get`` (and post, put, patch, delete): ``cast_to`` decides the result."""

    @overload
    def __call__(
        self,
        path: str,
        *,
        cast_to: type[dict[Any, Any]],
        params: QueryLike | None = None,
        json: object = None,
        **options: Unpack[CallOptions],
    ) -> _Call[dict[str, Any]]: ...
    @overload
    def __call__(
        self,
        path: str,
        *,
        cast_to: type[list[Any]],
        params: QueryLike | None = None,
        json: object = None,
        **options: Unpack[CallOptions],
    ) -> _Call[list[Any]]: ...
    @overload
    def __call__(
        self,
        path: str,
        *,
        cast_to: None,
        params: QueryLike | None = None,
        json: object = None,
        **options: Unpack[CallOptions],
    ) -> _Call[None]: ...
    @overload
    def __call__(
        self,
        path: str,
        *,
        cast_to: type[T],
        params: QueryLike | None = None,
        json: object = None,
        **options: Unpack[CallOptions],
    ) -> _Call[T]: ...


class _Request(Protocol):
    """``client.request``: a verb's call with the method first."""

    @overload
    def __call__(
        self,
        method: str,
        path: str,
        *,
        cast_to: type[dict[Any, Any]],
        params: QueryLike | None = None,
        json: object = None,
        **options: Unpack[CallOptions],
    ) -> _Call[dict[str, Any]]: ...
    @overload
    def __call__(
        self,
        method: str,
        path: str,
        *,
        cast_to: type[list[Any]],
        params: QueryLike | None = None,
        json: object = None,
        **options: Unpack[CallOptions],
    ) -> _Call[list[Any]]: ...
    @overload
    def __call__(
        self,
        method: str,
        path: str,
        *,
        cast_to: None,
        params: QueryLike | None = None,
        json: object = None,
        **options: Unpack[CallOptions],
    ) -> _Call[None]: ...
    @overload
    def __call__(
        self,
        method: str,
        path: str,
        *,
        cast_to: type[T],
        params: QueryLike | None = None,
        json: object = None,
        **options: Unpack[CallOptions],
    ) -> _Call[T]: ...


class _RawVerb(Protocol):
    """``client.with_raw_response.get`` (and post, put, patch, delete)."""

    @overload
    def __call__(
        self,
        path: str,
        *,
        cast_to: type[dict[Any, Any]],
        params: QueryLike | None = None,
        json: object = None,
        **options: Unpack[CallOptions],
    ) -> Awaitable[RawResponse[dict[str, Any]]]: ...
    @overload
    def __call__(
        self,
        path: str,
        *,
        cast_to: type[list[Any]],
        params: QueryLike | None = None,
        json: object = None,
        **options: Unpack[CallOptions],
    ) -> Awaitable[RawResponse[list[Any]]]: ...
    @overload
    def __call__(
        self,
        path: str,
        *,
        cast_to: None,
        params: QueryLike | None = None,
        json: object = None,
        **options: Unpack[CallOptions],
    ) -> Awaitable[RawResponse[None]]: ...
    @overload
    def __call__(
        self,
        path: str,
        *,
        cast_to: type[T],
        params: QueryLike | None = None,
        json: object = None,
        **options: Unpack[CallOptions],
    ) -> Awaitable[RawResponse[T]]: ...


class _RawRequest(Protocol):
    """``client.with_raw_response.request``."""

    @overload
    def __call__(
        self,
        method: str,
        path: str,
        *,
        cast_to: type[dict[Any, Any]],
        params: QueryLike | None = None,
        json: object = None,
        **options: Unpack[CallOptions],
    ) -> Awaitable[RawResponse[dict[str, Any]]]: ...
    @overload
    def __call__(
        self,
        method: str,
        path: str,
        *,
        cast_to: type[list[Any]],
        params: QueryLike | None = None,
        json: object = None,
        **options: Unpack[CallOptions],
    ) -> Awaitable[RawResponse[list[Any]]]: ...
    @overload
    def __call__(
        self,
        method: str,
        path: str,
        *,
        cast_to: None,
        params: QueryLike | None = None,
        json: object = None,
        **options: Unpack[CallOptions],
    ) -> Awaitable[RawResponse[None]]: ...
    @overload
    def __call__(
        self,
        method: str,
        path: str,
        *,
        cast_to: type[T],
        params: QueryLike | None = None,
        json: object = None,
        **options: Unpack[CallOptions],
    ) -> Awaitable[RawResponse[T]]: ...


def _typed_verb(call: Callable[..., Any]) -> _Verb:
    """``client.<verb>``: typed by ``_Verb``'s overloads, shown with their parameters."""
    call.__signature__ = _signature()  # type: ignore[attr-defined]
    return cast(_Verb, call)


def _typed_request(call: Callable[..., Any]) -> _Request:
    """``client.request``: typed by ``_Request``'s overloads."""
    return cast(_Request, call)


def _signature() -> inspect.Signature:
    """What ``help()`` shows of a verb: ``request()``'s parameters after the method."""
    keyword = inspect.Parameter.KEYWORD_ONLY
    return inspect.Signature(
        [
            inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD),
            inspect.Parameter("path", inspect.Parameter.POSITIONAL_OR_KEYWORD),
            inspect.Parameter("cast_to", keyword),
            inspect.Parameter("params", keyword, default=None),
            inspect.Parameter("json", keyword, default=None),
            inspect.Parameter("options", inspect.Parameter.VAR_KEYWORD),
        ]
    )


class GenericCalls:
    """The client's generic calls (``PayrollClient`` has them; see its reference)."""

    if TYPE_CHECKING:
        _generic: Generic

    @_typed_request
    async def request(
        self,
        method: str,
        path: str,
        *,
        cast_to: Any,
        params: QueryLike | None = None,
        json: object = None,
        **options: Any,
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

    @_typed_verb
    async def get(self, path: str, **call: Any) -> Any:
        """GET ``path``: [`request("GET", ...)`][payroll_async.PayrollClient.request].

        ```pycon
        >>> platform = await client.get(f"/v1/payroll-platforms/{pid}", cast_to=Platform)
        ```
        """
        return await self.request("GET", path, **call)

    @_typed_verb
    async def post(self, path: str, **call: Any) -> Any:
        """POST ``path``: [`request("POST", ...)`][payroll_async.PayrollClient.request].

        Sent again only on a 429 or when nothing was sent: an answer lost after the
        request went out raises [`APIConnectionError`][payroll_async.APIConnectionError]
        with ``request_sent`` true, and whether the service did it is for you to find out.
        """
        return await self.request("POST", path, **call)

    @_typed_verb
    async def put(self, path: str, **call: Any) -> Any:
        """PUT ``path``: [`request("PUT", ...)`][payroll_async.PayrollClient.request]
        (sent again as a POST is)."""
        return await self.request("PUT", path, **call)

    @_typed_verb
    async def patch(self, path: str, **call: Any) -> Any:
        """PATCH ``path``: [`request("PATCH", ...)`][payroll_async.PayrollClient.request]
        (sent again as a POST is)."""
        return await self.request("PATCH", path, **call)

    @_typed_verb
    async def delete(self, path: str, **call: Any) -> Any:
        """DELETE ``path``: [`request("DELETE", ...)`][payroll_async.PayrollClient.request].

        Sent again after a lost answer, as every delete is: a 404 on that second send
        counts as done (the first one deleted it), with an empty body, so ``cast_to=None``
        is the cast that always holds.
        """
        return await self.request("DELETE", path, **call)

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


class ClientWithRawResponse:
    """``client.with_raw_response``: the generic calls, each returning a ``RawResponse``.

    ```pycon
    >>> raw = await client.with_raw_response.get("/v1/payroll-platforms", cast_to=dict)
    >>> raw.status, raw.request_id, raw.parsed["meta"]["totalCount"]
    (200, 'req-42', 7)
    ```
    """

    def __init__(self, generic: Generic) -> None:
        self._generic = generic

    async def _call(
        self,
        method: str,
        path: str,
        *,
        cast_to: Any,
        params: QueryLike | None = None,
        json: Any = None,
        **options: Any,
    ) -> RawResponse[Any]:
        return await call_raw(self._generic.call(method, path, cast_to, params, json, options))

    @property
    def request(self) -> _RawRequest:
        """[`request()`][payroll_async.PayrollClient.request], with its RawResponse."""
        return cast(_RawRequest, self._call)

    @property
    def get(self) -> _RawVerb:
        """[`get()`][payroll_async.PayrollClient.get], with its RawResponse."""
        return cast(_RawVerb, functools.partial(self._call, "GET"))

    @property
    def post(self) -> _RawVerb:
        """[`post()`][payroll_async.PayrollClient.post], with its RawResponse."""
        return cast(_RawVerb, functools.partial(self._call, "POST"))

    @property
    def put(self) -> _RawVerb:
        """[`put()`][payroll_async.PayrollClient.put], with its RawResponse."""
        return cast(_RawVerb, functools.partial(self._call, "PUT"))

    @property
    def patch(self) -> _RawVerb:
        """[`patch()`][payroll_async.PayrollClient.patch], with its RawResponse."""
        return cast(_RawVerb, functools.partial(self._call, "PATCH"))

    @property
    def delete(self) -> _RawVerb:
        """[`delete()`][payroll_async.PayrollClient.delete], with its RawResponse."""
        return cast(_RawVerb, functools.partial(self._call, "DELETE"))
