"""Webhook deliveries: POST a notification to each subscription, loopback only, retried."""

from __future__ import annotations

import asyncio
import datetime
import secrets
from collections.abc import Mapping
from typing import Any

import aiohttp
import attrs
from yarl import URL

from .._json import dumps
from ._http import is_loopback
from ._store import Subscription

__all__ = ["Delivery", "Deliverer", "notification"]


@attrs.define
class Delivery:
    """One notification sent (or not) to one subscription by ``Emulator.emit()``."""

    subscription_id: str
    url: str
    body: bytes
    attempts: int = 0
    delivered: bool = False
    outcome: str = ""


def notification(
    event_type: str,
    data: Mapping[str, Any] | None,
    event_id: str | None,
    occurred_at: datetime.datetime | None,
) -> bytes:
    """The body of a notification (ASSUMED: the interface document does not show it)."""
    when = occurred_at or datetime.datetime.now(datetime.timezone.utc)
    return dumps(
        {
            "eventId": event_id or f"evt_{secrets.token_hex(12)}",
            "eventType": event_type,
            "occurredAt": when.isoformat(timespec="microseconds").replace("+00:00", "Z"),
            "data": dict(data or {}),
        }
    )


class Deliverer:
    """Sends notifications and records every delivery in ``deliveries``."""

    def __init__(self, headers: Mapping[str, str]) -> None:
        self.headers = dict(headers)
        self.deliveries: list[Delivery] = []
        self._session: aiohttp.ClientSession | None = None

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    async def send(self, targets: list[Subscription], body: bytes, attempts: int) -> int:
        """Deliver ``body`` to every target; how many deliveries succeeded."""
        results = await asyncio.gather(*(self._deliver(sub, body, attempts) for sub in targets))
        return sum(results)

    async def _deliver(self, subscription: Subscription, body: bytes, attempts: int) -> bool:
        url = URL(subscription.path)
        record = Delivery(subscription.subscription_id, subscription.path, body)
        self.deliveries.append(record)
        if not is_loopback(url.host):
            record.outcome = "not delivered: the emulator delivers to loopback hosts only"
            return False
        if self._session is None:
            self._session = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=5))
        headers = {
            "Content-Type": "application/json",
            "User-Agent": "payroll-emulator",
            **self.headers,
        }
        for attempt in range(1, max(1, attempts) + 1):
            record.attempts = attempt
            try:
                async with self._session.post(
                    url, data=body, headers=headers, allow_redirects=False
                ) as response:
                    await response.read()
                    record.outcome = f"HTTP {response.status}"
                    if 300 <= response.status < 400:
                        # Never followed: a redirect could send the notification anywhere.
                        record.outcome += " (a redirect: not followed, not delivered)"
                        return False
                    if 200 <= response.status < 300:
                        record.delivered = True
                        return True
            except (aiohttp.ClientError, asyncio.TimeoutError) as exc:
                record.outcome = f"{type(exc).__name__}: {exc}"
            if attempt < attempts:
                await asyncio.sleep(0.05 * 2 ** (attempt - 1))
        return False
