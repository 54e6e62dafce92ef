"""What the emulator's handlers share: its data, settings, store and counters, in the app."""

from __future__ import annotations

import random
import time
from collections import Counter

import attrs
from aiohttp import web

from ._data import Dataset
from ._onboarding import OnboardingLinks
from ._store import SubscriptionStore

__all__ = ["STATE", "WEBHOOK_ROLE", "State", "TokenBucket"]

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
