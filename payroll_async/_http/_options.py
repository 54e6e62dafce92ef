"""Options: what a call or a ``with_options`` copy may set, and the final record a request reads.

A client holds one complete ``FinalOptions``, its defaults. A
``PayrollClient.with_options()`` copy and each call bring an ``Options`` of their
own, in which anything left out is ``NOT_GIVEN``; ``Options.over()`` lays it over the
record beneath once, at the binding, and the transport and the paginator only read the
final record that comes out (the way Stainless SDKs build a ``FinalRequestOptions``).

The keywords themselves are declared once, as the TypedDicts ``CallOptions`` (every
operation), ``ListOptions`` (every listing) and ``ClientOptions``
(``with_options``); ``parse()`` validates a call's keywords against them.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Mapping
from typing import Any, Final, TypeAlias, TypedDict

import aiohttp
import attrs

from .._core import _validation as check
from .._core._exceptions import InvalidArgumentError
from .._core._types import NOT_GIVEN, NotGiven, RetryPolicy
from .._core._validation import check_retry
from ._seam import Timeout

if sys.version_info >= (3, 11):
    from typing import Unpack
else:  # pragma: no cover - Python 3.10
    from typing_extensions import Unpack

__all__ = [
    "CallOptions",
    "ClientOptions",
    "FinalOptions",
    "ListOptions",
    "Options",
    "TimeoutLike",
    "Unpack",
    "check_timeout",
    "parse",
]

SINGLE_ATTEMPT: Final = RetryPolicy(max_attempts=1)
NO_TIMEOUT: Final = Timeout()

TimeoutLike: TypeAlias = float | Timeout | aiohttp.ClientTimeout | None
"""Seconds per attempt, a `Timeout`, an ``aiohttp.ClientTimeout``, or None for no limit."""

_LIMITS = ("total", "connect", "sock_read", "sock_connect")


def check_timeout(value: object) -> Timeout:
    """Seconds per attempt (finite, > 0), a `Timeout` or an ``aiohttp.ClientTimeout`` (each
    limit such seconds or None), or None (no limit): as the seam's `Timeout`.

    The boundary where aiohttp's type is read: below it (the seam, the transports' own
    ``request.timeout``) the limits are a `Timeout`; aiohttp's transport makes its
    ``ClientTimeout`` of it again."""
    if value is None:
        return NO_TIMEOUT
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if not _is_seconds(value):
            raise InvalidArgumentError(
                f"timeout must be finite seconds > 0, a Timeout, a ClientTimeout or None, "
                f"got {value!r}"
            )
        return Timeout(total=float(value))
    if isinstance(value, (Timeout, aiohttp.ClientTimeout)):
        parts: dict[str, float | None] = {}
        for field in _LIMITS:
            part = getattr(value, field)
            if part is not None and not _is_seconds(part):
                raise InvalidArgumentError(
                    f"timeout.{field} must be finite seconds > 0 or None, got {part!r}"
                )
            parts[field] = None if part is None else float(part)
        return Timeout(**parts)
    raise InvalidArgumentError(
        f"timeout must be finite seconds > 0, a Timeout, a ClientTimeout or None, got {value!r}"
    )


def _is_seconds(value: object) -> bool:
    return (
        isinstance(value, (int, float))
        and not isinstance(value, bool)
        and math.isfinite(value)
        and value > 0
    )


class CallOptions(TypedDict, total=False):
    """The options every operation takes, as keywords (all optional).

    Left out means the client's (or the ``with_options`` copy's) default; ``None`` means
    none: no time limit, a single attempt.
    """

    timeout: TimeoutLike | NotGiven
    """Seconds per attempt, a `Timeout`, an ``aiohttp.ClientTimeout``, or None for no
    limit."""
    retry: RetryPolicy | NotGiven | None
    """The retry policy of this call (None: a single attempt)."""
    extra_query: Mapping[str, Any] | None
    """Query parameters to add (not ``offset``/``limit``, which the paginator sets)."""
    extra_headers: Mapping[str, str] | None
    """Headers to add (not ``Authorization``, ``Host`` or ``Content-Length``)."""


class ListOptions(CallOptions, total=False):
    """The options of every listing: a call's, and how to walk the pages."""

    page_size: int | NotGiven | None
    """Items per request (None: the service's own page size)."""
    max_items: int | None
    """Stop after this many items (None: all of them)."""
    start_offset: int
    """Skip the listing's first items (0 by default)."""
    concurrency: int | NotGiven | None
    """The most requests this listing has in flight at once: its pages, fetched together
    once a total is known (None: the client's ``concurrency``, which caps every request of
    the client together)."""


class ClientOptions(CallOptions, total=False):
    """What ``PayrollClient.with_options()`` takes: a call's options, and these."""

    page_size: int | None
    """What listings ask for (None: the service's own page size)."""
    concurrency: int
    """The most requests one listing has in flight at once (the client's own ``concurrency``
    still caps all of its requests together)."""
    max_response_size: int | None
    """The bound of one response body, in bytes (None: no limit)."""


