"""Create exactly once: what a create does when its answer is lost, as a `Recovery`.

A POST is not idempotent, so the transport never sends one again after its bytes may have
reached the service (``APIConnectionError.request_sent``). When the connection drops after
the request was sent, or its answer does not come within the timeout, the service may have
created the resource, may not have, or may still be creating it. Sending again blindly can
create a second one; giving up leaves the caller not knowing. ``create_once`` gives the
transport's one retry loop (``_http/_requester.Requester.loop``) what a careful user would
do: look for what the lost attempt may have created (the caller's ``find``, e.g. the
newest subscription with the same path and event types created since the attempt began,
on the service's own clock) and return that; only when there is none, and the lost attempt
can no longer land (``settle_after`` its timeout), look once more and send again, within
the retry policy's attempts and backoff.
"""

from __future__ import annotations

import datetime
import email.utils
from collections.abc import Awaitable, Callable, Mapping

from .._http._retry import Recovery
from .._http._seam import Timeout

__all__ = ["CLOCK_SKEW", "SETTLE_TIMEOUTS", "create_once", "service_since", "settle_after"]

CLOCK_SKEW = datetime.timedelta(seconds=60)
"""Leeway on the service's clock (its ``Date`` against the clock its ``createdAt`` comes
from). A match created up to this long before the attempt began also counts: at worst it is
an identical subscription made a minute ago, which serves the caller just as well; a second
subscription would deliver every event twice.
"""

SETTLE_TIMEOUTS = 4
"""A lost attempt is taken to land, if ever, within this many of its timeouts after it was
sent: the service carries out a request whose answer we stopped waiting for."""
_SETTLE_WITHOUT_TIMEOUT = 60.0  # seconds, for a request sent without any timeout


def settle_after(timeout: Timeout) -> float:
    """Seconds after an attempt was sent until it can no longer land: from its timeout."""
    limit = timeout.total if timeout.total is not None else timeout.sock_read
    return _SETTLE_WITHOUT_TIMEOUT if limit is None else SETTLE_TIMEOUTS * limit


def service_since(
    began: datetime.datetime,
    headers: Mapping[str, str],
    newest: datetime.datetime | None,
    received: datetime.datetime,
) -> datetime.datetime:
    """When an attempt that began at ``began`` (this machine's clock) began on the service's,
    less ``CLOCK_SKEW``.

    The service's clock is read from the lookup's answer: its ``Date`` header, received at
    ``received``; without a readable one, the newest item the lookup listed (``newest``),
    which the service's clock had passed. Never this machine's clock alone: a service
    whose clock runs minutes behind would hide the lost attempt's work.
    """
    service_now = _date(headers.get("Date")) or newest
    offset = datetime.timedelta(0) if service_now is None else service_now - received
    return began + offset - CLOCK_SKEW


def _date(value: str | None) -> datetime.datetime | None:
    if value is None or not value.isascii():
        return None
    try:
        when = email.utils.parsedate_to_datetime(value.strip())
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    return when if when.tzinfo is not None else when.replace(tzinfo=datetime.timezone.utc)


def create_once(
    find: Callable[[datetime.datetime], Awaitable[object]],
    timeout: Timeout,
    what: str,
) -> Recovery:
    """The `Recovery` of a create: ``find(began)`` looks for what a lost attempt created;
    sent again only ``settle_after(timeout)`` after the lost attempt."""
    return Recovery(find=find, settle=settle_after(timeout), what=what)
