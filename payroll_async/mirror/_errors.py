"""The mirror's errors (never with the URL's credentials) and the deletion guard.

An empty but honest-looking listing (another account's token, a sandbox, an emptied
replica) is a proven walk: like rsync's ``--max-delete``, a bound on one run's deletions
keeps it from emptying the user's table (beyond it the run marks none).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._core._exceptions import InvalidArgumentError, PayrollError
from .._core._types import NotGiven
from .._sql import ErrorKinds

if TYPE_CHECKING:
    from ._change import MirrorResult

__all__ = [
    "DEFAULT_FLOOR",
    "MIRROR_ERRORS",
    "MaxDeletions",
    "MirrorBusyError",
    "MirrorDeletionsError",
    "MirrorError",
    "MirrorURLError",
    "check_max_deletions",
    "refusal",
]


class MirrorError(PayrollError):
    """The mirror's database failed: cannot connect, a statement failed, a newer schema.

    The message never carries a credential of the database URL (its password, or a secret
    of its query such as ``?password=``: shown as ``***``); the driver's exception is not
    chained (its text, with the credentials removed, is in the message).
    """


class MirrorURLError(MirrorError, InvalidArgumentError):
    """``into`` is not a database URL the mirror can write to (bad input).

    An `InvalidArgumentError` too, as all bad input is: raised before any request.
    """


class MirrorBusyError(MirrorError):
    """Another run mirrors this collection into this database now (``wait=False``)."""


class MirrorDeletionsError(MirrorError):
    """A run would have marked more rows deleted than ``max_deletions`` allows.

    An empty or truncated answer (another account's token, a sandbox, an emptied replica)
    looks like a proven walk, and one such run would otherwise mark every row deleted.
    When the service's first answers already say so (a ``totalCount`` under the bound of
    the live rows), the run is refused before its first write: it wrote nothing, and told
    nothing. Otherwise it is refused at its end: it marked none (what it inserted and
    updated is committed and recorded). ``deletions`` rows would have been marked deleted
    (at least, when refused before writing), of ``live`` live rows; ``result`` is what the
    run did (its ``deleted`` 0, ``complete`` False). The next run with ``max_deletions``
    at least the count the message names (or None) marks them.
    """

    deletions: int
    """Rows the run would have marked deleted (each missed by two proven walks), or, when
    it was refused before writing, the least it would have marked."""
    live: int
    """Live rows of the collection (in the run's scope) before the run would have."""
    result: MirrorResult | None
    """What the run did: its inserts and updates are committed; nothing marked deleted."""

    def __init__(
        self, message: str, *, deletions: int, live: int, result: MirrorResult | None = None
    ) -> None:
        super().__init__(message)
        self.deletions = deletions
        self.live = live
        self.result = result


MIRROR_ERRORS = ErrorKinds(MirrorError, MirrorURLError, MirrorBusyError, "into")
"""What the mirror's database failures are raised as (``_sql``'s `ErrorKinds`)."""


MaxDeletions = int | NotGiven | None
"""``max_deletions``: at most that many rows marked deleted by a run; None: no bound;
NOT_GIVEN: the default bound (more than half of the live rows, when at least
``DEFAULT_FLOOR`` are live, is refused)."""

DEFAULT_FLOOR = 100
"""Live rows from which the default bound applies: a smaller table may lose every row."""


def check_max_deletions(value: MaxDeletions) -> None:
    """``max_deletions`` checked: a count (0 or more), None or NOT_GIVEN, else
    `InvalidArgumentError` (before any request)."""
    if value is None or isinstance(value, NotGiven):
        return
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidArgumentError(
            f"max_deletions must be an integer (0 or more), or None for no bound, not {value!r}"
        )
    if value < 0:
        raise InvalidArgumentError(f"max_deletions must be 0 or more, got {value}")


def refusal(
    collection: str,
    deletions: int,
    live: int,
    max_deletions: MaxDeletions,
    *,
    at_least: bool = False,
) -> MirrorDeletionsError | None:
    """The error of a run that would mark ``deletions`` of ``live`` rows deleted, if
    ``max_deletions`` does not allow it; None if it does.

    ``at_least``: the run is refused before its first write (``_guard``), from what the
    service said first: ``deletions`` is the least it would mark, and nothing is written."""
    if max_deletions is None or not deletions:
        return None
    if isinstance(max_deletions, NotGiven):
        if live < DEFAULT_FLOOR or deletions * 2 <= live:
            return None
        bound = (
            f"more than half of them (the default bound, from {DEFAULT_FLOOR} live rows; "
            "set max_deletions to change it)"
        )
    elif deletions <= max_deletions:
        return None
    else:
        bound = f"more than max_deletions={max_deletions} allows"
    if at_least:
        # Nothing written yet: the least it would mark, and a bound that lets any run
        # through (the run may mark up to every live row).
        least = "" if deletions >= live else "at least "
        done, allow = "so it wrote nothing (nothing inserted, updated or marked deleted)", live
    else:
        least, done = "", "so it marked none (its inserts and updates are kept)"
        allow = deletions
    return MirrorDeletionsError(
        f"{collection}: the run would mark {least}{deletions:,} of the {live:,} live rows "
        f"deleted, {bound}, {done}. An empty or short answer from the wrong account, a "
        "sandbox or an emptied replica looks the same: check the service's URL and token. "
        f"If the items are really gone, run again with max_deletions={allow} (or "
        "max_deletions=None for no bound).",
        deletions=deletions,
        live=live,
    )
