"""Standard Webhooks signatures: sign and check a notification (ASSUMED scheme).

The interface document does not show how the service signs notifications; we assume the
Standard Webhooks scheme (https://www.standardwebhooks.com), which OpenAI, Svix, Anthropic
and others use:

- ``webhook-id``: the event's ``eventId``, the same on every redelivery;
- ``webhook-timestamp``: integer Unix seconds;
- ``webhook-signature``: space-separated ``v1,<base64 HMAC-SHA256>`` entries over
  ``{id}.{timestamp}.{raw body}``, keyed with the secret's bytes (``whsec_<base64>``), or
  ``v1a,<base64 Ed25519 signature>`` entries over the same content, checked with a
  ``whpk_<base64 32-byte public key>`` and made with a ``whsk_<base64 private key>``
  (the scheme's asymmetric version: a receiver holds nothing that can sign).

The receiver's other ways to authenticate live here too: the ``verify=`` hook type, its
bounded, fail-closed call (``run_verify``), and ``header_secret``/``compare_secret``.

HMAC-SHA256 itself comes from the standard library (the scheme's primitive), Ed25519 from
``cryptography`` (the ``webhooks`` extra, imported only when a ``whpk_`` or ``whsk_`` key
is used); this module only frames them as the scheme says. The third-party
``standardwebhooks`` package checks ``v1`` both ways in the tests, and a test written from
the scheme's own construction checks ``v1a``.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import hashlib
import hmac
import importlib
import inspect
import logging
import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from aiohttp import web

from .._core import _assumed
from .._core._clock import bounded
from .._core._exceptions import InvalidArgumentError, PayrollError
from .._core._secrets import hold, remember

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import (
        Ed25519PrivateKey,
        Ed25519PublicKey,
    )

__all__ = [
    "ID_HEADER",
    "SIGNATURE_HEADER",
    "TIMESTAMP_HEADER",
    "Signer",
    "Verify",
    "WebhookVerificationError",
    "compare_secret",
    "header",
    "header_secret",
    "run_verify",
    "secret_key",
    "sign",
]

logger = logging.getLogger("payroll_async.events")  # the receiver's logger, and its filter

Verify = Callable[[web.Request, bytes], bool | Awaitable[bool]]
"""``verify(request, raw_body) -> bool`` (or awaitable); False or an exception answers 401."""


ID_HEADER = _assumed.SIGNATURE_ID_HEADER
TIMESTAMP_HEADER = _assumed.SIGNATURE_TIMESTAMP_HEADER
SIGNATURE_HEADER = _assumed.SIGNATURE_HEADER
_PREFIX = _assumed.WEBHOOK_SECRET_PREFIX
PUBLIC_PREFIX = "whpk_"
"""A Standard Webhooks ``v1a`` (Ed25519) public key: what a receiver verifies with."""
PRIVATE_PREFIX = "whsk_"
"""A Standard Webhooks ``v1a`` (Ed25519) private key: what a sender signs with."""
_MAX_TIMESTAMP_DIGITS = 12  # Unix seconds until the year 33658: anything longer is not a time
_MAX_SIGNATURES = 16  # entries tried per request: rotation needs two or three, not thousands
_MAX_V1A = 4  # Ed25519 checks per request (50-120 µs each): a forgery cannot buy more
_ED25519_SIGNATURE = 64  # bytes
_ED25519_KEY = 32  # bytes of a public key, and of a private key's seed
_KEY_PREFIX = re.compile(r"([a-z]{2,8})_")  # a prefix short and plain enough to show


class WebhookVerificationError(PayrollError):
    """A notification failed verification: ``reason`` says why, never the secret.

    No signature matched, the timestamp is outside the tolerance, the ``webhook-id``
    differs from the body's ``eventId``, or a header is missing or malformed.
    """

    def __init__(self, reason: str) -> None:
        super().__init__(f"the notification failed verification: {reason}")
        self.reason: str = reason
        """Why, in a few words (the same words the receiver logs)."""


def header(headers: Mapping[str, str], name: str) -> str | None:
    """The value of header ``name`` (lower case) in any mapping, looked up case-insensitively.

    aiohttp's, Starlette's, Django's and Flask's headers find it themselves; a plain dict
    written ``{"Webhook-Id": ...}`` is searched. A value that is not text counts as absent.
    """
    value = headers.get(name)
    if value is None:
        for key, found in headers.items():
            if isinstance(key, str) and key.lower() == name:
                value = found
                break
    return value if isinstance(value, str) else None


def _ed25519() -> Any:
    """The ``cryptography`` Ed25519 module, or an error that says what to install."""
    try:
        ed25519 = importlib.import_module("cryptography.hazmat.primitives.asymmetric.ed25519")
    except ImportError:
        raise InvalidArgumentError(
            "whpk_ and whsk_ keys (Standard Webhooks v1a, Ed25519) need the 'cryptography' "
            "package: python3 -m pip install 'payroll-async[webhooks]'"
        ) from None
    return ed25519


def _prefix_of(secret: str) -> str | None:
    """The key's prefix (``whsec``, ``whpk``, ...), or None for bare base64."""
    head, sep, _ = secret.partition("_")
    if not sep:
        return None  # base64 has no underscore: a bare whsec_ secret
    return head


