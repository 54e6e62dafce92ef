"""Bearer tokens: a fixed string or a TokenProvider, refreshed once per 401 under a lock."""

from __future__ import annotations

import asyncio
import os
from typing import Protocol, runtime_checkable

from ._exceptions import InvalidArgumentError

__all__ = ["Auth", "TokenProvider"]


@runtime_checkable
class TokenProvider(Protocol):
    """Supplies bearer tokens, e.g. from /v1/auth/token or a secrets manager.

    ``get_token()`` is called before each request (cache inside the provider);
    ``get_token(refresh=True)`` after the service answered 401, to obtain a new one.

    >>> class FromVault:
    ...     async def get_token(self, *, refresh: bool = False) -> str:
    ...         return await vault.read("payroll-token", force=refresh)
    """

    async def get_token(self, *, refresh: bool = False) -> str: ...


class _StaticToken:
    __slots__ = ("_token",)

    def __init__(self, token: str) -> None:
        self._token = token

    async def get_token(self, *, refresh: bool = False) -> str:
        return self._token

    def __repr__(self) -> str:
        return "<static token>"


class Auth:
    """Gives out the current token; refreshes it at most once for a burst of 401s."""

    __slots__ = ("_lock", "_provider", "_token", "can_refresh")

    def __init__(self, token: str | TokenProvider | None) -> None:
        if token is None:
            token = os.environ.get("PAYROLL_TOKEN") or None
        if token is None:
            raise InvalidArgumentError("no token: pass token= or set PAYROLL_TOKEN")
        if isinstance(token, str):
            if not token or any(ch in token for ch in "\r\n"):
                raise InvalidArgumentError("token must be a non-empty string without line breaks")
            self._provider: TokenProvider = _StaticToken(token)
            self.can_refresh = False
            self._token: str | None = token
        elif isinstance(token, TokenProvider):
            self._provider = token
            self.can_refresh = True
            self._token = None
        else:
            raise InvalidArgumentError(
                f"token must be a string or a TokenProvider, not {type(token).__name__}"
            )
        self._lock = asyncio.Lock()

    async def token(self) -> str:
        if not self.can_refresh:
            assert self._token is not None
            return self._token
        self._token = await self._provider.get_token()
        return self._token

    async def refresh(self, rejected: str) -> str:
        """A new token after ``rejected`` got a 401; concurrent callers share one refresh."""
        async with self._lock:
            if self._token is not None and self._token != rejected:
                return self._token  # another request refreshed while this one waited
            self._token = await self._provider.get_token(refresh=True)
            return self._token

    def __repr__(self) -> str:
        return f"<Auth provider={type(self._provider).__name__}>"
