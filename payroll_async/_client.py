"""PayrollClient: owns the transport and exposes the resources."""

from __future__ import annotations

import os
import warnings
from collections.abc import Mapping
from types import TracebackType

import aiohttp

from . import _validation as check
from ._auth import Auth, TokenProvider
from ._exceptions import ClientClosedError, InvalidArgumentError
from ._pagination import RequestOptions
from ._retry import RetryPolicy
from ._transport import Transport
from ._types import NOT_GIVEN, NotGiven
from .resources import EmployerIdentifiers, PayrollConnections, Webhooks
from .resources._base import Context

__all__ = ["PayrollClient"]


DEFAULT_MAX_RESPONSE_SIZE = 64 * 2**20


class PayrollClient:
    """The async client of the Payroll Onboarding and Webhook Service.

    >>> async with PayrollClient(base_url="https://api.example.com", token="...") as client:
    ...     async for conn in client.payroll_connections.list():
    ...         print(conn.id, conn.status)

    ``base_url`` falls back to ``PAYROLL_BASE_URL`` and ``token`` to ``PAYROLL_TOKEN``;
    ``token`` may be a :class:`TokenProvider`, asked again with ``refresh=True`` on a 401.
    ``timeout`` is per attempt, in seconds or an ``aiohttp.ClientTimeout``. ``concurrency``
    caps the requests this client has in flight at once. ``max_response_size`` bounds one
    response body in bytes after decompression (64 MiB by default, None for no limit); a
    larger body raises ResponseDecodeError. A ``session`` passed in is borrowed and never
    closed. Use the client from one event loop, and close it (``async with`` or
    ``await client.close()``).
    """

    webhooks: Webhooks
    """Webhook subscriptions: list, create, delete, replace, ensure."""
    employer_identifiers: EmployerIdentifiers
    """Employer identifiers, with ``.update_groups`` and ``.invites``."""
    payroll_connections: PayrollConnections
    """Payroll connections."""

    def __init__(
        self,
        base_url: str | None = None,
        token: str | TokenProvider | None = None,
        *,
        timeout: float | aiohttp.ClientTimeout | None = 30.0,
        retry: RetryPolicy | None = None,
        page_size: int = 100,
        concurrency: int = 8,
        session: aiohttp.ClientSession | None = None,
        headers: Mapping[str, str] | None = None,
        max_response_size: int | None = DEFAULT_MAX_RESPONSE_SIZE,
    ) -> None:
        if base_url is None:
            base_url = os.environ.get("PAYROLL_BASE_URL") or None
        if base_url is None:
            raise InvalidArgumentError("no base_url: pass base_url= or set PAYROLL_BASE_URL")
        if retry is not None and not isinstance(retry, RetryPolicy):
            raise InvalidArgumentError(f"retry must be a RetryPolicy, got {type(retry).__name__}")
        if session is not None and not isinstance(session, aiohttp.ClientSession):
            raise InvalidArgumentError(
                f"session must be an aiohttp.ClientSession, got {type(session).__name__}"
            )
        self._page_size = check.check_page_size(page_size)
        self._derived = False
        self._transport = Transport(
            base_url=check.check_base_url(base_url),
            auth=Auth(token),
            timeout=check.check_timeout(timeout),
            policy=retry or RetryPolicy(),
            concurrency=check.check_concurrency(concurrency),
            session=session,
            headers=check.check_extra_headers(headers),
            max_response_size=check.check_max_response_size(max_response_size),
        )
        self._bind(RequestOptions())

    def _bind(self, options: RequestOptions) -> None:
        context = Context(
            transport=self._transport,
            page_size=self._page_size,
            concurrency=self._transport.concurrency,
            options=options,
        )
        self._options = options
        self.webhooks = Webhooks(context)
        self.employer_identifiers = EmployerIdentifiers(context)
        self.payroll_connections = PayrollConnections(context)

    @classmethod
    def demo(cls, token: str | TokenProvider | None = None, **kwargs: object) -> PayrollClient:
        """A client of the service's demo environment, at ``PAYROLL_DEMO_BASE_URL``."""
        base_url = os.environ.get("PAYROLL_DEMO_BASE_URL") or None
        if base_url is None:
            raise InvalidArgumentError("PAYROLL_DEMO_BASE_URL is not set")
        return cls(base_url, token, **kwargs)  # type: ignore[arg-type]

    def with_options(
        self,
        *,
        retry: RetryPolicy | NotGiven = NOT_GIVEN,
        timeout: float | aiohttp.ClientTimeout | NotGiven | None = NOT_GIVEN,
    ) -> PayrollClient:
        """The same client (same session, same rate-limit pause) with other per-call options.

        >>> await client.with_options(retry=RetryPolicy(max_attempts=1)).webhooks.delete(sid)
        """
        if not isinstance(retry, (RetryPolicy, NotGiven)):
            raise InvalidArgumentError(f"retry must be a RetryPolicy, got {type(retry).__name__}")
        options = RequestOptions(
            policy=self._options.policy if isinstance(retry, NotGiven) else retry,
            timeout=self._options.timeout
            if isinstance(timeout, NotGiven)
            else check.check_timeout(timeout),
        )
        derived = object.__new__(PayrollClient)
        derived._transport = self._transport
        derived._page_size = self._page_size
        derived._derived = True
        derived._bind(options)
        return derived

    @property
    def base_url(self) -> str:
        return str(self._transport.base_url)

    @property
    def is_closed(self) -> bool:
        return self._transport.closed

    async def close(self) -> None:
        """Close the session this client created (a borrowed one is left open)."""
        await self._transport.close()

    async def __aenter__(self) -> PayrollClient:
        if self._transport.closed:
            raise ClientClosedError("this PayrollClient is closed; create a new one")
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    def __repr__(self) -> str:
        state = "closed" if self._transport.closed else "open"
        return f"<PayrollClient base_url={self.base_url!r} {state}>"

    def __del__(self) -> None:
        transport = getattr(self, "_transport", None)
        if (
            transport is not None
            and not getattr(self, "_derived", True)
            and transport.owns_session
            and transport.session_started
            and not transport.closed
        ):
            warnings.warn(
                f"unclosed {self!r}: use 'async with PayrollClient(...)' or 'await client.close()'",
                ResourceWarning,
                source=self,
                stacklevel=1,
            )
