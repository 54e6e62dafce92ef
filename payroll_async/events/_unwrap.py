"""verify() and unwrap(): a notification checked and read from raw bytes and any header mapping."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any

from .._core._converter import from_dict
from .._core._exceptions import InvalidArgumentError
from .._core._json import loads
from .._core._notification import MAX_DEPTH
from ..models import WebhookEvent
from ._signature import (
    ID_HEADER,
    Signer,
    WebhookVerificationError,
    header,
)


def _too_deep(value: object, limit: int) -> bool:
    """Whether ``value`` nests lists and objects more than ``limit`` levels (no recursion)."""
    stack: list[tuple[object, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children if isinstance(child, (dict, list)))
    return False


def _parse(body: bytes) -> WebhookEvent:
    """A notification body as a WebhookEvent, or InvalidArgumentError saying why not."""
    try:
        document = loads(body)
        if _too_deep(document, MAX_DEPTH):
            raise InvalidArgumentError(f"the body is nested more than {MAX_DEPTH} levels")
        return from_dict(WebhookEvent, document)
    except InvalidArgumentError:
        raise
    except ValueError as exc:  # not JSON: the parser's words, which never quote the body
        raise InvalidArgumentError(f"the body is not JSON ({exc})") from None


def _raw(body: object) -> bytes:
    if isinstance(body, (bytes, bytearray, memoryview)):
        return bytes(body)
    raise InvalidArgumentError(
        f"body must be the raw bytes as received (FastAPI: await request.body(), Flask: "
        f"request.get_data(), Django: request.body), not {type(body).__name__}"
    )


def verify(
    body: bytes,
    headers: Mapping[str, str],
    *,
    secret: str | Sequence[str],
    tolerance: float = 300.0,
) -> None:
    """Check one notification's Standard Webhooks signature, and that its ``webhook-id``
    is the body's ``eventId``; raise if either fails.

    ``body`` is the raw bytes as received, ``headers`` any mapping (looked up
    case-insensitively: a dict, Starlette's, Django's or Flask's headers). ``secret`` is a
    ``whsec_...`` secret (``v1``), a ``whpk_...`` public key (``v1a``), or a list mixing
    them during a rotation. Raises
    [`WebhookVerificationError`][payroll_async.events.WebhookVerificationError] saying
    why (never the secret); the body is read only once the signature holds. A malformed
    key, or a signed body that is not a notification, raises ``InvalidArgumentError``.

    ```pycon
    >>> verify(await request.body(), request.headers, secret=os.environ["PAYROLL_WEBHOOK_SECRET"])
    ```
    """
    _verified(_raw(body), headers, secret, tolerance)


def unwrap(
    body: bytes,
    headers: Mapping[str, str],
    *,
    secret: str | Sequence[str],
    tolerance: float = 300.0,
) -> WebhookEvent:
    """One notification verified (as [`verify()`][payroll_async.events.verify]) and parsed.

    Raises ``WebhookVerificationError`` for a bad signature or a ``webhook-id`` that is
    not the body's ``eventId`` (answer 401), and ``InvalidArgumentError`` for a signed body
    that is not a notification (answer 400: delivering it again cannot help).

    ```pycon
    >>> event = unwrap(request.get_data(), request.headers, secret="whsec_...")  # Flask
    >>> event.event_type, event.event_id
    ```
    """
    return _verified(_raw(body), headers, secret, tolerance)


def _verified(
    body: bytes, headers: Mapping[str, str], secret: str | Sequence[str], tolerance: float
) -> WebhookEvent:
    """``verify()`` and ``unwrap()``: the signature first; only then is the body read, and
    its ``eventId`` must be the signed ``webhook-id``."""
    problem = Signer(secret, tolerance, held=False).check(headers, body, time.time())
    if problem is not None:
        raise WebhookVerificationError(problem)
    event = _parse(body)
    if header(headers, ID_HEADER) != event.event_id:
        raise WebhookVerificationError(_ID_MISMATCH)
    return event


_ID_MISMATCH = "webhook-id differs from the body's eventId"
