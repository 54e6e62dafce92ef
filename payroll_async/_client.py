"""PayrollClient: owns the transport, holds the lifecycle state, and exposes the resources."""

from __future__ import annotations

import enum
import warnings
from collections.abc import Mapping
from types import TracebackType

import aiohttp

from ._core import _env
from ._core import _validation as check
from ._core._clock import SYSTEM_CLOCK, Clock
from ._core._exceptions import InvalidArgumentError
from ._core._types import NOT_GIVEN, NotGiven, RetryPolicy, given
from ._core._validation import check_retry
from ._http._auth import Auth, TokenProvider
from ._http._gate import Gate
from ._http._network import SSLLike, route
from ._http._options import (
    SINGLE_ATTEMPT,
    ClientOptions,
    FinalOptions,
    TimeoutLike,
    Unpack,
    check_timeout,
    parse_client,
)
from ._http._requester import DEFAULT_HEADERS, Requester
from ._http._seam import AsyncTransport
from .resources import EmployerIdentifiers, PayrollConnections, Webhooks
from .resources._base import BoundClient, Closing
from .resources._generic import Generic
from .resources._generic_calls import GenericCalls

__all__ = ["ClientState", "PayrollClient"]


DEFAULT_MAX_RESPONSE_SIZE = 64 * 2**20


class ClientState(enum.Enum):
    """Where a client is in its life: made, used (session open), or closed.

    ```pycon
    >>> client = PayrollClient(base_url, token)
    >>> client.state
    <ClientState.UNOPENED: 'unopened'>
    ```
    """

    UNOPENED = "unopened"
    """Made; no request sent and no session started yet."""
    OPEN = "open"
    """Entered with ``async with`` or used to send a request."""
    CLOSED = "closed"
    """Closed: every call raises ClientClosedError."""


_LIFE = (ClientState.UNOPENED, ClientState.OPEN, ClientState.CLOSED)


