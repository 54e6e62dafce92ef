"""What every resource shares: one client's binding, and how an operation is declared.

An operation is one method, declared once:

- a listing is a plain method taking ``**options: Unpack[ListOptions]`` that returns
  ``self._paginate(...)``: the walk's and the call's keywords are validated there;
- any other operation is an ``async`` method taking ``**options: Unpack[CallOptions]``,
  decorated with ``operation()``, which gives it its tracing span, and listed in its
  resource's raw-response view with ``raw()`` (typed from the method itself).
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, Concatenate, Generic, ParamSpec, TypeVar

import attrs
from yarl import URL

from .._core import _validation as check
from .._core._exceptions import InvalidArgumentError
from .._core._types import NotGiven, SortLike
from .._http import _otel
from .._http._attempt import Request, build_request
from .._http._auth import Identity
from .._http._options import FinalOptions, ListOptions, Options, parse, parse_list
from .._http._requester import Requester
from .._http._retry import Recovery
from .._http._seam import RawResponse, Response, call_raw, record
from .._paging._decode import structure_body
from .._paging._pagination import AsyncPaginator

__all__ = ["BoundClient", "RawView", "Resource", "operation", "raw"]

T = TypeVar("T")
P = ParamSpec("P")
R = TypeVar("R", bound="Resource")


class Closing:
    """Whether one client (or one copy of it) was closed: set by its ``close()``, read by
    every request of it here, without asking the client."""

    __slots__ = ("closed",)

    def __init__(self) -> None:
        self.closed: bool = False


class BoundClient:
    """One client as its resources and paginators see it: transport, options, state.

    Every request goes through ``send()``, which refuses to send once this client (or
    the client it was copied from) is closed. ``options`` is the client's (or the copy's)
    complete record; a call's options are laid over it once, by ``resolve()``.
    """

    __slots__ = ("_closing", "options", "transport")

    def __init__(self, transport: Requester, *, options: FinalOptions, closing: Closing) -> None:
        self.transport: Requester = transport
        self.options: FinalOptions = options
        self._closing = closing

    @property
    def origin(self) -> URL:
        return self.transport.origin

    def url(self, path: str) -> URL:
        return self.transport.url(path)

    def identity(self) -> Identity:
        """The service root and the client's credentials, fingerprintable, never shown."""
        return Identity(str(self.transport.url("")), token=self.transport.auth.static)

    def resolve(self, options: Options) -> FinalOptions:
        """A call's options over this client's: the record its requests read."""
        return options.over(self.options)

    def _open(self) -> Requester:
        """The transport, unless this client (or the one it was copied from) is closed."""
        if self._closing.closed or self.transport.is_closed:
            raise self.transport.closed_error()
        return self.transport

    async def send(self, request: Request) -> Response:
        """``request`` sent by the transport's loop: the Response of its 2xx."""
        response: Response = await self._open().loop(request)
        record(response)
        return response

    async def send_recovering(self, request: Request, recovery: Recovery | None) -> Any:
        """``send``, with ``recovery`` consulted when an answer is lost: the Response of a
        2xx, or what ``recovery.find`` found the lost attempt did."""
        found = await self._open().loop(request, recovery)
        if isinstance(found, Response):
            record(found)
        return found


def operation(
    method: Callable[Concatenate[R, P], Awaitable[T]],
) -> Callable[Concatenate[R, P], Awaitable[T]]:
    """An async operation, in a span of its own (``webhooks.create``) when OTel is on."""
    name = method.__name__

    @functools.wraps(method)
    async def run(self: R, /, *args: P.args, **kwargs: P.kwargs) -> T:
        with _otel.operation(f"{self._name}.{name}"):
            return await method(self, *args, **kwargs)

    return run


