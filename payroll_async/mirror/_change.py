"""A change the mirror recorded: a row of ``mirror_changes``, as ``on_change`` and the
changes file get it."""

from __future__ import annotations

import datetime
import uuid
from typing import Any

import attrs

from .._core._json import loads

__all__ = ["Change"]


@attrs.frozen
class Change:
    """One change the mirror recorded (a row of ``mirror_changes``)."""

    run_id: uuid.UUID
    """The run that recorded it."""
    collection: str
    """The collection, as the command names it."""
    item_id: uuid.UUID
    """The item's id (its row's primary key)."""
    change: str
    """``inserted``, ``updated`` or ``deleted``."""
    at: datetime.datetime
    """When the change was committed (UTC)."""
    before: str | None = None
    """The item's JSON as its row held it before the change: None for an insert (and for
    a row of an earlier schema, which kept no JSON)."""
    after: str | None = None
    """The item's JSON as the service sent it: None for a deletion."""

    def values(self) -> tuple[Any, ...]:
        """As a row of ``mirror_changes``: run_id, collection, item_id, change, at, before,
        after."""
        return (
            self.run_id,
            self.collection,
            self.item_id,
            self.change,
            self.at,
            self.before,
            self.after,
        )

    def to_json(self) -> dict[str, Any]:
        """As a line of ``--changes``: ``before`` and ``after`` as JSON values (or null)."""
        return {
            "run_id": str(self.run_id),
            "collection": self.collection,
            "item_id": str(self.item_id),
            "change": self.change,
            "at": self.at.isoformat().replace("+00:00", "Z"),
            "before": None if self.before is None else loads(self.before),
            "after": None if self.after is None else loads(self.after),
        }
