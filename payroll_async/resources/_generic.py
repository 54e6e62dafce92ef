"""Every operation of the service, those this SDK does not wrap too: generic calls, any listing.

``client.get(path, cast_to=...)`` (and ``post``, ``put``, ``patch``, ``delete``,
``request``) and ``client.get_api_list(path, model=...)`` take the same path through the SDK
as a built-in operation: the options record, the token and its refresh, retries and
Retry-After, the client's and the fleet's gate, the body bound, redaction and typed errors
(the transport's); the walks (``_pagination``). What they add is checked here, before any
request: the path can only name a place on the client's origin, and its query cannot say
what ``params`` says.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Mapping
from typing import TYPE_CHECKING, Any, Final, Protocol, TypeVar, cast, overload

import attrs
from yarl import URL

from .._core import _validation as check
from .._core._exceptions import InvalidArgumentError
from .._core._types import QueryLike
from .._http import _otel
from .._http._options import CallOptions, ListOptions, Unpack, parse
from .._http._raw import RawResponse, call_raw
from .._paging._decode import cast_body, check_cast
from .._paging._pagination import AsyncPaginator
from ._base import Resource

__all__ = ["METHODS", "ClientWithRawResponse", "Generic", "GenericCalls"]

T = TypeVar("T")

METHODS: Final = frozenset({"GET", "POST", "PUT", "PATCH", "DELETE"})
"""What ``client.request()`` sends. GET and DELETE are repeated after a lost answer; the
others only on a 429 or when nothing was sent (the transport's rule for every method)."""


class Generic(Resource):
    """The generic calls of one client: checks, then the same send as every operation."""

    _name = "client"

    async def call(
        self,
        method: str,
        path: str,
        cast_to: Any,
        params: QueryLike | None,
        json: Any,
        keywords: Mapping[str, Any],
    ) -> Any:
        """One request of ``method`` to ``path``; its 2xx body as ``cast_to``."""
        if not isinstance(method, str) or str.upper(method) not in METHODS:
            raise InvalidArgumentError(
                f"method must be one of {', '.join(sorted(METHODS))}, got {method!r}"
            )
        method = str.upper(method)
        path = check.check_path(path)
        cast_to = check_cast(cast_to)
        query = check.check_query(params, "params")
        name = f"client.{method.lower()}"
        options = self._binding.resolve(parse(name, keywords))
        url = self._url(path, query.keys() | options.extra_query.keys())
        with _otel.operation(name, **{"url.path": url.path}):
            response = await self._binding.send(
                method, url, options=options, params=query or None, json=json
            )
        return cast_body(cast_to, response)

    def listing(
        self,
        path: str,
        model: type[T],
        params: QueryLike | None,
        keywords: ListOptions,
    ) -> AsyncPaginator[T]:
        """Any listing in the service's envelope, walked as the built-in ones."""
        path = check.check_path(path)
        if model is not dict and not (isinstance(model, type) and attrs.has(model)):
            raise InvalidArgumentError(f"model must be an attrs class or dict, got {model!r}")
        query = check.check_query(params, "params", check.WALK_PARAMS)
        extra = check.check_extra_query(keywords.get("extra_query"))
        url = self._url(
            path, query.keys() | extra.keys() | self._binding.options.extra_query.keys()
        )
        walked = sorted(k for k in url.query if k.lower() in check.WALK_PARAMS)
        if walked:
            raise InvalidArgumentError(
                f"the path's query cannot set {walked[0]!r}: the paginator sets it "
                "(use start_offset=, page_size= or .skip())"
            )
        return self._paginate(path, model, keywords, filters=query, where="get_api_list")

    def _url(self, path: str, names: Any) -> URL:
        """The URL of a checked ``path``: on the client's origin, under its base path."""
        binding = self._binding
        try:
            url = binding.url(path)
        except ValueError:
            url = None
        base = binding.transport.base_url.path.rstrip("/")
        if (
            url is None
            or url.origin() != binding.origin
            or not (url.path == base or url.path.startswith(f"{base}/"))
        ):
            raise InvalidArgumentError(
                f"path {path[:200]!r} does not stay under the client's base URL"
            )
        clash = sorted(set(url.query) & set(names))
        if clash:
            raise InvalidArgumentError(
                f"the path's query and params (or extra_query) both set {clash[0]!r}: "
                "set it in one place"
            )
        return url


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


class GenericCalls:
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
    async def post(
        self,
        path: str,
        *,
        cast_to: type[dict[Any, Any]],
        params: QueryLike | None = None,
        json: object = None,
        **options: Unpack[CallOptions],
    ) -> dict[str, Any]: ...
    @overload
    async def post(
        self,
        path: str,
        *,
        cast_to: type[list[Any]],
        params: QueryLike | None = None,
        json: object = None,
        **options: Unpack[CallOptions],
    ) -> list[Any]: ...
    @overload
    async def post(
        self,
        path: str,
        *,
        cast_to: None,
        params: QueryLike | None = None,
        json: object = None,
        **options: Unpack[CallOptions],
    ) -> None: ...
    @overload
    async def post(
        self,
        path: str,
        *,
        cast_to: type[T],
        params: QueryLike | None = None,
        json: object = None,
        **options: Unpack[CallOptions],
    ) -> T: ...
    async def post(
        self,
        path: str,
        *,
        cast_to: Any,
        params: QueryLike | None = None,
        json: object = None,
        **options: Unpack[CallOptions],
    ) -> Any:
        """POST ``path``: [`request("POST", ...)`][payroll_async.PayrollClient.request].

        Sent again only on a 429 or when nothing was sent: an answer lost after the
        request went out raises [`APIConnectionError`][payroll_async.APIConnectionError]
        with ``request_sent`` true, and whether the service did it is for you to find out.
        """
        return await self._generic.call("POST", path, cast_to, params, json, options)

    @overload
    async def put(
        self,
        path: str,
        *,
        cast_to: type[dict[Any, Any]],
        params: QueryLike | None = None,
        json: object = None,
        **options: Unpack[CallOptions],
    ) -> dict[str, Any]: ...
    @overload
    async def put(
        self,
        path: str,
        *,
        cast_to: type[list[Any]],
        params: QueryLike | None = None,
        json: object = None,
        **options: Unpack[CallOptions],
    ) -> list[Any]: ...
    @overload
    async def put(
        self,
        path: str,
        *,
        cast_to: None,
        params: QueryLike | None = None,
        json: object = None,
        **options: Unpack[CallOptions],
    ) -> None: ...
    @overload
    async def put(
        self,
        path: str,
        *,
        cast_to: type[T],
        params: QueryLike | None = None,
        json: object = None,
        **options: Unpack[CallOptions],
    ) -> T: ...
    async def put(
        self,
        path: str,
        *,
        cast_to: Any,
        params: QueryLike | None = None,
        json: object = None,
        **options: Unpack[CallOptions],
    ) -> Any:
        """PUT ``path``: [`request("PUT", ...)`][payroll_async.PayrollClient.request]
        (sent again as a POST is)."""
        return await self._generic.call("PUT", path, cast_to, params, json, options)

    @overload
    async def patch(
        self,
        path: str,
        *,
        cast_to: type[dict[Any, Any]],
        params: QueryLike | None = None,
        json: object = None,
        **options: Unpack[CallOptions],
    ) -> dict[str, Any]: ...
    @overload
    async def patch(
        self,
        path: str,
        *,
        cast_to: type[list[Any]],
        params: QueryLike | None = None,
        json: object = None,
        **options: Unpack[CallOptions],
    ) -> list[Any]: ...
    @overload
    async def patch(
        self,
        path: str,
        *,
        cast_to: None,
        params: QueryLike | None = None,
        json: object = None,
        **options: Unpack[CallOptions],
    ) -> None: ...
    @overload
    async def patch(
        self,
        path: str,
        *,
        cast_to: type[T],
        params: QueryLike | None = None,
        json: object = None,
        **options: Unpack[CallOptions],
    ) -> T: ...
    async def patch(
        self,
        path: str,
        *,
        cast_to: Any,
        params: QueryLike | None = None,
        json: object = None,
        **options: Unpack[CallOptions],
    ) -> Any:
        """PATCH ``path``: [`request("PATCH", ...)`][payroll_async.PayrollClient.request]
        (sent again as a POST is)."""
        return await self._generic.call("PATCH", path, cast_to, params, json, options)

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
