"""The generic calls that write: ``client.post``, ``put`` and ``patch`` (a mixin of the client)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeVar, overload

from .._core._types import QueryLike
from .._http._options import CallOptions, Unpack
from ._generic import Generic

__all__ = ["GenericWrites"]

T = TypeVar("T")


class GenericWrites:
    """The client's generic writes (``PayrollClient`` has them; see its reference)."""

    if TYPE_CHECKING:
        _generic: Generic

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
