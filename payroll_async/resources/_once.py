"""Create exactly once: a POST whose answer was lost is looked for before it is sent again.

A POST is not idempotent, so the transport never sends one again after its bytes may have
reached the service (``APIConnectionError.request_sent``). When the connection drops after
the request was sent, or its answer does not come within the timeout, the service may have
created the resource, may not have, or may still be creating it. Sending again blindly can
create a second one; giving up leaves the caller not knowing. ``send_once`` does what a
careful user would: it looks for what the lost attempt may have created (the caller's
``find``, e.g. the newest subscription with the same path and event types created since
the attempt began, on the service's own clock) and returns that. Only when there is none,
and the lost attempt can no longer land (``settle`` seconds after it was sent, a bound
taken from the request's timeout), does it look once more and then send again, within the
retry policy's attempts and backoff (tenacity's ``wait_random_exponential``, as the
transport's retries wait).
"""

from __future__ import annotations

import datetime
import email.utils
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import TypeVar

import aiohttp
import tenacity

from .._core._clock import Clock
from .._core._exceptions import APIConnectionError, PayrollError
from .._core._types import RetryPolicy

__all__ = ["CLOCK_SKEW", "SETTLE_TIMEOUTS", "send_once", "service_since", "settle_after"]

logger = logging.getLogger("payroll_async")

R = TypeVar("R")
F = TypeVar("F")

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


def settle_after(timeout: aiohttp.ClientTimeout) -> float:
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


class _NotCreated(Exception):
    """The answer was lost and nothing was created: send again."""

    def __init__(self, lost: APIConnectionError) -> None:
        super().__init__(str(lost))
        self.lost = lost


async def send_once(
    post: Callable[[], Awaitable[R]],
    find: Callable[[datetime.datetime], Awaitable[F | None]],
    *,
    policy: RetryPolicy | None,
    clock: Clock,
    settle: float,
    what: str,
) -> R | F:
    """``post()``'s result; or, after an answer was lost, what ``find(began)`` finds.

    ``find(began)`` returns the resource the lost attempt would have created, if any was
    created since ``began`` (this machine's wall clock as the first attempt began: ``find``
    moves it onto the service's clock with ``service_since``). Without a match, ``post()``
    is sent again, up to the policy's ``max_attempts`` in all, but only once ``settle``
    seconds have passed since the lost attempt was sent and a last look found nothing;
    without a policy it is not sent again, and the lost answer's error is raised. If
    ``find`` itself fails, that error is raised as the lost answer's (the outcome is
    unknown, so nothing is sent again).
    """
    began = datetime.datetime.now(datetime.timezone.utc)
    landed_by = clock.now()  # when the last lost attempt can no longer land

    async def look(lost: APIConnectionError) -> F | None:
        try:
            found = await find(began)
        except PayrollError as exc:
            logger.warning(
                "%s got no answer, and looking for what it may have created failed (%s): "
                "not sent again",
                what,
                type(exc).__name__,
            )
            raise lost from None
        if found is not None:
            logger.info("%s got no answer, but it had been done: returning what it created", what)
        return found

    backoff: tenacity.wait.wait_base = tenacity.wait_none()
    if policy is not None:
        backoff = tenacity.wait_random_exponential(
            multiplier=policy.backoff_initial, max=policy.backoff_max
        )

    def wait(state: tenacity.RetryCallState) -> float:
        # the backoff, and at least until the lost attempt can no longer land
        return max(float(backoff(state)), landed_by - clock.now())

    def before_sleep(state: tenacity.RetryCallState) -> None:
        pause = state.next_action.sleep if state.next_action else 0.0
        logger.warning(
            "%s got no answer and created nothing so far; looking once more and sending it "
            "again in %.2fs",
            what,
            pause,
        )

    retrying = tenacity.AsyncRetrying(
        retry=tenacity.retry_if_exception_type(_NotCreated),
        wait=wait,
        stop=tenacity.stop_after_attempt(1 if policy is None else policy.max_attempts),
        before_sleep=before_sleep,
        sleep=clock.sleep,
        reraise=True,
    )
    lost: APIConnectionError | None = None
    try:
        async for attempt in retrying:
            with attempt:
                if lost is not None:  # the last look, now that the lost attempt has settled
                    found = await look(lost)
                    if found is not None:
                        return found
                landed_by = clock.now() + settle
                try:
                    return await post()
                except APIConnectionError as exc:
                    if not exc.request_sent:
                        raise  # never reached the service: the transport's own retries applied
                    lost = exc
                found = await look(lost)
                if found is not None:
                    return found
                raise _NotCreated(lost)
    except _NotCreated as exc:
        raise exc.lost from None
    raise AssertionError("unreachable: tenacity either returns or raises")  # pragma: no cover
