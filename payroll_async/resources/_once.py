"""Create exactly once: a POST whose answer was lost is looked for before it is sent again.

A POST is not idempotent, so the transport never sends one again after its bytes may have
reached the service (``APIConnectionError.request_sent``). When the connection drops after
the request was sent, the service may or may not have created the resource. Sending again
blindly can create a second one; giving up leaves the caller not knowing. ``send_once``
does what a careful user would: it looks for what the lost attempt may have created (the
caller's ``find``, e.g. the newest subscription with the same path and event types created
since the attempt began) and returns that; only when there is none does it send again,
within the retry policy's attempts and backoff.
"""

from __future__ import annotations

import datetime
import logging
import random
from collections.abc import Awaitable, Callable
from typing import TypeVar

from .._core._exceptions import APIConnectionError, PayrollError
from .._http._retry import RetryPolicy

__all__ = ["CLOCK_SKEW", "send_once"]

logger = logging.getLogger("payroll_async")

R = TypeVar("R")
F = TypeVar("F")

CLOCK_SKEW = datetime.timedelta(seconds=60)
"""How far the service's clock may run behind ours. A match created up to this long before
the attempt began also counts: at worst it is an identical subscription made a minute ago,
which serves the caller just as well; a second subscription would deliver every event twice.
"""


async def send_once(
    post: Callable[[], Awaitable[R]],
    find: Callable[[datetime.datetime], Awaitable[F | None]],
    *,
    policy: RetryPolicy | None,
    sleep: Callable[[float], Awaitable[None]],
    what: str,
) -> R | F:
    """``post()``'s result; or, after an answer was lost, what ``find(since)`` finds.

    ``find(since)`` returns the resource the lost attempt would have created, if any was
    created at or after ``since``. Without a match ``post()`` is sent again, up to the
    policy's ``max_attempts`` in all; without a policy it is not sent again, and the lost
    answer's error is raised. If ``find`` itself fails, that error is raised as the lost
    answer's (the outcome is unknown, so nothing is sent again).
    """
    attempts = 1 if policy is None else policy.max_attempts
    since = datetime.datetime.now(datetime.timezone.utc) - CLOCK_SKEW
    attempt = 1
    while True:
        try:
            return await post()
        except APIConnectionError as exc:
            if not exc.request_sent:
                raise  # never reached the service: the transport's own retries applied
            lost = exc
        try:
            found = await find(since)
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
        if attempt >= attempts:
            raise lost
        wait = 0.0 if policy is None else _backoff(policy, attempt)
        logger.warning(
            "%s got no answer and created nothing; sending it again in %.2fs", what, wait
        )
        await sleep(wait)
        attempt += 1


def _backoff(policy: RetryPolicy, attempt: int) -> float:
    """Exponential backoff with full jitter, as the transport's retries wait."""
    ceiling = min(policy.backoff_max, policy.backoff_initial * 2 ** (attempt - 1))
    return random.uniform(0, ceiling)
