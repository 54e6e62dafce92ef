"""Type aliases shared by the public surface, and the "not given" sentinel."""

from __future__ import annotations

import enum
import uuid
from collections.abc import Sequence
from typing import Final, Literal, TypeAlias

__all__ = ["NOT_GIVEN", "IdLike", "NotGiven", "SortLike"]

IdLike: TypeAlias = uuid.UUID | str
"""An identifier: a ``uuid.UUID`` or its canonical string form."""

SortLike: TypeAlias = str | Sequence[str]
"""``"-createdAt"``, ``"active,-createdAt"`` or ``["active", "-created_at"]``."""


class NotGiven(enum.Enum):
    """The type of :data:`NOT_GIVEN`: an option left out, as distinct from ``None``."""

    NOT_GIVEN = enum.auto()

    def __repr__(self) -> str:
        return "NOT_GIVEN"

    def __bool__(self) -> Literal[False]:
        return False


NOT_GIVEN: Final = NotGiven.NOT_GIVEN
