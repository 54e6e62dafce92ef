"""Type aliases of the public surface, the "not given" sentinel, and per-call options."""

from __future__ import annotations

import enum
import uuid
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final, Literal, TypeAlias, TypeVar

import attrs

if TYPE_CHECKING:
    import aiohttp

    from ._retry import RetryPolicy

__all__ = ["NOT_GIVEN", "IdLike", "NotGiven", "RequestOptions", "SortLike", "TimeoutLike"]

IdLike: TypeAlias = uuid.UUID | str
"""An identifier: a ``uuid.UUID`` or its canonical string form."""

SortLike: TypeAlias = str | Sequence[str]
"""``"-createdAt"``, ``"active,-createdAt"`` or ``["active", "-created_at"]``."""

TimeoutLike: TypeAlias = "float | aiohttp.ClientTimeout | None"
"""Seconds per attempt, an ``aiohttp.ClientTimeout``, or None for no limit."""


class NotGiven(enum.Enum):
    """The type of [`NOT_GIVEN`][payroll_async.NOT_GIVEN]: an option left out, as distinct from
    ``None``.

    Everywhere in this SDK, an option left out means "the default" (the client's, or the
    service's), and ``None`` means "none": no timeout, no retries, no limit of its own.
    """

    NOT_GIVEN = enum.auto()
    """The one value of this type."""

    def __repr__(self) -> str:
        return "NOT_GIVEN"

    def __bool__(self) -> Literal[False]:
        return False


NOT_GIVEN: Final = NotGiven.NOT_GIVEN
"""An option left out: the default applies (``None`` would mean "none")."""

T = TypeVar("T")


def given(value: T | NotGiven, default: T) -> T:
    """``value``, or ``default`` when it was left out."""
    return default if isinstance(value, NotGiven) else value


@attrs.frozen
class RequestOptions:
    """What one call may override: timeout, retry policy, extra query and headers.

    Built (and validated) by the client from the keywords of an operation or of
    [`PayrollClient.with_options()`][payroll_async.PayrollClient.with_options]. ``NOT_GIVEN``
    fields fall back to the options
    beneath them (the copy's, then the client's); ``timeout=None`` means no time limit and
    ``retry=None`` a single attempt.
    """

    timeout: aiohttp.ClientTimeout | NotGiven | None = NOT_GIVEN
    retry: RetryPolicy | NotGiven | None = NOT_GIVEN
    extra_query: Mapping[str, Any] = attrs.field(factory=dict)
    extra_headers: Mapping[str, str] = attrs.field(factory=dict)

    def over(self, base: RequestOptions) -> RequestOptions:
        """These options laid over ``base``: what is given here wins, extras are merged."""
        if self is _EMPTY or self == _EMPTY:
            return base
        return RequestOptions(
            timeout=given(self.timeout, base.timeout),
            retry=given(self.retry, base.retry),
            extra_query={**base.extra_query, **self.extra_query},
            extra_headers={**base.extra_headers, **self.extra_headers},
        )


_EMPTY: Final = RequestOptions()
