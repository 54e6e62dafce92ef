"""Onboarding links: fresh, single use, valid 30 minutes, and bounded in number."""

from __future__ import annotations

import datetime
import secrets
import time
from collections.abc import Callable

__all__ = ["LINK_VALIDITY", "LINKS_MAX", "OnboardingLinks"]

LINK_VALIDITY = datetime.timedelta(minutes=30)
LINKS_MAX = 100_000
"""Links remembered at once; the oldest go first."""


class OnboardingLinks:
    """The links made by invite sessions, in the order they were made."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._links: dict[str, tuple[float, str, bool]] = {}

    def __len__(self) -> int:
        return len(self._links)

    def make(self, invite: str) -> str:
        """A new link's token for ``invite``."""
        self._prune()
        token = secrets.token_urlsafe(24)
        self._links[token] = (self._clock() + LINK_VALIDITY.total_seconds(), invite, False)
        return token

    def open(self, token: str) -> tuple[int, str]:
        """Use a link: (200, invite), or (404 or 410, why not)."""
        entry = self._links.get(token)
        if entry is None:
            return 404, "Unknown onboarding link."
        expires, invite, used = entry
        if used:
            return 410, "This onboarding link was already used."
        if self._clock() > expires:
            return 410, "This onboarding link has expired."
        self._links[token] = (expires, invite, True)
        return 200, invite

    def _prune(self) -> None:
        """Forget links expired for longer than their validity (410 until then), and the
        oldest beyond LINKS_MAX."""
        horizon = self._clock() - LINK_VALIDITY.total_seconds()
        while self._links:
            token, (expires, _, _) = next(iter(self._links.items()))
            if expires >= horizon and len(self._links) < LINKS_MAX:
                break
            del self._links[token]
