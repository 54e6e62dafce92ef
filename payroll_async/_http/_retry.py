"""The retry decision.

``RetryPolicy`` (plain data, in ``_core._types``) becomes, in ``Retries``, the one
decision the requester's loop asks after a failed attempt (``wait_before``), in the three
parts tenacity names its strategies by: ``retry`` (which failures are worth another
attempt, by method: ``is_retryable``), ``stop`` (attempts in all) and ``wait`` (the
server's Retry-After when given, else ``backoff``: exponential with full jitter, as
tenacity's ``wait_random_exponential``); a retry is logged once, with its wait.

The loop is the requester's own (it counts a held or refreshed attempt apart, and a lost
create's look-up), so these are the few lines of the decision itself: tenacity's
strategies are asked only through its own loop's state, which no public API lets another
loop make.
"""

from __future__ import annotations

import datetime
import logging
import random
from collections.abc import Awaitable, Callable
from typing import Any

import attrs

from .._core._clock import doubled
from .._core._exceptions import (
    APIConnectionError,
    APIStatusError,
    PayrollError,
    RateLimitError,
    ServerError,
)
from .._core._types import RetryPolicy
from . import _otel

__all__ = [
    "Recovery",
    "Retries",
    "RetryPolicy",
    "backoff",
    "is_retryable",
    "pause_for",
    "wait_for",
]

logger: logging.Logger = logging.getLogger("payroll_async")

# The methods safe to send again after a lost answer. PUT and PATCH (which only the generic
# calls send) are treated as POST is: the SDK cannot tell what a generic write did.
IDEMPOTENT_METHODS = frozenset({"GET", "DELETE"})
RETRYABLE_STATUSES = frozenset({500, 502, 503, 504})


def is_retryable(exc: BaseException, policy: RetryPolicy) -> bool:
    """Whether a failure is worth another attempt under ``policy``."""
    if isinstance(exc, RateLimitError):
        return policy.honours(exc.retry_after)
    if isinstance(exc, ServerError):
        if not policy.honours(exc.retry_after):
            return False
        return exc.status in RETRYABLE_STATUSES and exc.method in IDEMPOTENT_METHODS
    if isinstance(exc, APIStatusError):
        return False
    if isinstance(exc, APIConnectionError):
        if not exc.retryable:
            return False
        return exc.method in IDEMPOTENT_METHODS or not exc.request_sent
    return False


def wait_for(failure: BaseException, attempts: int, policy: RetryPolicy) -> float:
    """Seconds to wait after ``attempts`` attempts, the last failed with ``failure``: the
    server's Retry-After when the failure carries one (429, 503), else ``backoff``."""
    if isinstance(failure, (RateLimitError, ServerError)) and failure.retry_after is not None:
        return failure.retry_after
    return backoff(attempts, policy)


def backoff(attempts: int, policy: RetryPolicy) -> float:
    """Exponential backoff with full jitter after ``attempts`` attempts under ``policy``: a
    random wait up to ``backoff_initial * 2 ** (attempts - 1)``, capped at ``backoff_max``
    (tenacity's ``wait_random_exponential``)."""
    return random.uniform(0.0, doubled(policy.backoff_initial, attempts, policy.backoff_max))


@attrs.frozen
class Recovery:
    """What a request that is not safe to send again does when its answer is lost.

    The transport's loop consults it after an attempt whose request may have reached the
    service but whose answer did not come (``APIConnectionError.request_sent``): ``find``
    looks for what that attempt may have done (given when the first attempt began, on
    this machine's wall clock) and returns it, or None. With nothing found, the request
    is sent again within the policy's attempts, but only ``settle`` seconds after the
    lost attempt was sent (when it can no longer land), and after one last look.
    """

    find: Callable[[datetime.datetime], Awaitable[Any]]
    settle: float
    """Seconds after an attempt was sent until it can no longer land."""
    what: str
    """The request as the log names it (``POST /v1/webhooks/subscriptions``)."""


class Retries:
    """The one place that says whether a failed request is sent again, and when.

    ``retry`` (which failures are worth another attempt, by method), ``stop`` (attempts
    in all) and ``wait`` (the server's Retry-After when given, else ``backoff``). Built
    once per policy; keeps no state of a request.
    """

    def __init__(self, policy: RetryPolicy) -> None:
        self.policy = policy

    def wait_before(
        self, number: int, failure: PayrollError, *, looked_up: bool = False
    ) -> float | None:
        """Seconds to wait before attempt ``number`` after ``failure``; None: give up.

        ``looked_up``: the failure is a lost answer that a `Recovery` looked for and found
        not done, so sending again is safe whatever the method (only the attempts and the
        backoff decide).
        """
        policy = self.policy
        if not (looked_up or is_retryable(failure, policy)) or number > policy.max_attempts:
            return None
        wait = wait_for(failure, number - 1, policy)
        if not looked_up:
            _log_retry(failure, number - 1, wait)
        return wait


def _log_retry(exc: PayrollError, number: int, wait: float) -> None:
    method = getattr(exc, "method", "?")
    url = getattr(exc, "url", "?")
    status = getattr(exc, "status", None)
    reason = f"status {status}" if status is not None else type(exc).__name__
    _otel.retried(str(method), wait, reason)
    logger.warning(
        "%s %s failed (%s) on attempt %d; retrying in %.2fs",
        method,
        url,
        reason,
        number,
        wait,
        extra={"method": method, "url": url, "status": status, "attempt": number, "wait": wait},
    )


def pause_for(error: PayrollError, policy: RetryPolicy) -> float | None:
    """How long a 429 asks the whole client to hold back under ``policy`` (None: no
    client-wide pause: not a 429, or a Retry-After the policy does not honour)."""
    if not isinstance(error, RateLimitError):
        return None
    _otel.rate_limited(error.method or "?", error.retry_after)
    retry_after = error.retry_after
    if retry_after is not None and policy.honours(retry_after):
        return retry_after
    return None
