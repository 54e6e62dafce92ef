"""The retry policy and the tenacity pieces it is composed of.

``RetryPolicy`` is plain data. ``build_retrying`` turns it into a ``tenacity.AsyncRetrying``
from tenacity's own parts: ``retry=`` (which failures are worth another attempt, by
method), ``wait=`` (the server's Retry-After when given, else exponential backoff with full
jitter), ``stop=`` (attempts) and ``before_sleep=`` (a log line per retry).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

import attrs
import tenacity
from tenacity.wait import wait_base

from . import _otel
from ._exceptions import (
    APIConnectionError,
    APIStatusError,
    InvalidArgumentError,
    RateLimitError,
    ServerError,
)
from ._types import NotGiven

__all__ = ["RetryPolicy", "build_retrying", "check_retry", "is_retryable"]

logger: logging.Logger = logging.getLogger("payroll_async")

# The methods safe to send again after a lost answer. PUT and PATCH (which only the generic
# calls send) are treated as POST is: the SDK cannot tell what a generic write did.
IDEMPOTENT_METHODS = frozenset({"GET", "DELETE"})
RETRYABLE_STATUSES = frozenset({500, 502, 503, 504})


@attrs.frozen
class RetryPolicy:
    """When and how long to wait before sending a failed request again.

    Retried: 429 for every method; 500, 502, 503, 504, connection errors and timeouts for
    GET and DELETE; a POST only on 429 and on connect failures where nothing was sent.

    ```pycon
    >>> RetryPolicy(max_attempts=6, backoff_max=30.0)   # more patient
    >>> RetryPolicy(max_attempts=1)                     # never retry
    ```

    Raises [`InvalidArgumentError`][payroll_async.InvalidArgumentError] for a value out of
    range.
    """

    max_attempts: int = 4
    """Attempts in all, the first included (at least 1)."""
    backoff_initial: float = 0.5
    """Upper bound of the first backoff wait, in seconds; it doubles on each attempt."""
    backoff_max: float = 8.0
    """Cap of any backoff wait, in seconds."""
    max_retry_after: float = 60.0
    """A Retry-After longer than this raises RateLimitError at once instead of sleeping."""

    def __attrs_post_init__(self) -> None:
        # Checked here rather than with attrs validators so that the fields read as plain
        # defaults in the reference and in help().
        value: object = self.max_attempts
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise InvalidArgumentError(f"max_attempts must be an integer >= 1, got {value!r}")
        for name in ("backoff_initial", "backoff_max", "max_retry_after"):
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or isinstance(value, bool) or not value >= 0:
                raise InvalidArgumentError(f"{name} must be a number >= 0, got {value!r}")


def check_retry(value: object) -> Any:
    """A RetryPolicy, None (a single attempt) or NOT_GIVEN (the default), as given."""
    if value is None or isinstance(value, (RetryPolicy, NotGiven)):
        return value
    raise InvalidArgumentError(f"retry must be a RetryPolicy or None, got {type(value).__name__}")


def is_retryable(exc: BaseException, policy: RetryPolicy) -> bool:
    """Whether a failure is worth another attempt under ``policy``."""
    if isinstance(exc, RateLimitError):
        return exc.retry_after is None or exc.retry_after <= policy.max_retry_after
    if isinstance(exc, ServerError):
        if exc.retry_after is not None and exc.retry_after > policy.max_retry_after:
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
        self._backoff = tenacity.wait_random_exponential(
            multiplier=policy.backoff_initial, max=policy.backoff_max
        )

    def __call__(self, retry_state: tenacity.RetryCallState) -> float:
        outcome = retry_state.outcome
        exc = outcome.exception() if outcome is not None else None
        if isinstance(exc, (RateLimitError, ServerError)) and exc.retry_after is not None:
            return exc.retry_after
        return float(self._backoff(retry_state))


def _log_retry(retry_state: tenacity.RetryCallState) -> None:
    outcome = retry_state.outcome
    exc = outcome.exception() if outcome is not None else None
    wait = retry_state.next_action.sleep if retry_state.next_action else 0.0
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
        retry_state.attempt_number,
        wait,
        extra={
            "method": method,
            "url": url,
            "status": status,
            "attempt": retry_state.attempt_number,
            "wait": wait,
        },
    )


def build_retrying(
    policy: RetryPolicy, sleep: Callable[[float], Awaitable[None]]
) -> tenacity.AsyncRetrying:
    """A tenacity AsyncRetrying for ``policy``; ``copy()`` it for each request."""
    return tenacity.AsyncRetrying(
        retry=tenacity.retry_if_exception(lambda exc: is_retryable(exc, policy)),
        wait=wait_retry_after_or_backoff(policy),
        stop=tenacity.stop_after_attempt(policy.max_attempts),
        before_sleep=_log_retry,
        sleep=sleep,
        reraise=True,
    )
