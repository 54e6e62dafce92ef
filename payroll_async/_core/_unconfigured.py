"""A package logger's WARNINGs and ERRORs on stderr while nothing else would show them.

The package's ``NullHandler`` keeps Python's last resort quiet, so a receiver's refusals
or an inbox worker's failed handlers would go unseen in a script or under uvicorn until
the application configured logging. ``Unconfigured`` stands in for the last resort on the
loggers that must not be silent, as long as no handler of the application's
(``logging.basicConfig``, a framework's log configuration, ``PAYROLL_LOG``, the command's
console) is on the logger's way to the root; then the application's logging alone shows
the record, never twice.
"""

from __future__ import annotations

import logging
import sys

from ._visible import VisibleFormatter

__all__ = ["Unconfigured", "shown_unconfigured"]


class Unconfigured(logging.Handler):
    """A logger's WARNINGs and ERRORs on stderr while no other handler would take them."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.setFormatter(VisibleFormatter("%(name)s %(levelname)s: %(message)s"))

    def emit(self, record: logging.LogRecord) -> None:
        current: logging.Logger | None = logging.getLogger(record.name)
        while current is not None:
            if any(
                h is not self and not isinstance(h, logging.NullHandler) for h in current.handlers
            ):
                return  # the application's logging shows it
            if not current.propagate:
                break
            current = current.parent
        stream = sys.stderr  # as it is now (a test's, a daemon's None)
        if stream is None:
            return
        try:
            stream.write(self.format(record) + "\n")
            stream.flush()
        except Exception:
            self.handleError(record)


def shown_unconfigured(logger: logging.Logger) -> None:
    """``logger``'s WARNINGs and ERRORs shown on stderr while logging is not configured."""
    if not any(isinstance(h, Unconfigured) for h in logger.handlers):
        logger.addHandler(Unconfigured())