@attrs.frozen(slots=True)
class FinalOptions:
    """Every option of a request, resolved: what the transport and the paginator read."""

    timeout: Timeout
    retry: RetryPolicy
    page_size: int | None
    concurrency: int
    max_response_size: int | None
    headers: Mapping[str, str]
    """Every header but Authorization (and Content-Type, set with a body)."""
    extra_query: Mapping[str, Any] = attrs.field(factory=dict)


@attrs.frozen(slots=True)
class Options:
    """What one call or one ``with_options`` copy sets; ``NOT_GIVEN`` falls through."""

    timeout: Timeout | NotGiven | None = NOT_GIVEN
    retry: RetryPolicy | NotGiven | None = NOT_GIVEN
    page_size: int | NotGiven | None = NOT_GIVEN
    concurrency: int | NotGiven = NOT_GIVEN
    max_response_size: int | NotGiven | None = NOT_GIVEN
    extra_query: Mapping[str, Any] = attrs.field(factory=dict)
    extra_headers: Mapping[str, str] = attrs.field(factory=dict)

    def over(self, base: FinalOptions) -> FinalOptions:
        """These options laid over ``base``: what is given here wins, extras are merged."""
        if self is EMPTY:
            return base
        retry = base.retry if isinstance(self.retry, NotGiven) else self.retry
        return FinalOptions(
            timeout=_given(self.timeout, base.timeout) or NO_TIMEOUT,
            retry=retry or SINGLE_ATTEMPT,
            page_size=_given(self.page_size, base.page_size),
            concurrency=_given(self.concurrency, base.concurrency),
            max_response_size=_given(self.max_response_size, base.max_response_size),
            headers={**base.headers, **self.extra_headers} if self.extra_headers else base.headers,
            extra_query=(
                {**base.extra_query, **self.extra_query} if self.extra_query else base.extra_query
            ),
        )


EMPTY: Final = Options()


def _given(value: Any, default: Any) -> Any:
    return default if isinstance(value, NotGiven) else value


_CALL_KEYS: Final = frozenset(CallOptions.__annotations__)
_LIST_KEYS: Final = frozenset(ListOptions.__annotations__) | _CALL_KEYS
_CLIENT_KEYS: Final = frozenset(ClientOptions.__annotations__) | _CALL_KEYS


def parse(
    where: str,
    keywords: Mapping[str, Any],
    allowed: frozenset[str] = _CALL_KEYS,
    *,
    page_size_max: int | None = None,
) -> Options:
    """A call's option keywords, validated (InvalidArgumentError before anything is sent).

    A keyword that is not an option is a TypeError, as Python raises it for a function.
    ``page_size_max`` is a listing's own maximum page size, where the service sets one.
    """
    if not keywords:
        return EMPTY
    unknown = keywords.keys() - allowed
    if unknown:
        raise TypeError(f"{where}() got an unexpected keyword argument {min(unknown)!r}")
    fields: dict[str, Any] = {}
    value = keywords.get("timeout", NOT_GIVEN)
    if not isinstance(value, NotGiven):
        fields["timeout"] = check_timeout(value)
    fields["retry"] = check_retry(keywords.get("retry", NOT_GIVEN))
    if "extra_query" in keywords:
        fields["extra_query"] = check.check_extra_query(keywords["extra_query"])
    if "extra_headers" in keywords:
        fields["extra_headers"] = check.check_extra_headers(keywords["extra_headers"])
    if allowed is _CALL_KEYS:
        return Options(**fields)
    size = keywords.get("page_size", NOT_GIVEN)
    if size is not None and not isinstance(size, NotGiven):
        fields["page_size"] = check.check_page_size(
            size, *(() if page_size_max is None else (page_size_max,))
        )
    elif size is None:
        fields["page_size"] = None
    concurrency = keywords.get("concurrency")
    if concurrency is not None and not isinstance(concurrency, NotGiven):
        # One meaning everywhere: the most requests in flight at once, here for this
        # listing's pages (within the client's own concurrency, which caps them all).
        fields["concurrency"] = check.check_concurrency(concurrency)
    if allowed is _CLIENT_KEYS and "max_response_size" in keywords:
        fields["max_response_size"] = check.check_max_response_size(keywords["max_response_size"])
    return Options(**fields)


def parse_list(
    where: str, keywords: Mapping[str, Any], page_size_max: int | None = None
) -> Options:
    """A listing's keywords: its call options, page size and concurrency (the walk's own,
    ``max_items`` and ``start_offset``, are read by the paginator)."""
    return parse(where, keywords, _LIST_KEYS, page_size_max=page_size_max)


def parse_client(keywords: Mapping[str, Any]) -> Options:
    """``with_options`` keywords."""
    return parse("with_options", keywords, _CLIENT_KEYS)


def call_keywords(options: Options) -> CallOptions:
    """A call's validated options as the keywords of another operation in the same call."""
    return CallOptions(
        timeout=options.timeout,
        retry=options.retry,
        extra_query=options.extra_query,
        extra_headers=options.extra_headers,
    )