class PayrollClient(GenericCalls):
    """The async client of the Payroll Onboarding and Webhook Service.

    ```pycon
    >>> async with PayrollClient("https://api.example.com", token) as client:
    ...     async for conn in client.payroll_connections.list():
    ...         print(conn.id, conn.status)
    ```

    Use the client from one event loop, and close it (``async with`` or
    ``await client.close()``).

    An operation this SDK does not wrap is one call away, with the same token, retries,
    gate and typed errors: ``await client.get(path, cast_to=...)`` (and ``post``, ``put``,
    ``patch``, ``delete``, ``request``), and ``client.get_api_list(path, model=...)`` for
    a listing.

    Args:
        base_url: The service's root URL; ``PAYROLL_BASE_URL`` when left out. Plain
            ``http://`` is refused except for loopback hosts.
        token: The bearer token, or a [`TokenProvider`][payroll_async.TokenProvider]
            (asked again with ``refresh=True`` on a 401); ``PAYROLL_TOKEN`` when left out.
        timeout: Per attempt, in seconds or an ``aiohttp.ClientTimeout``; None: no limit.
        retry: A [`RetryPolicy`][payroll_async.RetryPolicy]; left out: the default
            policy; None: a single attempt.
        page_size: What listings ask for; None: the service's own page size.
        concurrency: The most requests this client has in flight at once.
        session: An ``aiohttp.ClientSession`` of yours: borrowed, never closed.
        headers: Extra headers sent with every request.
        max_response_size: The largest response body read, in bytes after
            decompression (None: no limit); a larger one raises
            [`ResponseDecodeError`][payroll_async.ResponseDecodeError].
        clock: The time source of retry waits and pauses (tests pass a virtual one).
        gate: What every request passes before it is sent and what a 429 is reported
            to: a [`LocalGate`][payroll_async.LocalGate] of the client's own when None;
            share one between clients, or a ``payroll_async.fleet.RedisGate`` between
            processes.
        proxy: The HTTP proxy of every request, ``"http://user:password@proxy:3128"``
            (its credentials go only to the proxy, and are never shown); left out: the
            environment's ``HTTPS_PROXY`` or ``ALL_PROXY``, unless ``NO_PROXY`` names the
            service's host or the host is a loopback one. Requests to the service go
            through the proxy's ``CONNECT`` tunnel: the proxy never sees the token.
        trust_env: False: ignore the proxy variables of the environment.
        ssl: How the service's certificate is checked: an ``ssl.SSLContext`` (a private
            certificate authority, a client certificate for mutual TLS), the path of a CA
            bundle (a PEM file, or a directory of hashed certificates) to trust instead of
            the system's, or True: the system's trust store (``SSL_CERT_FILE`` or
            ``SSL_CERT_DIR`` when set; on macOS and Windows through ``truststore`` where
            installed). False (no check at all) is refused except for loopback hosts.
        transport: What carries each request to the service and back (an
            [`AsyncTransport`][payroll_async.AsyncTransport]): aiohttp's when left out;
            ``payroll_async.testing.MockTransport`` in tests. Retries, the token, the
            gates, the response bound, typed errors and tracing work the same over any
            transport; ``session``, ``proxy``, ``trust_env`` and ``ssl`` are aiohttp's
            and cannot be given with it. The client closes it when it closes.

    With ``session=``, the session is yours: its own ``trust_env`` decides whether the
    environment's proxy is used, and its connector's TLS applies; an explicit ``proxy=``
    or ``ssl=`` is still passed with every request.
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
        timeout: TimeoutLike = 30.0,
        retry: RetryPolicy | NotGiven | None = NOT_GIVEN,
        page_size: int | None = 100,
        concurrency: int = 8,
        session: aiohttp.ClientSession | None = None,
        headers: Mapping[str, str] | None = None,
        max_response_size: int | None = DEFAULT_MAX_RESPONSE_SIZE,
        clock: Clock = SYSTEM_CLOCK,
        gate: Gate | None = None,
        proxy: str | None = None,
        trust_env: bool = True,
        ssl: SSLLike = True,
        transport: AsyncTransport | None = None,
    ) -> None:
        base_url = base_url if base_url is not None else _env.require(_env.BASE_URL, "base_url")
        token = token if token is not None else _env.require(_env.TOKEN, "token")
        policy = given(check_retry(retry), RetryPolicy())
        if session is not None and not isinstance(session, aiohttp.ClientSession):
            raise InvalidArgumentError(
                f"session must be an aiohttp.ClientSession, got {type(session).__name__}"
            )
        if not isinstance(clock, Clock):
            raise InvalidArgumentError(f"clock must be a Clock, got {type(clock).__name__}")
        if gate is not None and not isinstance(gate, Gate):
            raise InvalidArgumentError(
                f"gate must have async acquire() and pause(seconds), got {type(gate).__name__}"
            )
        if transport is not None:
            if not isinstance(transport, AsyncTransport):
                raise InvalidArgumentError(
                    "transport must have async handle_async_request(request) and aclose(), "
                    f"got {type(transport).__name__}"
                )
            aiohttps = {"session": session is not None, "proxy": proxy is not None}
            aiohttps.update(trust_env=trust_env is not True, ssl=ssl is not True)
            given_too = [name for name, given_ in aiohttps.items() if given_]
            if given_too:
                raise InvalidArgumentError(
                    f"{', '.join(given_too)} cannot be given with transport=: they configure "
                    "aiohttp's transport, which a transport of yours replaces"
                )
        root = check.check_base_url(base_url)
        sender = Requester(
            base_url=root,
            auth=Auth(token),
            concurrency=check.check_concurrency(concurrency),
            session=session,
            route=route(
                root, proxy=proxy, trust_env=trust_env, ssl=ssl, borrowed=session is not None
            ),
            clock=clock,
            gate=gate,
            wire=transport,
        )
        defaults = FinalOptions(
            timeout=check_timeout(timeout),
            retry=policy or SINGLE_ATTEMPT,
            page_size=None if page_size is None else check.check_page_size(page_size),
            concurrency=sender.concurrency,
            max_response_size=check.check_max_response_size(max_response_size),
            headers={**DEFAULT_HEADERS, **check.check_extra_headers(headers)},
        )
        self._setup(sender, defaults, parent=None)

    def _setup(
        self, transport: Requester, options: FinalOptions, parent: PayrollClient | None
    ) -> None:
        self._transport = transport
        self._options = options
        self._parent = parent  # a copy shares its parent's transport and never closes it
        self._state = ClientState.UNOPENED
        self._closing = Closing()
        binding = BoundClient(transport, options=options, closing=self._closing)
        self.webhooks = Webhooks(binding)
        self.employer_identifiers = EmployerIdentifiers(binding)
        self.payroll_connections = PayrollConnections(binding)
        self._generic = Generic(binding)

    @classmethod
    def demo(cls, token: str | TokenProvider | None = None, **kwargs: object) -> PayrollClient:
        """A client of the service's demo environment, at ``PAYROLL_DEMO_BASE_URL``."""
        base_url = _env.read(_env.DEMO_BASE_URL)
        if base_url is None:
            raise InvalidArgumentError(f"{_env.DEMO_BASE_URL} is not set")
        return cls(base_url, token, **kwargs)  # type: ignore[arg-type]

    def with_options(self, **options: Unpack[ClientOptions]) -> PayrollClient:
        """A copy with other defaults for its calls, on the same session and rate-limit pause.

        Takes every option of a call (``timeout``, ``retry``, ``extra_query``,
        ``extra_headers``) and ``page_size``, ``concurrency`` (the most requests one listing
        has in flight; the client's own ``concurrency`` still caps all of them together) and
        ``max_response_size``. They are laid over this client's once, here. Closing the copy
        closes only the copy; closing this client closes both.

        ```pycon
        >>> once = client.with_options(retry=RetryPolicy(max_attempts=1))
        >>> await once.webhooks.delete(sid)
        ```
        """
        final = parse_client(options).over(self._options)
        copy = object.__new__(PayrollClient)
        copy._setup(self._transport, final, parent=self)
        return copy

    @property
    def base_url(self) -> str:
        """The service's root URL, as given or read from ``PAYROLL_BASE_URL``."""
        return str(self._transport.base_url)

    @property
    def gate(self) -> Gate:
        """The gate every request of this client (and of its copies) passes."""
        return self._transport.gate

    @property
    def state(self) -> ClientState:
        """[`ClientState`][payroll_async.ClientState]: unopened, open or closed (a copy is closed
        with its parent)."""
        # One rule: the later of this client's own state and its transport's (the session
        # a copy shares with its parent), in the order unopened < open < closed.
        return max(self._state, self._transport_state(), key=_LIFE.index)

    @property
    def is_closed(self) -> bool:
        """Whether ``close()`` was called (on this client or, for a copy, its parent)."""
        return self._closed()

    def _transport_state(self) -> ClientState:
        if self._transport.is_closed:
            return ClientState.CLOSED
        return ClientState.OPEN if self._transport.started else ClientState.UNOPENED

    def _closed(self) -> bool:
        return self.state is ClientState.CLOSED

    async def close(self) -> None:
        """Close the client; the session it created too (a borrowed one is left open).

        A copy made by [`with_options()`][payroll_async.PayrollClient.with_options] closes only
        itself.
        """
        self._state = ClientState.CLOSED
        self._closing.closed = True
        if self._parent is None:
            await self._transport.close()

    async def __aenter__(self) -> PayrollClient:
        if self._closed():
            raise self._transport.closed_error()
        self._state = ClientState.OPEN
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    def __repr__(self) -> str:
        return f"<PayrollClient base_url={self.base_url!r} {self.state.value}>"

    def __del__(self) -> None:
        try:  # a client whose __init__ failed has neither
            transport, parent = self._transport, self._parent
        except AttributeError:
            return
        if (
            parent is None
            and transport.must_close
            and transport.started
            and not transport.is_closed
        ):
            warnings.warn(
                f"unclosed {self!r}: use 'async with PayrollClient(...)' or 'await client.close()'",
                ResourceWarning,
                source=self,
                stacklevel=1,
            )
