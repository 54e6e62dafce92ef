"""The exceptions raised by payroll_async.

Every failure the SDK reports derives from [`PayrollError`][payroll_async.PayrollError]:

```text
PayrollError
├── InvalidArgumentError        bad input, before any request (a ValueError)
├── ClientClosedError           used after close() (a RuntimeError)
├── APIConnectionError          no response: no connection, or dropped
│   ├── APITimeoutError         no response in time
│   └── ProxyError              the proxy refused the tunnel, dropped it, or was unreachable
├── APIStatusError              any non-2xx answer
│   ├── BadRequestError         400
│   ├── AuthenticationError     401
│   ├── PermissionDeniedError   403
│   ├── NotFoundError           404
│   ├── RateLimitError          429 (.retry_after)
│   └── ServerError             5xx
├── ResponseDecodeError         a 2xx body not of the shape expected
├── PaginationError             a next link to another origin, or a loop
├── CoordinationError           a shared gate failed (on_error="raise")
└── ReplaceIncompleteError      replace() created the new, kept the old
```

The export, the mirror, the receiver and the inbox raise their own, all PayrollErrors:
``ExportError``, ``MirrorError`` (``MirrorURLError`` is an InvalidArgumentError too),
``WebhookVerificationError``, ``InboxError`` (``InboxURLError`` likewise).

No exception text ever contains the bearer token: request headers are never included,
and every URL is shown as ``_redact.shown_url`` shows it (the token's text and the values
of credential-like query parameters redacted).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..models import WebhookSubscription

__all__ = [
    "APIConnectionError",
    "APIStatusError",
    "APITimeoutError",
    "AuthenticationError",
    "BadRequestError",
    "ClientClosedError",
    "CoordinationError",
    "InvalidArgumentError",
    "NotFoundError",
    "PaginationError",
    "PayrollError",
    "PermissionDeniedError",
    "ProxyError",
    "RateLimitError",
    "ReplaceIncompleteError",
    "ResponseDecodeError",
    "ServerError",
]


class PayrollError(Exception):
    """Base class of every error raised by payroll_async."""


class InvalidArgumentError(PayrollError, ValueError):
    """An argument was rejected before any request was sent."""


class ClientClosedError(PayrollError, RuntimeError):
    """The client was used after ``close()``; create a new one instead."""


class APIConnectionError(PayrollError):
    """No response arrived: the connection failed, dropped, or timed out.

    ``request_sent`` is False only when the failure happened before any byte of the
    request could have reached the service (a refused connection, a DNS failure); only
    then is a POST safe to send again. ``retryable`` is False for failures that another
    attempt cannot mend, such as a TLS certificate the client does not trust.

    A transport of yours (or a ``MockTransport``'s handler) raises it with the message
    alone, ``APIConnectionError("backend down")``: the client fills in ``method`` and
    ``url`` from the request it was sending.
    """

    def __init__(
        self,
        message: str,
        *,
        method: str = "",
        url: str = "",
        request_sent: bool = True,
        retryable: bool = True,
    ) -> None:
        super().__init__(message)
        self.message: str = message
        """What went wrong, in a sentence."""
        self.method: str = method
        """The request's HTTP method (filled in by the client when a transport left it
        out)."""
        self.url: str = url
        """The request's URL, without credentials (filled in by the client when a
        transport left it out)."""
        self.request_sent: bool = request_sent
        """False only if no byte of the request can have reached the service."""
        self.retryable: bool = retryable
        """False for a failure another attempt cannot mend (an untrusted certificate)."""


class APITimeoutError(APIConnectionError, TimeoutError):
    """No response arrived within the client's timeout (also a ``TimeoutError``)."""


class ProxyError(APIConnectionError):
    """The proxy failed the request before it reached the service.

    It refused the tunnel (``status``: 407 when it wants other credentials, 403 when it
    forbids the service's host, a 5xx when it could not reach the service), closed the
    connection during the ``CONNECT``, or could not be reached (``status`` None). The
    request was not sent (``request_sent`` is False); a 4xx is not retried. ``proxy`` is
    the proxy's host and port, never its credentials.
    """

    def __init__(
        self,
        message: str,
        *,
        method: str = "",
        url: str = "",
        proxy: str,
        status: int | None = None,
        retryable: bool = True,
    ) -> None:
        super().__init__(message, method=method, url=url, request_sent=False, retryable=retryable)
        self.proxy: str = proxy
        """The proxy's ``host:port``."""
        self.status: int | None = status
        """The status the proxy answered the ``CONNECT`` with; None if it did not answer."""


