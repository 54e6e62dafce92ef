"""Webhook deliveries: POST a notification to each subscription, loopback only, retried.

Every delivery is signed as Standard Webhooks says (ASSUMED: the interface document does
not show the service's scheme): ``webhook-id`` is the event's id, ``webhook-timestamp`` the
Unix seconds of this attempt, and ``webhook-signature`` is ``v1,`` and the base64
HMAC-SHA256 of ``{id}.{timestamp}.{body}`` under the secret; with a ``whsk_`` private key
it is ``v1a,`` and the base64 Ed25519 signature of the same content (``cryptography``,
the ``webhooks`` extra). Written here again, not taken from ``payroll_async.events``, so
that the emulator cannot agree with the receiver by accident; the tests hold both to the
third-party ``standardwebhooks`` package (``v1``) and to a ``v1a`` check of their own.
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
from collections.abc import Callable, Mapping
from typing import Any

import aiohttp
import attrs
from yarl import URL

from .._core._assumed import EMULATOR_DELIVERIES_KEPT, WEBHOOK_SECRET_MIN_BYTES
from .._core._json import dumps
from ._http import is_loopback
from ._store import Subscription

__all__ = ["Delivery", "Deliverer", "new_secret", "notification", "public_key_of", "signer"]


def new_secret() -> str:
    """A fresh ``whsec_`` secret: 24 random bytes, as Svix and Standard Webhooks make them."""
    return "whsec_" + base64.b64encode(secrets.token_bytes(24)).decode()


def _base64(text: str, what: str) -> bytes:
    text = text.rstrip("=")
    try:
        key = base64.b64decode(text + "=" * (-len(text) % 4), validate=True)
    except (binascii.Error, ValueError):
        raise ValueError(f"webhook_secret must be {what} followed by base64") from None
    if not key:
        raise ValueError("webhook_secret may not be empty")
    return key


Sign = Callable[[bytes], str]
"""``sign(content) -> "v1,..."`` or ``"v1a,..."``: one signature entry."""


def signer(secret: str) -> Sign:
    """How deliveries are signed with ``secret``: ``whsec_<base64>`` (or its bare base64)
    signs ``v1`` (HMAC-SHA256), ``whsk_<base64 seed>`` signs ``v1a`` (Ed25519)."""
    if secret.startswith("whsk_"):
        private = _private(secret)

        def ed25519(content: bytes) -> str:
            return "v1a," + base64.b64encode(private.sign(content)).decode()

        return ed25519
    if secret.startswith("whpk_"):
        raise ValueError(
            "webhook_secret 'whpk_...' is a public key, which cannot sign: pass its 'whsk_...'"
        )
    key = _base64(secret.removeprefix("whsec_"), "'whsec_' (or 'whsk_')")
    if len(key) < WEBHOOK_SECRET_MIN_BYTES:
        raise ValueError(
            f"webhook_secret 'whsec_...' must hold at least {WEBHOOK_SECRET_MIN_BYTES} random "
            f"bytes (this one has {len(key)}): leave it out for a fresh one"
        )

    def hmac_sha256(content: bytes) -> str:
        return "v1," + base64.b64encode(hmac.new(key, content, hashlib.sha256).digest()).decode()

    return hmac_sha256


def _private(secret: str) -> Any:
    try:
        from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
    except ImportError:
        raise ValueError(
            "a 'whsk_' webhook_secret (Ed25519) needs the 'cryptography' package: "
            "python3 -m pip install 'payroll-async[webhooks]'"
        ) from None
    seed = _base64(secret.removeprefix("whsk_"), "'whsk_'")
    if len(seed) not in (32, 64):  # the seed, or libsodium's seed and public key
        raise ValueError("webhook_secret 'whsk_...' must hold a 32-byte Ed25519 seed")
    return Ed25519PrivateKey.from_private_bytes(seed[:32])


def public_key_of(secret: str) -> str | None:
    """The ``whpk_`` key a receiver checks a ``whsk_`` secret's deliveries with (else None)."""
    if not secret.startswith("whsk_"):
        return None
    from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

    raw = _private(secret).public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
    return "whpk_" + base64.b64encode(raw).decode()


def _signed(sign: Sign, event_id: str, body: bytes) -> dict[str, str]:
    stamp = str(int(time.time()))
    return {
        "webhook-id": event_id,
        "webhook-timestamp": stamp,
        "webhook-signature": sign(f"{event_id}.{stamp}.".encode() + body),
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

    def __init__(self, headers: Mapping[str, str], sign: Sign) -> None:
        self.headers = dict(headers)
        self.sign = sign
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
                **_signed(self.sign, event_id, body),
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
