"""The inbox's records and errors: what its calls return, and a worker's claim."""

from __future__ import annotations

import datetime
from typing import TYPE_CHECKING, Protocol

import attrs

from .._core._exceptions import InvalidArgumentError, PayrollError
from .._core._secrets import scrub

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

__all__ = ["Claims", "InboxEntry", "InboxError", "InboxStats", "InboxURLError"]

_MAX_ERROR = 2000  # characters of a handler's error kept in last_error


class InboxError(PayrollError):
    """The inbox's database failed (cannot connect, a statement failed).

    The message never carries the database URL's password; the driver's exception is not
    chained.
    """


class InboxURLError(InboxError, InvalidArgumentError):
    """The inbox URL is not a database the inbox can use (bad input)."""


@attrs.frozen
class InboxStats:
    """What [`Inbox.stats()`][payroll_async.inbox.Inbox.stats] counts: what to watch."""

    pending: int
    """Events not handled yet (new, being handled, or waiting for a retry)."""
    retrying: int
    """Of ``pending``, those whose handlers failed at least once (or whose worker died);
    an event on its first attempt, in a worker's hands, is not counted."""
    done: int
    """Events handled (until purged)."""
    dead: int
    """Events whose handlers failed ``max_attempts`` times: they wait for ``retry``."""
    oldest_pending: datetime.datetime | None
    """When the oldest pending event was received (None: nothing pending): the lag."""


@attrs.frozen
class InboxEntry:
    """One row of the inbox, as ``inbox list`` shows it (without the body)."""

    event_id: str
    """The notification's ``eventId``: the table's key."""
    event_type: str | None
    """Its ``eventType``, as sent (None if the database cannot hold it: a NUL character in
    PostgreSQL; the body keeps it)."""
    status: str
    """``pending``, ``done`` or ``dead``."""
    attempts: int
    """Times a worker claimed it (a worker that died mid-handler counts)."""
    received_at: datetime.datetime
    """When a receiver stored it (UTC)."""
    next_attempt_at: datetime.datetime | None
    """Pending: when it is due (or when a worker's claim on it ends). None once settled."""
    handled_at: datetime.datetime | None
    """When it became ``done`` or ``dead``."""
    last_error: str | None
    """The last failure of its handlers (type and first line); None once done."""


@attrs.frozen
class _Claim:
    event_id: str
    body: bytes
    attempts: int
    """Which attempt this is (since the event was received or last retried)."""
    claims: int
    """The fence: this claim's writes apply only while the row still has this number,
    which only grows (every claim, burial and ``retry`` moves it on), so no later claim,
    burial or replay leaves it in place."""
    alone: bool = False
    """Its last worker died: it runs with no other event in this worker's hands."""


DIED = "the worker died while handling it: its lease ran out with no outcome written"
"""The last error of an attempt whose worker left no outcome (a crash, a kill, a hang)."""


def _count(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidArgumentError(f"{name} must be an integer >= 1, got {value!r}")
    return value


def _describe(exc: BaseException, secrets: tuple[str, ...]) -> str:
    """A handler's error as last_error: its type and first line, bounded, without a
    secret (``secrets``: the database's; and every one the SDK was given)."""
    message = scrub(f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__, secrets)
    first = message.splitlines()[0] if message else type(exc).__name__
    return first[:_MAX_ERROR]


class Claims(Protocol):
    """What a worker asks of its inbox's store (``_claims.ClaimStore`` is one): public
    members only, as procrastinate's worker asks its job manager."""

    @property
    def lease(self) -> float: ...

    @property
    def poll_interval(self) -> float: ...

    @property
    def secrets(self) -> tuple[str, ...]: ...

    @property
    def done(self) -> Callable[[_Claim], Awaitable[bool]]: ...

    async def claim(self, n: int, max_attempts: int, *, idle: bool) -> list[_Claim]: ...

    async def failed(self, claim: _Claim, error: str, *, final: bool) -> bool: ...

    async def ping(self) -> None: ...

    async def renew(self, claim: _Claim) -> bool: ...

    def outage(self, exc: InboxError) -> None: ...

    def reached(self) -> None: ...
