"""The retry decision, composed of tenacity's pieces.

``RetryPolicy`` (plain data, in ``_core._types``) becomes, in ``Retries``, the one
decision the transport's loop asks after a failed attempt (``wait_before``), from
tenacity's own parts: ``retry`` (which failures are worth another attempt, by method),
``stop`` (attempts) and ``wait`` (the server's Retry-After when given, else ``backoff``:
exponential with full jitter); a retry is logged once, with its wait.
"""

from __future__ import annotations

import logging

import tenacity
from tenacity.wait import wait_base

from .._core._exceptions import (
    APIConnectionError,
    APIStatusError,
    PayrollError,
    RateLimitError,
    ServerError,
)
from .._core._types import RetryPolicy
from . import _otel

__all__ = ["Retries", "RetryPolicy", "backoff", "is_retryable"]

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


class wait_retry_after_or_backoff(wait_base):
    """The server's Retry-After when the failure carries one (429, 503), else backoff.

    The backoff is exponential with full jitter, capped at ``backoff_max``.
    """

    def __init__(self, policy: RetryPolicy) -> None:
        self._backoff = backoff(policy)

    def __call__(self, retry_state: tenacity.RetryCallState) -> float:
        outcome = retry_state.outcome
        exc = outcome.exception() if outcome is not None else None
        if isinstance(exc, (RateLimitError, ServerError)) and exc.retry_after is not None:
            return exc.retry_after
        return float(self._backoff(retry_state))


def backoff(policy: RetryPolicy) -> wait_base:
    """Exponential backoff with full jitter under ``policy`` (tenacity's), as every retry
    of this SDK waits: the transport's, and a create's look-up before sending again."""
    return tenacity.wait_random_exponential(
        multiplier=policy.backoff_initial, max=policy.backoff_max
    )


class Retries:
    """The one place that says whether a failed request is sent again, and when.

    Composed of tenacity's strategies: ``retry`` (which failures are worth another
    attempt, by method), ``stop`` (attempts in all) and ``wait`` (the server's Retry-After
    when given, else ``backoff``). Built once per policy; keeps no state of a request.
    """

    def __init__(self, policy: RetryPolicy) -> None:
        self.policy = policy
        self._retry = tenacity.retry_if_exception(lambda exc: is_retryable(exc, policy))
        self._stop = tenacity.stop_after_attempt(policy.max_attempts)
        self._wait = wait_retry_after_or_backoff(policy)

    def wait_before(self, number: int, failure: PayrollError) -> float | None:
        """Seconds to wait before attempt ``number`` after ``failure``; None: give up."""
        state = tenacity.RetryCallState(retry_object=None, fn=None, args=(), kwargs={})  # type: ignore[arg-type]
        state.attempt_number = number - 1
        state.set_exception((type(failure), failure, failure.__traceback__))
        if not self._retry(state) or self._stop(state):
            return None
        wait = float(self._wait(state))
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