class Resource:
    """A group of operations, bound to one client."""

    _name = "resource"
    """The operation spans' prefix: ``payroll_connections`` in ``payroll_connections.list``."""

    def __init__(self, binding: BoundClient) -> None:
        self._binding = binding

    @property
    def with_raw_response(self) -> RawView[Any]:
        """These operations, each returning a RawResponse (status, headers, request id).

        ```pycon
        >>> raw = await client.webhooks.with_raw_response.delete(sid)
        >>> raw.status, raw.request_id
        (204, 'req-42')
        ```
        """
        return RawView(self)

    def _options(self, where: str, keywords: Mapping[str, object]) -> FinalOptions:
        """A call's option keywords, validated and laid over the client's."""
        return self._binding.resolve(parse(f"{self._name}.{where}", keywords))

    def _paginate(
        self,
        path: str,
        model: type[T],
        keywords: ListOptions,
        *,
        filters: Mapping[str, Any] | None = None,
        sort: SortLike | None = None,
        sort_fields: frozenset[str] | None = None,
        page_size_max: int | None = None,
        where: str = "list",
    ) -> AsyncPaginator[T]:
        """A listing, every option validated now, so bad input fails before iteration."""
        binding = self._binding
        call = parse_list(f"{self._name}.{where}", keywords, page_size_max)
        size = binding.options.page_size
        if (
            isinstance(call.page_size, NotGiven)
            and size is not None
            and page_size_max is not None
            and size > page_size_max
        ):
            # The client's default is above what this listing allows: ask for its maximum.
            call = attrs.evolve(call, page_size=page_size_max)
        params: dict[str, Any] = dict(filters or {})
        sort_value = check.check_sort(sort, sort_fields)
        if sort_value is not None:
            params["sort"] = sort_value
        clash = sorted(params.keys() & call.extra_query.keys())
        if clash:
            raise InvalidArgumentError(
                f"extra_query cannot set {clash[0]!r}: this listing sets it from its own "
                "keywords on every page"
            )
        return AsyncPaginator(
            binding,
            path,
            model,
            params=params,
            max_items=check.check_max_items(keywords.get("max_items")),
            start_offset=check.check_start_offset(keywords.get("start_offset", 0)),
            options=binding.resolve(call),
            operation=f"{self._name}.{where}",
        )

    async def _send(
        self,
        method: str,
        path: str,
        options: FinalOptions,
        *,
        json: Any = None,
    ) -> Response:
        """One non-list request; the Response of its 2xx."""
        binding = self._binding
        return await binding.send(build_request(method, binding.url(path), options, json=json))

    async def _send_for(
        self,
        model: type[T],
        method: str,
        path: str,
        options: FinalOptions,
        *,
        json: Any = None,
    ) -> T:
        """One non-list request whose 2xx body is a ``model``."""
        return structure_body(model, await self._send(method, path, options, json=json))


ResourceT = TypeVar("ResourceT", bound=Resource)


class RawView(Generic[ResourceT]):
    """A resource's operations, each returning a ``RawResponse`` (status, headers).

    ```pycon
    >>> raw = await client.webhooks.with_raw_response.delete(sid)
    >>> raw.status, raw.request_id
    (204, 'req-42')
    ```
    """

    def __init__(self, resource: ResourceT) -> None:
        self.resource: ResourceT = resource
        """The resource whose operations this view calls."""

    if not TYPE_CHECKING:  # a misspelt operation stays a type error

        def __getattr__(self, name: str) -> Any:
            if not name.startswith("_") and callable(getattr(self.resource, name, None)):
                raise AttributeError(
                    f"{name!r} has no raw response: listings give each page's headers "
                    "through .pages() (Page.headers)"
                )
            raise AttributeError(name)


class raw(Generic[R, P, T]):
    """The raw-response form of an operation, typed from the operation's own signature.

    ``create = raw(Webhooks.create)`` in a ``RawView`` makes
    ``view.create(...)`` take exactly ``Webhooks.create``'s arguments and return a
    ``RawResponse`` of what it returns.
    """

    def __init__(self, method: Callable[Concatenate[R, P], Awaitable[T]]) -> None:
        self._method = method
        self.__doc__ = method.__doc__

    def __get__(
        self, view: RawView[R], owner: type[Any] | None = None
    ) -> Callable[P, Awaitable[RawResponse[T]]]:
        resource = view.resource
        method = self._method

        async def call(*args: P.args, **kwargs: P.kwargs) -> RawResponse[T]:
            return await call_raw(method(resource, *args, **kwargs))

        call.__name__ = method.__name__
        call.__doc__ = method.__doc__
        return call
