"""Bearer tokens: a fixed string or a TokenProvider, refreshed once per 401 under a lock.

A provider is bounded like a request: ``get_token`` must answer within the attempt's
timeout (30 s when the client has none), or the request fails with APITimeoutError, and
it must return a clean, non-empty string, or the request fails with InvalidArgumentError.
Neither message ever includes what the provider returned.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import re
from typing import Protocol, runtime_checkable

import attrs

from .._core._exceptions import APITimeoutError, InvalidArgumentError
from .._core._secrets import hold

__all__ = ["Auth", "TokenProvider"]


@runtime_checkable
class TokenProvider(Protocol):
    """Supplies bearer tokens, e.g. from /v1/auth/token or a secrets manager.

    ``get_token()`` is called before each request (cache inside the provider);
    ``get_token(refresh=True)`` after the service answered 401, to obtain a new one.

    ```pycon
    >>> class FromVault:
    ...     async def get_token(self, *, refresh: bool = False) -> str:
    ...         return await vault.read("payroll-token", force=refresh)
    ```
    """

    async def get_token(self, *, refresh: bool = False) -> str:
        """The token to send; with ``refresh=True``, a new one (the last was refused)."""
        ...


class _StaticToken:
    __slots__ = ("_token",)

    def __init__(self, token: str) -> None:
        self._token = token

    async def get_token(self, *, refresh: bool = False) -> str:
        return self._token

    def __repr__(self) -> str:
        return "<static token>"


# A token goes into a header: no control characters (CR, LF, NUL, the C1 range with U+0085),
# no line or paragraph separator (U+2028, U+2029): nothing str.splitlines() breaks on, and
# no spaces around.
_BAD_TOKEN_RE = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]|\A\s|\s\Z")
PROVIDER_TIMEOUT = 30.0
"""Seconds a TokenProvider may take when the request itself has no timeout."""


def _check_token(token: object, source: str) -> str:
    if not isinstance(token, str) or not token or _BAD_TOKEN_RE.search(token):
        kind = "an empty string" if token == "" else type(token).__name__
        if isinstance(token, str) and token:
            kind = "a string with control characters or surrounding spaces"
        raise InvalidArgumentError(
            f"{source} must give a non-empty string without control characters, got {kind}"
        )
    return str.__str__(token)


class Auth:
    """Gives out the current token; refreshes it at most once for a burst of 401s.

    After a refresh, a provider whose plain ``get_token()`` still returns the token the
    service rejected gets the refreshed one substituted, until it returns something new.
    """

    __slots__ = (
        "__weakref__",
        "_fresh",
        "_given",
        "_lock",
        "_provider",
        "_stale",
        "_token",
        "can_refresh",
        "static",
    )

    def __init__(self, token: str | TokenProvider) -> None:
        if isinstance(token, str):
            token = _check_token(token, "token")
            hold(self, token)  # kept out of what the SDK stores or shows while it lives
            self._provider: TokenProvider = _StaticToken(token)
            self.can_refresh: bool = False
            self._token: str | None = token
            self.static: str | None = token  # a plain string token: no provider to ask
        elif isinstance(token, TokenProvider):
            self._provider = token
            self.can_refresh = True
            self._token = None
            self.static = None
        else:
            raise InvalidArgumentError(
                f"token must be a string or a TokenProvider, not {type(token).__name__}"
            )
        self._lock = asyncio.Lock()
        self._given: str | None = None  # the provider's latest token
        self._stale: str | None = None
        self._fresh: str | None = None

    async def token(self, timeout: float | None, method: str, url: str) -> str:
        """The token for the next request, asking the provider within ``timeout``."""
        if not self.can_refresh:
            assert self._token is not None
            return self._token
        token = await self._ask(False, timeout, method, url)
        if token == self._stale and self._fresh is not None:
            token = self._fresh  # the provider has not caught up with the refresh yet
        self._token = token
        return token

    async def refresh(self, rejected: str, timeout: float | None, method: str, url: str) -> str:
        """A new token after ``rejected`` got a 401; concurrent callers share one refresh."""
        async with self._lock:
            if self._token is not None and self._token != rejected:
                return self._token  # another request refreshed while this one waited
            token = await self._ask(True, timeout, method, url)
            self._stale, self._fresh, self._token = rejected, token, token
            return token

    async def _ask(self, refresh: bool, timeout: float | None, method: str, url: str) -> str:
        name = f"{type(self._provider).__name__}.get_token(refresh={refresh})"
        limit = PROVIDER_TIMEOUT if timeout is None else timeout
        try:
            token = await asyncio.wait_for(self._provider.get_token(refresh=refresh), limit)
        except asyncio.TimeoutError:
            token = None
            timed_out = True
        else:
            timed_out = False
        if timed_out:  # raised outside the except block: no provider frames in the chain
            raise APITimeoutError(
                f"the token provider {name} did not answer within {limit:g}s",
                method=method,
                url=url,
                request_sent=False,
            )
        token = _check_token(token, f"the token provider {name}")
        if token != self._given:
            # Its current and previous tokens are kept out of what the SDK stores or shows
            # (a request may still be out with the previous one); older ones are let go.
            hold(self, token, self._given or "")
            self._given = token
        return token

    def __repr__(self) -> str:
        return f"<Auth provider={type(self._provider).__name__}>"


@attrs.frozen
class Identity:
    """Who requests are sent as: the service's root URL and the client's credentials, which
    it can fingerprint but never show (an export's checkpoint records the fingerprint)."""

    base_url: str
    """The service's root URL, as the client sends to it."""
    _token: str | None = attrs.field(repr=False, alias="token")
    """The fixed token (None with a TokenProvider, whose tokens rotate): never shown."""

    @property
    def rotating(self) -> bool:
        """Whether the credentials are a TokenProvider's (nothing fixed to fingerprint)."""
        return self._token is None

    def fingerprint(self, salt: bytes) -> str | None:
        """HMAC-SHA256 of the fixed token under ``salt`` (hex); None for a TokenProvider."""
        if self._token is None:
            return None
        return hmac.new(salt, self._token.encode(), hashlib.sha256).hexdigest()
