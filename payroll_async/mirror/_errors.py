"""The mirror's errors: database failures, typed, with the URL's credentials never in them."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._core._exceptions import InvalidArgumentError, PayrollError
from .._sql import ErrorKinds

if TYPE_CHECKING:
    from ._result import MirrorResult

__all__ = [
    "MIRROR_ERRORS",
    "MirrorBusyError",
    "MirrorDeletionsError",
    "MirrorError",
    "MirrorURLError",
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

    It marked none (what it inserted and updated is committed and recorded) and ended
    with this error: an empty or truncated answer (another account's token, a sandbox, an
    emptied replica) looks like a proven walk, and one such run would otherwise mark every
    row deleted. ``deletions`` rows would have been marked deleted, of ``live`` live rows;
    ``result`` is what the run did (its ``deleted`` 0, ``complete`` False). The next run
    with ``max_deletions`` at least ``deletions`` (or None) marks them.
    """

    deletions: int
    """Rows the run would have marked deleted (each missed by two proven walks)."""
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
