"""What the emulator's handlers share: its data, settings, store and counters, in the app."""

from __future__ import annotations

import random
import time
from collections import Counter
from collections.abc import Mapping

import attrs
from aiohttp import web

from .._core._assumed import EMULATOR_MAX_SUBSCRIPTIONS
from ._data import Dataset
from ._onboarding import OnboardingLinks
from ._store import SubscriptionStore

__all__ = ["STATE", "WEBHOOK_ROLE", "State", "TokenBucket", "check_options"]

WEBHOOK_ROLE = "api-user-webhook-subscription"
"""The role an API user needs for the webhook operations (403 without it)."""


class TokenBucket:
    """``rate`` requests per second, with a burst of at most one second's worth."""

    def __init__(self, rate: float) -> None:
        self.rate = rate
        self.capacity = max(1.0, rate)
        self.tokens = self.capacity
        self.updated = time.monotonic()

    def take(self) -> float | None:
        """None if a request may go; else the seconds until one may."""
        now = time.monotonic()
        self.tokens = min(self.capacity, self.tokens + (now - self.updated) * self.rate)
        self.updated = now
        if self.tokens >= 1:
            self.tokens -= 1
            return None
        return (1 - self.tokens) / self.rate


@attrs.define(eq=False)
class State:
    """The emulator's state; handlers find it at ``request.app[STATE]``.

    The settings are read on every request, so changing them on a running emulator
    (``emu.link_headers = False``) takes effect at once.
    """

    data: Dataset
    rng: random.Random
    roles: dict[str, frozenset[str]]
    subscriptions: SubscriptionStore
    links: OnboardingLinks = attrs.field(factory=OnboardingLinks)
    latency: float = 0.0
    error_rate: float = 0.0
    drop_rate: float = 0.0
    bucket: TokenBucket | None = None
    """The rate limit, when there is one."""
    link_headers: bool = True
    max_page_size: int | None = None
    stats: Counter[str] = attrs.field(factory=Counter)
    """Requests served and faults injected: requests, dropped, errors, rate_limited."""


STATE = web.AppKey("payroll_emulator_state", State)


def check_options(
    counts: Mapping[str, object],
    error_rate: float,
    drop_rate: float,
    latency: float,
    rate_limit: float | None,
    max_page_size: int | None,
) -> None:
    """Refuse an emulator's options that are out of range (ValueError)."""
    for name, value in counts.items():
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ValueError(f"{name} must be an integer >= 0, got {value!r}")
    seeded = counts["webhook_subscriptions"]
    if isinstance(seeded, int) and seeded > EMULATOR_MAX_SUBSCRIPTIONS:
        raise ValueError(
            f"webhook_subscriptions must be at most {EMULATOR_MAX_SUBSCRIPTIONS:,} "
            f"(the emulator's bound), got {seeded!r}"
        )
    for name, share in (("error_rate", error_rate), ("drop_rate", drop_rate)):
        if not 0 <= share <= 1:
            raise ValueError(f"{name} must be between 0 and 1, got {share!r}")
    if latency < 0:
        raise ValueError(f"latency must be >= 0 seconds, got {latency!r}")
    if rate_limit is not None and not rate_limit > 0:
        raise ValueError(f"rate_limit must be > 0 requests per second, got {rate_limit!r}")
    if max_page_size is not None and max_page_size < 1:
        raise ValueError(f"max_page_size must be >= 1, got {max_page_size!r}")
