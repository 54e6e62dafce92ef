"""Storage failures, typed as the app that owns the database says, without its secrets.

The mirror and the inbox each have their public errors (``MirrorError``,
``InboxError``...). The storage package raises the owner's own classes, named in an
`ErrorKinds`, so that no app wraps another's errors. A driver's exception is never chained:
its text, with the URL's credentials removed and control codes replaced, is the message.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import attrs
from sqlalchemy.exc import SQLAlchemyError

from .._core._exceptions import PayrollError
from .._core._redact import redact

__all__ = ["ErrorKinds", "database_errors"]


@attrs.frozen
class ErrorKinds:
    """The owner's error classes, and the name its users give the database URL."""

    failed: type[PayrollError]
    """A database failure: cannot connect, a statement failed."""
    bad_url: type[PayrollError]
    """The URL is not one the owner can use (bad input, before any connection)."""
    busy: type[PayrollError]
    """Another run holds the lock (``wait=False``)."""
    argument: str
    """How messages name the URL: ``into`` (the mirror), ``inbox``."""


@contextlib.contextmanager
def database_errors(kinds: ErrorKinds, secrets: tuple[str, ...], doing: str) -> Iterator[None]:
    """Database failures as ``kinds.failed``, their text without ``secrets``, not chained."""
    try:
        yield
    except PayrollError:
        raise
    except (SQLAlchemyError, OSError, ConnectionError) as exc:
        # asyncpg's own errors are OSErrors or come wrapped in SQLAlchemy's, whose adapter
        # of the driver's error is a bare "Error": the driver's own is named instead.
        detail = getattr(exc, "orig", None) or exc
        if type(detail).__module__.startswith("sqlalchemy.") and detail.__cause__ is not None:
            detail = detail.__cause__
        message = redact(f"{doing}: {type(detail).__name__}: {detail}", *secrets)
        first = message.splitlines()[0][:500] if message else doing
        # The server's text is outside input: no control codes reach a terminal.
        raise kinds.failed("".join(ch if ch.isprintable() else "?" for ch in first)) from None
