"""The generic calls' raw-response view: ``client.with_raw_response.get(...)`` and the rest."""

from __future__ import annotations

import functools
from collections.abc import Awaitable
from typing import Any, Protocol, TypeVar, cast, overload

from .._core._types import QueryLike
from .._http._options import CallOptions, Unpack
from .._http._seam import RawResponse, call_raw
from ._generic import Generic

__all__ = ["ClientWithRawResponse"]

T = TypeVar("T")


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
