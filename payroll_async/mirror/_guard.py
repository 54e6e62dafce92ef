"""The deletion guard's first word: a run refused before it writes anything.

The bound on deletions (``_errors.refusal``) weighs the rows a run would mark deleted
against the live rows. At the end of a run that is exact, but by then the run has written
(and told) every item it saw: pointed at the wrong account, it overwrites rows with the
other account's items before it refuses to delete the rest. So the guard speaks first
too, from what the service says before anything is written:

- a listing's first page says ``totalCount``: of the ``live`` rows of its scope, at least
  ``live - totalCount`` are not in it (each item listed is at most one of them);
- the employers of update groups, walked (and proven) before any update group is: every
  live row of an employer that is not listed is not in any listing the run walks.

When that least count is already beyond the bound, the run is refused before its first
write, with the end's message. A ``totalCount`` the guard cannot trust decides nothing: a
missing one, one below the first page's items, and a capped one (a first page that is
full, followed by items past ``totalCount``: one request, asked only when the guard
would refuse); the end-of-run check stays for those, and for every lie that only the
walk finds.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable, Collection, Mapping

from ._errors import MaxDeletions, MirrorDeletionsError, refusal

__all__ = ["Guard", "at_least"]


def at_least(live: int, total: object, got: int, size: int) -> int | None:
    """Of ``live`` rows, how many a listing whose first page holds ``got`` items (of
    ``size`` asked) and says ``totalCount`` ``total`` leaves out at least; None when the
    total cannot be trusted without looking further (see ``Guard.first_page``)."""
    if type(total) is not int or total < got:
        return None  # missing, or below the items of its own page
    return max(0, live - total)


class Guard:
    """The early decisions of one run: the least deletions known so far, against the bound.

    ``live`` holds the live rows of each scope when the run began (the key None: a
    collection without scopes); ``whole``: the run's live rows, as the end-of-run check
    counts them.
    """

    def __init__(
        self, collection: str, live: Mapping[uuid.UUID | None, int], max_deletions: MaxDeletions
    ) -> None:
        self._collection = collection
        self._live = live
        self._whole = sum(live.values())
        self._bound = max_deletions
        self._least = 0
        """Rows known to be left out by the listings decided so far."""
        self.on = True
        """Whether the run has written nothing it cannot take back: only then is a run
        refused early (the first pass; the end-of-run check decides the rest)."""

    def _refused(self, least: int) -> MirrorDeletionsError | None:
        return refusal(self._collection, least, self._whole, self._bound, at_least=True)

    def employers(self, listed: Collection[uuid.UUID]) -> None:
        """The employers of update groups, a proven walk of them: the live rows of any
        other employer are in no listing of this run. Raises `MirrorDeletionsError`."""
        if not self.on:
            return
        self._least += sum(n for scope, n in self._live.items() if scope not in listed)
        refused = self._refused(self._least)
        if refused is not None:
            raise refused

    async def first_page(
        self,
        scope: uuid.UUID | None,
        total: object,
        got: int,
        size: int,
        past: Callable[[int], Awaitable[bool]],
    ) -> None:
        """A listing's first page (``got`` items of ``size`` asked, ``total`` its
        ``totalCount``) before anything of it is written; ``past(offset)`` says whether
        the listing holds an item at ``offset`` (one request). Raises
        `MirrorDeletionsError` when the rows it leaves out already pass the bound."""
        if not self.on:
            return
        least = at_least(self._live.get(scope, 0), total, got, size)
        if least is None:
            return
        refused = self._refused(self._least + least)
        if refused is None:
            self._least += least
            return
        assert isinstance(total, int)
        if got >= size and await past(total):
            return  # a capped totalCount: the end-of-run check decides
        raise refused
