"""From a non-2xx response to its typed exception: the status table, error bodies, Retry-After."""

from __future__ import annotations

import datetime
import email.utils
import http
import math
import re
from collections.abc import Mapping

from .._core._exceptions import (
    APIStatusError,
    AuthenticationError,
    BadRequestError,
    NotFoundError,
    PermissionDeniedError,
    RateLimitError,
    ResponseDecodeError,
    ServerError,
)
from .._core._json import loads
from .._core._redact import REDACTED, redact, shown_url

__all__ = [
    "REQUEST_ID_HEADERS",
    "excerpt",
    "too_large",
    "parse_retry_after",
    "request_id",
    "status_error",
]

REQUEST_ID_HEADERS = ("X-Request-Id", "Request-Id", "X-Correlation-Id", "Correlation-Id")
"""Where services put the id of a request (the interface document names none: all are read)."""
_REQUEST_ID = re.compile(r"[!-~]{1,128}\Z")  # printable ASCII, bounded: it goes into messages


def request_id(headers: Mapping[str, str]) -> str | None:
    """The response's request id or correlation id, when it has a sane one."""
    for name in REQUEST_ID_HEADERS:
        value = headers.get(name)
        if value is not None and _REQUEST_ID.match(value):
            return value
    return None


STATUS_ERRORS: Mapping[int, type[APIStatusError]] = {
    400: BadRequestError,
    401: AuthenticationError,
    403: PermissionDeniedError,
    404: NotFoundError,
    429: RateLimitError,
}
"""The exception of each status the service documents; other 5xx are ServerError."""

EXCERPT_CHARS = 200
# ASCII digits only: \d would also take Arabic-Indic or fullwidth digits, which no HTTP
# server means.
_DELTA_SECONDS = re.compile(r"[ \t]*([0-9]+(?:\.[0-9]+)?)[ \t]*\Z", re.ASCII)


def excerpt(body: bytes, secret: str | None = None) -> str:
    """The start of a body, as text, for an exception's message; ``secret`` redacted in
    any spelling of a URL or a JSON encoder (``_redact``).

    The secret is taken out before the text is cut, so that no prefix of it survives at
    the cut: the body is read as far as ``EXCERPT_CHARS`` of redacted text can reach (each
    secret replaced is at most 12 characters a character, as a surrogate pair writes one).
    """
    spelled = (EXCERPT_CHARS // len(REDACTED) + 2) * 12 * len(secret) if secret else 0
    reach = EXCERPT_CHARS + spelled
    window = body[: reach * 4].decode("utf-8", "replace")
    cut = len(body) > reach * 4 or len(window) > reach
    text = redact(window[:reach], secret)
    return text[:EXCERPT_CHARS] + ("..." if cut or len(text) > EXCERPT_CHARS else "")


def too_large(
    method: str, status: int, url: object, limit: int, read: bytes, secret: str
) -> ResponseDecodeError:
    """The error of a 2xx body past ``max_response_size`` (``limit``), whichever transport
    read it: its URL shown as every error shows URLs, the excerpt of what was ``read``,
    ``secret`` (the token) redacted from both."""
    return ResponseDecodeError(
        f"the response body is larger than max_response_size ({limit:,} bytes); "
        "reading stopped. Raise it with PayrollClient(max_response_size=...) "
        "(None for no limit)",
        status=status,
        url=shown_url(url, secret),
        body_excerpt=excerpt(read, secret),
        method=method,
    )


def parse_retry_after(value: str | None, *, now: datetime.datetime | None = None) -> float | None:
    """Seconds to wait from a Retry-After header: delta-seconds or an HTTP-date.

    A date in the past means 0. Returns None for a missing or unreadable value, including
    one with other than ASCII digits. Decimal seconds ("1.5") are accepted too, as some
    servers send them.
    """
    if value is None or not value.isascii():
        return None
    match = _DELTA_SECONDS.match(value)
    if match is not None:
        seconds = float(match[1])
        return seconds if math.isfinite(seconds) else math.inf
    try:
        when = email.utils.parsedate_to_datetime(value.strip())
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    if when.tzinfo is None:  # "-0000" in an HTTP-date means UTC as well
        when = when.replace(tzinfo=datetime.timezone.utc)
    current = now or datetime.datetime.now(datetime.timezone.utc)
    return max(0.0, (when - current).total_seconds())


def status_error(
    *,
    method: str,
    url: str,
    status: int,
    reason: str | None,
    headers: Mapping[str, str],
    body: bytes,
    secret: str | None = None,
) -> APIStatusError:
    """The typed error for a non-2xx response, with the service's message and errors.

    ``secret`` (the token sent) is redacted from everything taken from the response, and
    from the URL as ``shown_url`` shows it.
    """
    message, errors = _error_details(
        status, reason and redact(reason, secret), headers, body, secret
    )
    if secret:
        message = redact(message, secret)
        errors = tuple(redact(error, secret) for error in errors)
    cls = STATUS_ERRORS.get(status) or (ServerError if status >= 500 else APIStatusError)
    return cls(
        message,
        status=status,
        errors=errors,
        headers=headers,
        method=method,
        url=shown_url(url, secret),
        # Retry-After means "wait this long" on a 429 and on a 503 (RFC 9110 10.2.3).
        retry_after=parse_retry_after(headers.get("Retry-After")) if status in (429, 503) else None,
        request_id=request_id(headers),
    )


def _error_details(
    status: int, reason: str | None, headers: Mapping[str, str], body: bytes, secret: str | None
) -> tuple[str, tuple[str, ...]]:
    """message and errors from the service's error body, or a sensible stand-in."""
    phrase = reason or _phrase(status)
    if not body.strip():
        return f"{phrase} (empty body)", ()
    try:
        data = loads(body)
    except ValueError:
        data = None
    if isinstance(data, dict) and isinstance(data.get("message"), str):
        raw_errors = data.get("errors")
        errors = tuple(str(item) for item in raw_errors) if isinstance(raw_errors, list) else ()
        return data["message"], errors
    content_type = headers.get("Content-Type", "")
    if "html" in content_type or body.lstrip()[:1] == b"<":
        return f"{phrase} (an HTML page instead of an error body)", ()
    return f"{phrase}: {excerpt(body, secret)}", ()


def _phrase(status: int) -> str:
    try:
        return http.HTTPStatus(status).phrase
    except ValueError:
        return f"HTTP {status}"