def _unknown_prefix(secret: str) -> InvalidArgumentError:
    shown = _KEY_PREFIX.match(secret)
    named = f"{shown.group(0)!r}" if shown else "another prefix"
    return InvalidArgumentError(
        f"unknown webhook key prefix {named}: a key is 'whsec_...' (v1, HMAC), 'whpk_...' "
        "(v1a, the Ed25519 public key a receiver verifies with) or 'whsk_...' (v1a, the "
        "private key a sender signs with); the key itself was not shown"
    )


def _decode_key(text: str, what: str) -> bytes:
    text = text.rstrip("=")
    try:
        return base64.b64decode(text + "=" * (-len(text) % 4), validate=True)
    except (binascii.Error, ValueError):
        raise InvalidArgumentError(
            f"a {what} is its prefix followed by base64 (the key was not shown)"
        ) from None


def public_key(key: str) -> Ed25519PublicKey:
    """The Ed25519 public key of a ``whpk_<base64 of 32 bytes>`` key."""
    raw = _decode_key(key.removeprefix(PUBLIC_PREFIX), "'whpk_' public key")
    if len(raw) != _ED25519_KEY:
        raise InvalidArgumentError(
            f"a 'whpk_' key is the base64 of a {_ED25519_KEY}-byte Ed25519 public key; "
            f"this one has {len(raw)} bytes"
        )
    ed25519 = _ed25519()
    try:
        loaded: Ed25519PublicKey = ed25519.Ed25519PublicKey.from_public_bytes(raw)
    except ValueError:
        raise InvalidArgumentError("the 'whpk_' key is not an Ed25519 public key") from None
    return loaded


def private_key(key: str) -> Ed25519PrivateKey:
    """The Ed25519 private key of a ``whsk_`` key: the base64 of its 32-byte seed, or of
    the seed and its public key (64 bytes, libsodium's layout, which Svix writes)."""
    raw = _decode_key(key.removeprefix(PRIVATE_PREFIX), "'whsk_' private key")
    if len(raw) not in (_ED25519_KEY, 2 * _ED25519_KEY):
        raise InvalidArgumentError(
            f"a 'whsk_' key is the base64 of a {_ED25519_KEY}-byte Ed25519 seed (or of the "
            f"seed and its public key, {2 * _ED25519_KEY} bytes); this one has {len(raw)} bytes"
        )
    ed25519 = _ed25519()
    loaded: Ed25519PrivateKey = ed25519.Ed25519PrivateKey.from_private_bytes(raw[:_ED25519_KEY])
    if len(raw) > _ED25519_KEY and _raw_public(loaded) != raw[_ED25519_KEY:]:
        raise InvalidArgumentError(
            "the 'whsk_' key's second half is not the public key of its first (the key was "
            "not shown)"
        )
    return loaded


