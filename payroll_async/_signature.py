"""Standard Webhooks signatures: sign and check a notification (ASSUMED scheme).

The interface document does not show how the service signs notifications; we assume the
Standard Webhooks scheme (https://www.standardwebhooks.com), which OpenAI, Svix, Anthropic
and others use:

- ``webhook-id``: the event's ``eventId``, the same on every redelivery;
- ``webhook-timestamp``: integer Unix seconds;
- ``webhook-signature``: space-separated ``v1,<base64 HMAC-SHA256>`` entries over
  ``{id}.{timestamp}.{raw body}``, keyed with the secret's bytes (``whsec_<base64>``).

The receiver's other ways to authenticate live here too: the ``verify=`` hook type, its
bounded, fail-closed call (``run_verify``), and ``header_secret``/``compare_secret``.

HMAC-SHA256 itself comes from the standard library (the scheme's primitive); this module
only frames it as the scheme says. The third-party ``standardwebhooks`` package checks it
both ways in the tests.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import hashlib
import hmac
import inspect
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence

from aiohttp import web

from . import _assumed
from ._exceptions import InvalidArgumentError

__all__ = [
    "ID_HEADER",
    "SIGNATURE_HEADER",
    "TIMESTAMP_HEADER",
    "Signer",
    "Verify",
    "compare_secret",
    "header_secret",
    "run_verify",
    "secret_key",
    "sign",
    "unverified",
]

logger = logging.getLogger("payroll_async.events")  # the receiver's logger, and its filter

Verify = Callable[[web.Request, bytes], bool | Awaitable[bool]]
"""``verify(request, raw_body) -> bool`` (or awaitable); False or an exception answers 401."""


ID_HEADER = _assumed.SIGNATURE_ID_HEADER
TIMESTAMP_HEADER = _assumed.SIGNATURE_TIMESTAMP_HEADER
SIGNATURE_HEADER = _assumed.SIGNATURE_HEADER
_PREFIX = _assumed.WEBHOOK_SECRET_PREFIX
_MAX_TIMESTAMP_DIGITS = 12  # Unix seconds until the year 33658: anything longer is not a time
_MAX_SIGNATURES = 16  # entries tried per request: rotation needs two or three, not thousands


def secret_key(secret: str) -> bytes:
    """The HMAC key of a ``whsec_<base64>`` secret (the prefix is optional, as elsewhere).

    The secret itself never appears in the error: it may be a real one with a typo.
    """
    if not isinstance(secret, str):
        raise InvalidArgumentError(
            f"a webhook secret is a 'whsec_...' string, not {type(secret).__name__}"
        )
    text = secret.removeprefix(_PREFIX).rstrip("=")
    try:
        key = base64.b64decode(text + "=" * (-len(text) % 4), validate=True)
    except (binascii.Error, ValueError):
        raise InvalidArgumentError(
            "a webhook secret is 'whsec_' followed by base64 (the secret was not shown)"
        ) from None
    if not key:
        raise InvalidArgumentError("a webhook secret may not be empty")
    return key


def _mac(key: bytes, event_id: str, timestamp: str, body: bytes) -> bytes:
    message = b"%s.%s.%s" % (event_id.encode(), timestamp.encode(), body)
    return hmac.new(key, message, hashlib.sha256).digest()


def sign(secret: str, event_id: str, timestamp: int, body: bytes) -> dict[str, str]:
    """The Standard Webhooks headers of one notification, signed with ``secret``.

    For tests of a receiver of your own, or a sender of your own:

    ```pycon
    >>> headers = sign(secret, "evt_1", int(time.time()), body)
    >>> await session.post(url, data=body, headers=headers)
    ```
    """
    if isinstance(timestamp, bool) or not isinstance(timestamp, int):
        raise InvalidArgumentError(f"timestamp must be integer Unix seconds, got {timestamp!r}")
    stamp = str(timestamp)
    mac = _mac(secret_key(secret), event_id, stamp, body)
    return {
        ID_HEADER: event_id,
        TIMESTAMP_HEADER: stamp,
        SIGNATURE_HEADER: "v1," + base64.b64encode(mac).decode(),
    }


class Signer:
    """Checks notifications against one secret or several (during a key rotation)."""

    __slots__ = ("_keys", "tolerance")

    def __init__(self, secrets: str | Sequence[str], tolerance: float) -> None:
        listed = [secrets] if isinstance(secrets, str) else list(secrets)
        if not listed:
            raise InvalidArgumentError("secret= needs at least one 'whsec_...' secret")
        self._keys = tuple(secret_key(s) for s in listed)
        self.tolerance = tolerance

    def __repr__(self) -> str:
        return f"<Signer {len(self._keys)} secret(s), tolerance={self.tolerance:g}s>"

    def check(self, headers: Mapping[str, str], body: bytes, now: float) -> str | None:
        """None if the notification is signed by one of the secrets; else why not."""
        event_id = headers.get(ID_HEADER)
        stamp = headers.get(TIMESTAMP_HEADER)
        signatures = headers.get(SIGNATURE_HEADER)
        if not event_id or not stamp or not signatures:
            return "missing webhook-id, webhook-timestamp or webhook-signature"
        try:
            event_id.encode()  # aiohttp keeps a non-UTF-8 header byte as a lone surrogate
        except UnicodeEncodeError:
            return "webhook-id is not UTF-8"
        if not (stamp.isascii() and stamp.isdigit() and len(stamp) <= _MAX_TIMESTAMP_DIGITS):
            return "webhook-timestamp is not integer Unix seconds"
        if abs(now - int(stamp)) > self.tolerance:
            return f"webhook-timestamp is more than {self.tolerance:g}s from this machine's clock"
        given: list[bytes] = []
        for entry in signatures.split(" ")[:_MAX_SIGNATURES]:
            version, sep, value = entry.partition(",")
            if not sep or version != "v1":
                continue  # another version (v1a, v2) or not an entry: not ours to check
            try:
                given.append(base64.b64decode(value, validate=True))
            except (binascii.Error, ValueError):
                continue  # malformed base64 matches nothing
        if not given:
            return "no v1 signature"
        for key in self._keys:
            expected = _mac(key, event_id, stamp, body)
            # compare_digest for every entry: the time taken does not say which came close
            if any([hmac.compare_digest(expected, mac) for mac in given]):  # noqa: C419
                return None
        return "no signature matches"


def compare_secret(provided: str | bytes | None, expected: str | bytes) -> bool:
    """Constant-time comparison of a secret from a request with the expected one."""
    if provided is None:
        return False
    a = provided.encode() if isinstance(provided, str) else provided
    b = expected.encode() if isinstance(expected, str) else expected
    return hmac.compare_digest(a, b)


def header_secret(header: str, secret: str) -> Verify:
    """A ``verify`` hook for a shared secret sent in a header, compared in constant time.

    ```pycon
    >>> secret = os.environ["HOOK_SECRET"]
    >>> router = EventRouter(verify=header_secret("X-Webhook-Secret", secret))
    ```
    """

    def verify(request: web.Request, body: bytes) -> bool:
        return compare_secret(request.headers.get(header), secret)

    return verify


async def run_verify(
    verify: Verify, request: web.Request, body: bytes, timeout: float | None
) -> bool | None:
    """The verify hook's answer: True or False, or None if it timed out."""
    try:
        result: object = verify(request, body)
        if inspect.isawaitable(result):
            result = await asyncio.wait_for(result, timeout)
    except asyncio.TimeoutError:
        logger.error("the verify hook took longer than %gs: answered 503", timeout)
        return None
    except Exception:
        logger.exception("the verify hook raised")
        return False
    if type(result) is not bool:
        # fail closed: a truthy string such as "signature mismatch" is not an approval
        logger.error(
            "the verify hook returned %s, not a bool: the notification was refused",
            type(result).__name__,
        )
        return False
    return result


def unverified(request: web.Request, why: str) -> web.Response:
    """The 401 of a notification that failed verification, and its one log line."""
    logger.warning(
        "rejected a notification from %s that failed verification: %s", request.remote, why
    )
    return web.json_response({"error": "verification failed"}, status=401)
