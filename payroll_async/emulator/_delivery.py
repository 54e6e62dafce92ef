"""Webhook deliveries: POST a notification to each subscription, loopback only, retried.

Every delivery is signed as Standard Webhooks says (ASSUMED: the interface document does
not show the service's scheme): ``webhook-id`` is the event's id, ``webhook-timestamp`` the
Unix seconds of this attempt, and ``webhook-signature`` is ``v1,`` and the base64
HMAC-SHA256 of ``{id}.{timestamp}.{body}`` under the secret. Written here again, not taken
from ``payroll_async.events``, so that the emulator cannot agree with the receiver by
accident; the tests hold both to the third-party ``standardwebhooks`` package.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import datetime
import hashlib
import hmac
import secrets
import time
from collections import deque
from collections.abc import Mapping
from typing import Any

import aiohttp
import attrs
from yarl import URL

from .._core._assumed import EMULATOR_DELIVERIES_KEPT
from .._core._json import dumps
from ._http import is_loopback
from ._store import Subscription

__all__ = ["Delivery", "Deliverer", "new_secret", "notification", "secret_bytes"]


def new_secret() -> str:
    """A fresh ``whsec_`` secret: 24 random bytes, as Svix and Standard Webhooks make them."""
    return "whsec_" + base64.b64encode(secrets.token_bytes(24)).decode()


def secret_bytes(secret: str) -> bytes:
    """The key of a ``whsec_<base64>`` secret (or of its base64 without the prefix)."""
    text = secret.removeprefix("whsec_").rstrip("=")
    try:
        key = base64.b64decode(text + "=" * (-len(text) % 4), validate=True)
    except (binascii.Error, ValueError):
        raise ValueError("webhook_secret must be 'whsec_' followed by base64") from None
    if not key:
        raise ValueError("webhook_secret may not be empty")
    return key


def _signed(key: bytes, event_id: str, body: bytes) -> dict[str, str]:
    stamp = str(int(time.time()))
    mac = hmac.new(key, f"{event_id}.{stamp}.".encode() + body, hashlib.sha256).digest()
    return {
        "webhook-id": event_id,
        "webhook-timestamp": stamp,
        "webhook-signature": "v1," + base64.b64encode(mac).decode(),
    }


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
    event_id: str,
    occurred_at: datetime.datetime | None,
) -> bytes:
    """The body of a notification (ASSUMED: the interface document does not show it)."""
    when = occurred_at or datetime.datetime.now(datetime.timezone.utc)
    return dumps(
        {
            "eventId": event_id,
            "eventType": event_type,
            "occurredAt": when.isoformat(timespec="microseconds").replace("+00:00", "Z"),
            "data": dict(data or {}),
        }
    )


class Deliverer:
    """Sends notifications and records the latest deliveries in ``deliveries``."""

    def __init__(self, headers: Mapping[str, str], key: bytes) -> None:
        self.headers = dict(headers)
        self.key = key
        # Bounded: an emulator that emits for hours (`listen --emulator`) stays flat.
        self.deliveries: deque[Delivery] = deque(maxlen=EMULATOR_DELIVERIES_KEPT)
        self._session: aiohttp.ClientSession | None = None

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    async def send(
        self, targets: list[Subscription], event_id: str, body: bytes, attempts: int
    ) -> int:
        """Deliver ``body`` to every target; how many deliveries succeeded."""
        results = await asyncio.gather(
            *(self._deliver(sub, event_id, body, attempts) for sub in targets)
        )
        return sum(results)

    async def _deliver(
        self, subscription: Subscription, event_id: str, body: bytes, attempts: int
    ) -> bool:
        url = URL(subscription.path)
        record = Delivery(subscription.subscription_id, subscription.path, body)
        self.deliveries.append(record)
        if not is_loopback(url.host):
            record.outcome = "not delivered: the emulator delivers to loopback hosts only"
            return False
        if self._session is None:
            self._session = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=5))
        for attempt in range(1, max(1, attempts) + 1):
            record.attempts = attempt
            # each attempt is signed afresh: same webhook-id, a timestamp of this attempt
            headers = {
                "Content-Type": "application/json",
                "User-Agent": "payroll-emulator",
                **self.headers,
                **_signed(self.key, event_id, body),
            }
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