def _raw_public(key: Ed25519PrivateKey) -> bytes:
    from cryptography.hazmat.primitives import serialization

    raw = serialization.Encoding.Raw
    return key.public_key().public_bytes(raw, serialization.PublicFormat.Raw)


def secret_key(secret: str) -> bytes:
    """The HMAC key of a ``whsec_<base64>`` secret (the prefix optional); never in the
    error (it may be a real one with a typo)."""
    if not isinstance(secret, str):
        raise InvalidArgumentError(
            f"a webhook secret is a 'whsec_...' string, not {type(secret).__name__}"
        )
    if _prefix_of(secret) not in (None, _PREFIX[:-1]):
        raise _unknown_prefix(secret)
    text = secret.removeprefix(_PREFIX).rstrip("=")
    try:
        key = base64.b64decode(text + "=" * (-len(text) % 4), validate=True)
    except (binascii.Error, ValueError):
        raise InvalidArgumentError(
            "a webhook secret is 'whsec_' followed by base64 (the secret was not shown)"
        ) from None
    if len(key) < (least := _assumed.WEBHOOK_SECRET_MIN_BYTES):  # a password, not a key
        raise InvalidArgumentError(
            f"a webhook secret is 'whsec_' followed by the base64 of at least {least} random "
            f"bytes, as key generators make them (Standard Webhooks: 24 to 64); this one has "
            f"{len(key)}: copy the subscription's signing secret (the secret was not shown)"
        )
    return key


def _spellings(secret: object) -> tuple[str, ...]:
    """A ``whsec_`` secret as a handler's error may quote it: whole, without its prefix,
    without its padding."""
    if not isinstance(secret, str):
        return ()
    bare = secret.removeprefix(_PREFIX)
    return (secret, bare, bare.rstrip("="))


def _mac(key: bytes, event_id: str, timestamp: str, body: bytes) -> bytes:
    message = b"%s.%s.%s" % (event_id.encode(), timestamp.encode(), body)
    return hmac.new(key, message, hashlib.sha256).digest()


def sign(secret: str, event_id: str, timestamp: int, body: bytes) -> dict[str, str]:
    """The Standard Webhooks headers of one notification, signed with ``secret``.

    A ``whsec_...`` secret signs ``v1`` (HMAC-SHA256); a ``whsk_...`` private key signs
    ``v1a`` (Ed25519), which a receiver checks with the matching ``whpk_...`` key. For
    tests of a receiver of your own, or a sender of your own:

    ```pycon
    >>> headers = sign(secret, "evt_1", int(time.time()), body)
    >>> await session.post(url, data=body, headers=headers)
    ```
    """
    if isinstance(timestamp, bool) or not isinstance(timestamp, int):
        raise InvalidArgumentError(f"timestamp must be integer Unix seconds, got {timestamp!r}")
    stamp = str(timestamp)
    if isinstance(secret, str) and secret.startswith(PRIVATE_PREFIX):
        signature = private_key(secret).sign(_content(event_id, stamp, body))
        entry = "v1a," + base64.b64encode(signature).decode()
    elif isinstance(secret, str) and secret.startswith(PUBLIC_PREFIX):
        raise InvalidArgumentError("a 'whpk_' key only verifies: sign with its 'whsk_' private key")
    else:
        entry = "v1," + base64.b64encode(_mac(secret_key(secret), event_id, stamp, body)).decode()
    return {ID_HEADER: event_id, TIMESTAMP_HEADER: stamp, SIGNATURE_HEADER: entry}


def _content(event_id: str, timestamp: str, body: bytes) -> bytes:
    """What ``v1a`` signs: ``{id}.{timestamp}.{body}``, as ``v1`` does."""
    return b"%s.%s.%s" % (event_id.encode(), timestamp.encode(), body)


