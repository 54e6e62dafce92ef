"""Type aliases of the public surface and the "not given" sentinel."""

from __future__ import annotations

import enum
import uuid
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Final, Literal, TypeAlias, TypeVar

if TYPE_CHECKING:
    import aiohttp


__all__ = [
    "NOT_GIVEN",
    "IdLike",
    "NotGiven",
    "QueryLike",
    "SortLike",
    "TimeoutLike",
    "given",
]

IdLike: TypeAlias = uuid.UUID | str
"""An identifier: a ``uuid.UUID`` or its canonical string form."""

SortLike: TypeAlias = str | Sequence[str]
"""``"-createdAt"``, ``"active,-createdAt"`` or ``["active", "-created_at"]``."""

QueryLike: TypeAlias = Mapping[str, "str | int | float | bool"]
"""Query parameters of a generic call: names to strings, numbers or booleans (sent as
``true``/``false``)."""

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
