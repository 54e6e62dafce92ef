"""Webhook subscriptions as typed records; they become the service's JSON only at the edge."""

from __future__ import annotations

import datetime
import random
from typing import Any

import attrs

from ..models import EVENT_TYPES
from ._data import EPOCH, uuid4_text

__all__ = ["Subscription", "SubscriptionStore", "uuid_from_rng"]


def uuid_from_rng(rng: random.Random) -> str:
    """A version-4 UUID drawn from ``rng`` (so that seeded runs repeat)."""
    return uuid4_text(f"{rng.getrandbits(128):032x}")


def _iso(when: datetime.datetime) -> str:
    return when.isoformat(timespec="microseconds").replace("+00:00", "Z")


@attrs.define
class Subscription:
    """One webhook subscription."""

    subscription_id: str
    event_types: list[str]
    path: str
    created_at: str
    active: bool = True

    def to_json(self) -> dict[str, Any]:
        """As the service sends it."""
        return {
            "webhookSubscriptionId": self.subscription_id,
            "webhookEventTypes": list(self.event_types),
            "path": self.path,
            "createdAt": self.created_at,
            "active": self.active,
        }


class SubscriptionStore:
    """The subscriptions in creation order (which is also ``createdAt`` order)."""

    def __init__(self, rng: random.Random, seeded: int) -> None:
        self._rng = rng
        self._items: dict[str, Subscription] = {}
        kinds = sorted(EVENT_TYPES)
        for k in range(seeded):
            sid = uuid_from_rng(rng)
            created = EPOCH + datetime.timedelta(days=k)
            self._items[sid] = Subscription(
                subscription_id=sid,
                event_types=[kinds[k % len(kinds)]],
                path=f"https://hooks.example.com/payroll/{k}",
                created_at=created.strftime("%Y-%m-%dT%H:%M:%SZ"),
                active=k % 3 != 2,
            )

    def __len__(self) -> int:
        return len(self._items)

    def all(self) -> list[Subscription]:
        return list(self._items.values())

    def create(self, event_types: list[str], path: str) -> Subscription:
        sid = uuid_from_rng(self._rng)
        subscription = Subscription(
            subscription_id=sid,
            event_types=list(dict.fromkeys(event_types)),
            path=path,
            created_at=_iso(datetime.datetime.now(datetime.timezone.utc)),
        )
        self._items[sid] = subscription
        return subscription

    def churn(
        self, inserted: int, updated: int, deleted: int
    ) -> tuple[list[str], list[str], list[str]]:
        """Create, switch (``active``) and delete that many subscriptions; their ids."""
        if updated + deleted > len(self._items):
            raise ValueError(
                f"cannot update {updated} and delete {deleted} of {len(self._items)} "
                "subscriptions: too few"
            )
        picked = self._rng.sample(list(self._items), updated + deleted)
        for sid in picked[:updated]:
            self._items[sid].active = not self._items[sid].active
        for sid in picked[updated:]:
            del self._items[sid]
        kinds = sorted(EVENT_TYPES)
        new = [
            self.create([kinds[k % len(kinds)]], f"https://hooks.example.com/churn/{k}")
            for k in range(inserted)
        ]
        return [s.subscription_id for s in new], picked[:updated], picked[updated:]

    def delete(self, subscription_id: str) -> bool:
        """Whether there was one to delete."""
        return self._items.pop(subscription_id, None) is not None

    def set_active(self, subscription_id: str, active: bool) -> None:
        self._items[subscription_id].active = active

    def listening(self, event_type: str) -> list[Subscription]:
        """The active subscriptions that list ``event_type``."""
        return [s for s in self._items.values() if s.active and event_type in s.event_types]