class Signer:
    """Checks notifications against one key or several (during a key rotation).

    ``whsec_`` secrets check ``v1`` entries, ``whpk_`` public keys ``v1a`` entries; both
    kinds may be mixed in one list, so a move from one to the other has no gap.
    """

    __slots__ = ("__weakref__", "_keys", "_public", "tolerance")

    def __init__(
        self, secrets: str | Sequence[str], tolerance: float, *, held: bool = True
    ) -> None:
        """``held``: its ``whsec_`` secrets are kept out of what the SDK stores or shows
        while the Signer lives (a router's); else for the life of the process (those
        ``verify()`` and ``unwrap()`` are given at each call)."""
        listed = [secrets] if isinstance(secrets, str) else list(secrets)
        if not listed:
            raise InvalidArgumentError("secret= needs at least one 'whsec_...' or 'whpk_...' key")
        number = isinstance(tolerance, (int, float)) and not isinstance(tolerance, bool)
        if not number or not 0 < tolerance < float("inf"):
            raise InvalidArgumentError(f"tolerance must be finite seconds > 0, got {tolerance!r}")
        keys: list[bytes] = []
        public: list[Ed25519PublicKey] = []
        for secret in listed:
            if isinstance(secret, str) and secret.startswith(PUBLIC_PREFIX):
                public.append(public_key(secret))
            elif isinstance(secret, str) and secret.startswith(PRIVATE_PREFIX):
                raise InvalidArgumentError(
                    "a 'whsk_' key signs: give the receiver its 'whpk_' public key instead, "
                    "so that it holds nothing that can sign (the key was not shown)"
                )
            else:
                keys.append(secret_key(secret))
        self._keys = tuple(keys)
        self._public = tuple(public)
        self.tolerance = tolerance
        spelled = [
            form
            for secret in listed
            if not (isinstance(secret, str) and secret.startswith(PUBLIC_PREFIX))  # public
            for form in _spellings(secret)
        ]
        if held:
            hold(self, *spelled)
        else:
            remember(*spelled)

    def __repr__(self) -> str:
        return (
            f"<Signer {len(self._keys)} secret(s), {len(self._public)} public key(s), "
            f"tolerance={self.tolerance:g}s>"
        )

    def check(self, headers: Mapping[str, str], body: bytes, now: float) -> str | None:
        """None if the notification is signed by one of the keys; else why not."""
        event_id = header(headers, ID_HEADER)
        stamp = header(headers, TIMESTAMP_HEADER)
        signatures = header(headers, SIGNATURE_HEADER)
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
        given: dict[str, list[bytes]] = {"v1": [], "v1a": []}
        for entry in signatures.split(" ")[:_MAX_SIGNATURES]:
            version, sep, value = entry.partition(",")
            if not sep or version not in given:
                continue  # another version (v2) or not an entry: not ours to check
            try:
                given[version].append(base64.b64decode(value, validate=True))
            except (binascii.Error, ValueError):
                continue  # malformed base64 matches nothing
        # only the entries a key of this receiver can check, and a bounded number of v1a
        macs = given["v1"] if self._keys else []
        signed = [s for s in given["v1a"] if len(s) == _ED25519_SIGNATURE] if self._public else []
        signed = signed[:_MAX_V1A]
        if not macs and not signed:
            wanted = " or ".join(
                v for v, keys in (("v1", self._keys), ("v1a", self._public)) if keys
            )
            return f"no {wanted} signature"
        for key in self._keys if macs else ():  # no MAC computed for nothing to compare
            expected = _mac(key, event_id, stamp, body)
            # compare_digest for every entry: the time taken does not say which came close
            if any([hmac.compare_digest(expected, mac) for mac in macs]):  # noqa: C419
                return None
        if signed:
            content = _content(event_id, stamp, body)
            for public in self._public:
                for signature in signed:
                    if _ed25519_verifies(public, signature, content):
                        return None
        return "no signature matches"


def _ed25519_verifies(key: Ed25519PublicKey, signature: bytes, content: bytes) -> bool:
    from cryptography.exceptions import InvalidSignature

    try:
        key.verify(signature, content)
    except InvalidSignature:
        return False
    return True


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
            result = await bounded(result, timeout)
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
