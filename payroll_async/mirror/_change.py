"""What a run of ``mirror()`` tells: each change it recorded (a row of ``mirror_changes``,
as ``on_change`` and the changes file get it), its progress as it goes, and its result."""

from __future__ import annotations

import datetime
import uuid
from typing import Any

import attrs

from .._core._json import loads

__all__ = ["Change", "MirrorProgress", "MirrorResult"]


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


@attrs.frozen
class MirrorProgress:
    """How far a run of `mirror()` is: its ``on_progress`` hook gets one after each write.

    ```pycon
    >>> def show(progress: MirrorProgress) -> None:
    ...     print(f"pass {progress.pass_number}: {progress.items} of {progress.total}")
    >>> result = await mirror(client, "payroll-connections", on_progress=show)
    pass 1: 1585 of 25000
    ...
    pass 1: 25000 of 25000
    ```
    """

    items: int
    """Distinct items walked so far in this pass (written, or found unchanged). It only
    grows during a pass; a new pass counts from 0 again."""
    total: int | None
    """The service's ``totalCount`` on the pass's first page (items may come and go
    during the walk); None for update-groups of every employer (one listing each)."""
    pass_number: int
    """1 for the first walk of the listing. A run whose walk was disturbed by changes
    walks again to prove its deletions (at most ``max_passes`` walks)."""


@attrs.frozen
class MirrorResult:
    """What one run of `mirror()` did."""

    collection: str
    """The collection, as the command names it (`payroll-connections`)."""
    run_id: uuid.UUID
    """The run's row in `mirror_runs` (and its changes' `run_id`)."""
    items: int
    """Items in the service, as the last walk of the run saw them."""
    inserted: int
    """Rows inserted (new items, and items back after a deletion)."""
    updated: int
    """Rows whose fields changed."""
    deleted: int
    """Rows marked deleted, each proven gone."""
    unchanged: int
    """Items seen and not written (equal to their row)."""
    complete: bool
    """Whether the live rows equal the service: every walk checked, every deletion proven.
    False when the service changed too much during the run to prove it, or said
    something its pages contradict (a short page while ``totalCount`` says more, items
    out of order, an id twice); the next run finishes the work (nothing is ever marked
    deleted unproven). Not while ``totalCount`` is capped below the items the walks see:
    every item is still mirrored, but no deletion is proven (see docs/mirror.md)."""
