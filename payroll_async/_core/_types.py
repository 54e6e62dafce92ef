"""The public surface's plain types: aliases, the "not given" sentinel, and RetryPolicy."""

from __future__ import annotations

import enum
import uuid
from collections.abc import Mapping, Sequence
from typing import Final, Literal, TypeAlias, TypeVar

import attrs

from ._exceptions import InvalidArgumentError

__all__ = [
    "NOT_GIVEN",
    "IdLike",
    "NotGiven",
    "QueryLike",
    "RetryPolicy",
    "SortLike",
    "given",
]

IdLike: TypeAlias = uuid.UUID | str
"""An identifier: a ``uuid.UUID`` or its canonical string form."""

SortLike: TypeAlias = str | Sequence[str]
"""``"-createdAt"``, ``"active,-createdAt"`` or ``["active", "-created_at"]``."""

QueryLike: TypeAlias = Mapping[str, "str | int | float | bool"]
"""Query parameters of a generic call: names to strings, numbers or booleans (sent as
``true``/``false``)."""


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
class RetryPolicy:
    """When and how long to wait before sending a failed request again.

    Retried: 429 for every method; 500, 502, 503, 504, connection errors and timeouts for
    GET and DELETE; a POST only on 429 and on connect failures where nothing was sent.

    ```pycon
    >>> RetryPolicy(max_attempts=6, backoff_max=30.0)   # more patient
    >>> RetryPolicy(max_attempts=1)                     # never retry
    ```

    Raises [`InvalidArgumentError`][payroll_async.InvalidArgumentError] for a value out of
    range.
    """

    max_attempts: int = 4
    """Attempts in all, the first included (at least 1)."""
    backoff_initial: float = 0.5
    """Upper bound of the first backoff wait, in seconds; it doubles on each attempt."""
    backoff_max: float = 8.0
    """Cap of any backoff wait, in seconds."""
    max_retry_after: float = 60.0
    """A Retry-After longer than this raises RateLimitError at once instead of sleeping."""

    def honours(self, retry_after: float | None) -> bool:
        """Whether a Retry-After of this many seconds is waited for (None: none asked)."""
        return retry_after is None or retry_after <= self.max_retry_after

    def __attrs_post_init__(self) -> None:
        # Checked here rather than with attrs validators so that the fields read as plain
        # defaults in the reference and in help().
        value: object = self.max_attempts
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise InvalidArgumentError(f"max_attempts must be an integer >= 1, got {value!r}")
        for name in ("backoff_initial", "backoff_max", "max_retry_after"):
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or isinstance(value, bool) or not value >= 0:
                raise InvalidArgumentError(f"{name} must be a number >= 0, got {value!r}")
