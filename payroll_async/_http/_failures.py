"""From a request that got no response to its typed error: connect failures, drops, timeouts.

The errors keep what aiohttp said, but none of aiohttp's request info: that holds the
request's headers, the token among them.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

import aiohttp
from yarl import URL

from .._core._exceptions import APIConnectionError, APITimeoutError, ProxyError
from .._core._redact import shown_url
from ._network import proxy_failure
from ._seam import Timeout

__all__ = ["TRUST_ADVICE", "completed", "connection_error", "display_url"]


def connection_error(
    exc: BaseException,
    method: str,
    url: str | URL,
    params: Mapping[str, Any] | None,
    timeout: Timeout,
    secret: str | None = None,
) -> APIConnectionError:
    """The typed error for a request that got no response, with what a retry needs to know.

    Its text keeps what aiohttp said, but none of aiohttp's request info: that holds the
    request's headers, the token among them. What aiohttp quotes (of a broken answer, of a
    URL) is shown as ``shown_url`` shows a URL: ``secret`` and credential values redacted.
    """
    error = _connection_error(exc, method, display_url(url, params, secret), timeout)
    shown = shown_url(error.message, secret)
    if shown != error.message:
        error.message = shown
        error.args = (shown,)
    return error


def completed(
    exc: APIConnectionError,
    method: str,
    url: str | URL,
    params: Mapping[str, Any] | None,
    secret: str | None,
) -> APIConnectionError:
    """A transport's own ``APIConnectionError``, with the request's method and URL where it
    left them out (``raise APIConnectionError("backend down")``)."""
    if not exc.method:
        exc.method = method
    if not exc.url:
        exc.url = display_url(url, params, secret)
    return exc


def _connection_error(
    exc: BaseException, method: str, where: str, timeout: Timeout
) -> APIConnectionError:
    # aiohttp's timeouts are asyncio's TimeoutErrors too (the builtin one from 3.11 on)
    if isinstance(exc, (asyncio.TimeoutError, TimeoutError)):
        return APITimeoutError(
            f"{method} {where} timed out {_describe_timeout(exc, timeout)}",
            method=method,
            url=where,
            request_sent=not _connect_timeout(exc),
        )
    tunnel = proxy_failure(exc)
    if tunnel is not None:
        # Nothing reached the service; a refusal (407, 403) stays a refusal.
        status = tunnel.status
        return ProxyError(
            f"{method} {where}: {tunnel}",
            method=method,
            url=where,
            proxy=tunnel.proxy,
            status=status,
            retryable=status is None or status >= 500,
        )
    if isinstance(exc, aiohttp.ClientSSLError):
        # A failed TLS handshake or certificate will fail the same way again.
        what = f"TLS failed ({_describe(exc)}){_way_out(exc)}"
        return _unsent(method, where, what, retryable=False)
    if isinstance(exc, aiohttp.ClientConnectorError):
        return _unsent(method, where, f"cannot connect ({exc.os_error})")
    return APIConnectionError(
        f"{method} {where}: {type(exc).__name__}: {_describe(exc)}", method=method, url=where
    )


TRUST_ADVICE = "pass ssl= with its PEM file (or an ssl.SSLContext)"
"""How a program trusts a private certificate authority (the command says its own)."""
# OpenSSL's verify codes of a certificate whose issuer is not trusted (X509_V_ERR_...):
# UNABLE_TO_GET_ISSUER_CERT, DEPTH_ZERO_SELF_SIGNED_CERT, SELF_SIGNED_CERT_IN_CHAIN,
# UNABLE_TO_GET_ISSUER_CERT_LOCALLY, UNABLE_TO_VERIFY_LEAF_SIGNATURE. Not a name that does
# not match, nor an expired certificate: trusting another authority mends neither.
_UNTRUSTED_ISSUER = frozenset({2, 18, 19, 20, 21})


def _way_out(exc: aiohttp.ClientSSLError) -> str:
    """For a certificate of an authority this client does not trust: how to trust it."""
    if not isinstance(exc, aiohttp.ClientConnectorCertificateError):
        return ""
    if getattr(exc.certificate_error, "verify_code", None) not in _UNTRUSTED_ISSUER:
        return ""
    return (
        "; its certificate authority is not one this client trusts: to trust a private "
        f"one, {TRUST_ADVICE}, or set SSL_CERT_FILE to that file"
    )


def _unsent(method: str, where: str, what: str, *, retryable: bool = True) -> APIConnectionError:
    """A request that never reached the service: ``what`` went wrong."""
    return APIConnectionError(
        f"{method} {where}: {what}",
        method=method,
        url=where,
        request_sent=False,
        retryable=retryable,
    )


# aiohttp 3.10 names its timeouts; 3.9 (the floor) raises ServerTimeoutError for both,
# told apart by its text ("Connection timeout to host ...", "Timeout on reading data ...").
_CONNECT_TIMEOUT = getattr(aiohttp, "ConnectionTimeoutError", None)
_READ_TIMEOUT = getattr(aiohttp, "SocketTimeoutError", None)


def _connect_timeout(exc: BaseException) -> bool:
    if _CONNECT_TIMEOUT is not None:
        return isinstance(exc, _CONNECT_TIMEOUT)
    return isinstance(exc, aiohttp.ServerTimeoutError) and str(exc).startswith("Connection")


def _read_timeout(exc: BaseException) -> bool:
    if _READ_TIMEOUT is not None:
        return isinstance(exc, _READ_TIMEOUT)
    return isinstance(exc, aiohttp.ServerTimeoutError) and str(exc).startswith("Timeout on")


def _describe(exc: BaseException) -> str:
    """What an aiohttp exception says, without its request info (headers, token)."""
    if isinstance(exc, aiohttp.ClientResponseError):
        text = exc.message if isinstance(exc.message, str) else ""
        return f"status {exc.status}, {text}" if exc.status else text or "malformed response"
    return str(exc)


def _describe_timeout(exc: BaseException, timeout: Timeout) -> str:
    """Which of the timeout's limits ran out, as far as aiohttp tells."""
    names: tuple[str, ...]
    if _connect_timeout(exc):
        names = ("sock_connect", "connect", "total")
    elif _read_timeout(exc):
        names = ("sock_read", "total")
    else:
        names = ("total", "sock_read", "connect", "sock_connect")
    for name in names:
        value = getattr(timeout, name)
        if value is not None:
            suffix = "" if name == "total" else f" ({name})"
            return f"after {value:g}s{suffix}"
    return "(no limit set)"


def display_url(url: str | URL, params: Mapping[str, Any] | None, secret: str | None) -> str:
    """The request's URL with ``params``, as ``shown_url`` shows it (``secret`` redacted)."""
    target = URL(url) if isinstance(url, str) else url
    return shown_url(target.update_query(params) if params else target, secret)