class APIStatusError(PayrollError):
    """The service answered with a non-2xx status.

    ``message`` and ``errors`` come from the service's error body when it has that shape
    (``{"message": ..., "errors": [...]}``), otherwise from the status line.
    ``retry_after`` is the server's Retry-After in seconds, read on 429 and 503 (None if
    absent or unreadable). ``request_id`` is the service's request id or correlation
    header, when it sends one (also in the text), to quote to its support.
    """

    def __init__(
        self,
        message: str,
        *,
        status: int,
        errors: tuple[str, ...] = (),
        headers: Mapping[str, str] | None = None,
        method: str,
        url: str,
        retry_after: float | None = None,
        request_id: str | None = None,
    ) -> None:
        detail = f"{message} ({'; '.join(errors)})" if errors else message
        suffix = f" [request id {request_id}]" if request_id else ""
        # No method: no request gave this answer (NotFoundError.missing), so none is named.
        prefix = f"{method} {url} -> {status}: " if method else ""
        super().__init__(f"{prefix}{detail}{suffix}")
        self.status: int = status
        """The HTTP status code."""
        self.message: str = message
        """The error body's ``message``, or the status line's reason."""
        self.errors: tuple[str, ...] = errors
        """The error body's ``errors`` (empty when it has none)."""
        self.headers: Mapping[str, str] = headers if headers is not None else {}
        """The response's headers."""
        self.method: str = method
        """The request's HTTP method (filled in by the client when a transport left it
        out)."""
        self.url: str = url
        """The request's URL, without credentials (filled in by the client when a
        transport left it out)."""
        self.retry_after: float | None = retry_after
        """The Retry-After in seconds of a 429 or a 503 (None if absent or unreadable)."""
        self.request_id: str | None = request_id
        """The service's request id or correlation header, when it sends one."""


class BadRequestError(APIStatusError):
    """400: the service rejected the request's parameters."""


class AuthenticationError(APIStatusError):
    """401: the token is missing, invalid or expired (after one refresh, if possible)."""


class PermissionDeniedError(APIStatusError):
    """403: the token lacks a role, e.g. api-user-webhook-subscription."""


class NotFoundError(APIStatusError):
    """404: no such resource.

    Also raised when a lookup found no such resource (``webhooks.replace`` of an unknown
    id): then no request answered 404, so ``method`` and ``url`` are empty and the message
    names no request.
    """

    @classmethod
    def missing(cls, message: str) -> NotFoundError:
        """A resource that a lookup did not find (no request answered 404)."""
        return cls(message, status=404, method="", url="")


class RateLimitError(APIStatusError):
    """429: rate limit exceeded.

    ``retry_after`` is the server's Retry-After in seconds (None if absent or unreadable).
    """

    def __init__(self, message: str, *, status: int = 429, **kwargs: Any) -> None:
        super().__init__(message, status=status, **kwargs)


class ServerError(APIStatusError):
    """5xx: the service failed. A 503's ``retry_after`` is honoured by the retry policy."""


class ResponseDecodeError(PayrollError):
    """A 2xx response whose body is not the JSON shape expected."""

    def __init__(
        self,
        message: str,
        *,
        status: int,
        url: str,
        body_excerpt: str,
        method: str = "GET",
        request_id: str | None = None,
    ) -> None:
        where = f"{method} {url}, status {status}" + (
            f", request id {request_id}" if request_id else ""
        )
        super().__init__(f"{message} ({where}): {body_excerpt!r}")
        self.request_id: str | None = request_id
        """The service's request id or correlation header, when it sends one."""
        self.message: str = message
        """What was wrong with the body."""
        self.status: int = status
        """The response's (2xx) status code."""
        self.method: str = method
        """The request's HTTP method (filled in by the client when a transport left it
        out)."""
        self.url: str = url
        """The request's URL, without credentials (filled in by the client when a
        transport left it out)."""
        self.body_excerpt: str = body_excerpt
        """The start of the body, bounded, for the log."""


class PaginationError(PayrollError):
    """A Link rel=next to another origin than the client's base URL, or one seen before."""


class CoordinationError(PayrollError):
    """A shared gate could not be asked (Redis down or failing) and was told to raise.

    By default ``RedisGate`` goes on with the process's own gate instead; it raises this
    only with ``on_error="raise"``. Nothing was sent.
    """


class ReplaceIncompleteError(PayrollError):
    """``webhooks.replace`` created the new subscription but could not delete the old one.

    The new subscription is live (``new_subscription``); the old one
    (``old_subscription_id``) may still be receiving notifications too. The failure of the
    delete is this exception's ``__cause__``; retry with ``webhooks.delete``.
    """

    def __init__(
        self, message: str, *, new_subscription: WebhookSubscription, old_subscription_id: str
    ) -> None:
        super().__init__(message)
        self.new_subscription: WebhookSubscription = new_subscription
        """The new subscription: created and live."""
        self.old_subscription_id: str = old_subscription_id
        """The subscription that could not be deleted (it may still receive notifications)."""
