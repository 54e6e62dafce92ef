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

from collections.abc import Mapping
from typing import Any, Final, TypeVar

import attrs
from yarl import URL

from .._core import _validation as check
from .._core._exceptions import InvalidArgumentError
from .._core._redact import shown_url
from .._core._types import QueryLike
from .._http import _otel
from .._http._attempt import build_request
from .._http._options import ListOptions, parse
from .._paging._decode import cast_body, check_cast
from .._paging._pagination import AsyncPaginator
from ._base import Resource

__all__ = ["METHODS", "Generic"]

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
        shown = shown_url(url.path, self._binding.transport.auth.static)
        with _otel.operation(name, **{"url.path": shown}):
            response = await self._binding.send(
                build_request(method, url, options, query or None, json)
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
