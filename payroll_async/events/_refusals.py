"""Why a notification was refused, told where its user looks: once per cause per sender.

A receiver that refuses every notification (a wrong signing secret, say) must not do so
in silence, nor bury the reason in a line per delivery. The first refusal of each cause
from each sender is a WARNING on ``payroll_async.events`` that says so; the same refusal
again is DEBUG. Those WARNINGs (and the receiver's other WARNINGs and ERRORs) reach
stderr while nothing else would show them: the package's ``NullHandler`` keeps Python's
last resort quiet, so ``Unconfigured`` stands in for it, as long as no handler of the
application's (``logging.basicConfig``, a framework's log configuration, ``PAYROLL_LOG``,
the command's console) is on the logger's way to the root (the inbox's
workers' lines are shown the same way).
"""

from __future__ import annotations

import logging
from collections import OrderedDict

from .._core._unconfigured import Unconfigured, shown_unconfigured

__all__ = ["Refusals", "Unconfigured"]

logger = logging.getLogger("payroll_async.events")

_SENDERS = 1024  # (sender, cause) pairs remembered; the oldest is forgotten first


class Refusals:
    """The refusals already told (by sender and cause), each told at WARNING once."""

    __slots__ = ("_told",)

    def __init__(self) -> None:
        self._told: OrderedDict[tuple[str, str], None] = OrderedDict()

    def tell(self, remote: str | None, cause: str, *, unverified: bool = False) -> None:
        """Log the refusal of a notification from ``remote`` for ``cause`` (one that
        ``unverified``: failed verification): WARNING the first time, saying where the next
        ones go; DEBUG after that. The record's ``refusal`` and ``sender`` say the same."""
        sender = remote or "an unknown address"
        key = (sender, cause)
        extra = {"refusal": cause, "sender": sender}
        what = " that failed verification" if unverified else ""
        message = f"rejected a notification from %s{what}: %s"
        if key in self._told:
            self._told.move_to_end(key)
            logger.debug(message, sender, cause, extra=extra)
            return
        self._told[key] = None
        if len(self._told) > _SENDERS:
            self._told.popitem(last=False)
        logger.warning(
            f"{message} (the same refusal from this sender again is logged at DEBUG)",
            sender,
            cause,
            extra=extra,
        )


shown_unconfigured(logger)
