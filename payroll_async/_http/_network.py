"""Where the client's connections go and how they are secured: the proxy and TLS.

Resolved once, as the client is made, so that bad input is an ``InvalidArgumentError``
before any request: the proxy (``proxy=``, else the environment's ``HTTPS_PROXY`` or
``ALL_PROXY`` unless ``NO_PROXY`` names the host) and the TLS context (``ssl=``: a
context, a CA bundle, or the trust store of the system). The transport hands the proxy
to aiohttp with each request (aiohttp 3.9 takes it per request only) and the TLS context
to its connector. ``tunnel_failure`` tells a proxy's failure from the service's, while
the connector still knows which it was.
"""

from __future__ import annotations

import base64
import functools
import http
import ipaddress
import os
import ssl
import sys
import urllib.request
from collections.abc import Mapping
from typing import Any, TypeAlias

import aiohttp
import attrs
from yarl import URL

from .._core import _env
from .._core._exceptions import InvalidArgumentError
from .._core._net import check_ca_bundle, is_loopback
from .._core._visible import redact_url

__all__ = [
    "NO_ENVIRONMENT",
    "SOCKS_ADVICE",
    "Route",
    "SSLLike",
    "TunnelFailed",
    "proxy_failure",
    "route",
    "tunnel_failure",
]

SSLLike: TypeAlias = "ssl.SSLContext | str | os.PathLike[str] | bool"
"""What ``ssl=`` takes: a context, a CA bundle's path, True (the default trust) or False."""

_PROXY_SCHEMES = ("http", "https")
SOCKS_ADVICE = "aiohttp speaks HTTP proxies; for SOCKS, pass session= with a SOCKS connector"
"""What a SOCKS proxy's refusal advises (the command, which cannot pass session=, says its
own: ``cli/_errors.py``)."""
NO_ENVIRONMENT = "pass trust_env=False"
"""How a program stops reading the environment's proxy (the command says its own)."""
_NOTHING: Mapping[str, Any] = {}
_AIOHTTP = tuple(int(p) for p in aiohttp.__version__.split(".")[:2] if p.isdigit())
_OWN_STORE_PLATFORMS = ("darwin", "win32")  # a trust store of the system's, not OpenSSL's


@attrs.frozen(repr=False)
class Route:
    """How the client's requests reach the service: through which proxy, with which TLS."""

    proxy: URL | None
    """The proxy, without its credentials; None: straight to the service."""
    source: str | None
    """Where the proxy came from (``proxy=``, ``HTTPS_PROXY``, ...), for messages."""
    ssl: ssl.SSLContext | bool
    """The TLS of the session the client makes (True: aiohttp's default context)."""
    request: Mapping[str, Any]
    """What each request adds to aiohttp's keywords (the proxy, its credentials as a
    ``Proxy-Authorization`` header, and a borrowed session's ``ssl=``)."""

    @property
    def shown(self) -> str | None:
        """The proxy as messages show it: ``host:port``."""
        return None if self.proxy is None else f"{self.proxy.host}:{self.proxy.port}"

    def __repr__(self) -> str:  # the proxy's credentials live in ``request``: never shown
        return f"<Route proxy={self.shown!r} source={self.source!r}>"


def route(
    base_url: URL, *, proxy: str | None, trust_env: bool, ssl: SSLLike, borrowed: bool
) -> Route:
    """The route to ``base_url``; ``borrowed``: the session is the user's (see the client).

    An explicit ``proxy`` carries every request (as httpx's ``proxy=`` does); else, with
    ``trust_env``, the environment's, unless ``NO_PROXY`` names the host or the host is a
    loopback one (unless ``NO_PROXY`` is set empty on purpose). A plain ``http://`` service
    never goes through a proxy: the proxy would read its requests, the token among them.
    """
    if not isinstance(trust_env, bool):
        raise InvalidArgumentError(f"trust_env must be True or False, got {trust_env!r}")
    context = _tls(ssl, base_url, borrowed=borrowed)
    request: dict[str, Any] = {}
    if borrowed and context is not True:
        request["ssl"] = context
    if proxy is not None:
        if base_url.scheme != "https":
            raise InvalidArgumentError(
                "proxy= is for an https:// service: a proxy would read a plain http:// "
                "request, the token among them"
            )
        found: tuple[str, str] | None = (proxy, "proxy=")
    elif trust_env and not borrowed and base_url.scheme == "https":
        found = _from_environment(base_url)
    else:
        found = None
    if found is None:
        return Route(proxy=None, source=None, ssl=context, request=request or _NOTHING)
    value, source = found
    try:
        url, credentials = _check_proxy(value, source)
    except InvalidArgumentError as exc:
        if source == "proxy=":
            raise
        raise InvalidArgumentError(
            f"{exc}; to reach the service without it, add its host to NO_PROXY or {NO_ENVIRONMENT}"
        ) from None
    request["proxy"] = url
    if credentials is not None:
        # A header rather than aiohttp.BasicAuth, which aiohttp 3.14 deprecates.
        request["proxy_headers"] = {"Proxy-Authorization": credentials}
    return Route(proxy=url, source=source, ssl=context, request=request)


def _from_environment(base_url: URL) -> tuple[str, str] | None:
    """The environment's proxy for ``base_url`` and the variable it came from, or None."""
    found, emptied = _env.proxies()
    host = base_url.host or ""
    if is_loopback(host) and not emptied:
        return None
    if _bypassed(host, base_url.port, found.get("no")):
        return None
    for scheme in ("https", "all"):
        value = found.get(scheme)
        if value:
            return value, f"{scheme.upper()}_PROXY"
    return None


def _bypassed(host: str, port: int | None, no_proxy: str | None) -> bool:
    """Whether ``NO_PROXY`` names the host: as urllib reads it (``*``, names and their
    subdomains, ``host:port``), and as requests does, address ranges (``10.0.0.0/8``)."""
    if not no_proxy:
        return False
    target = host if port is None else f"{host}:{port}"
    # urllib's own NO_PROXY reading (requests' too), not in typeshed: undocumented.
    if urllib.request.proxy_bypass_environment(target, {"no": no_proxy}):  # type: ignore[attr-defined]
        return True
    try:
        address = ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return False
    for entry in no_proxy.split(","):
        entry = entry.strip()
        if "/" in entry:
            try:
                if address in ipaddress.ip_network(entry, strict=False):
                    return True
            except ValueError:
                continue
    return False


def _check_proxy(value: str, source: str) -> tuple[URL, str | None]:
    """The proxy's URL without credentials, and its ``Proxy-Authorization``; a bad one
    refused."""
    if not isinstance(value, str):
        raise InvalidArgumentError(f"{source} must be a string URL, got {type(value).__name__}")
    text = value.strip()
    if "://" not in text:
        text = "http://" + text  # as httpx and curl read "proxy:3128"
    shown = repr(redact_url(text))
    try:
        url: URL | None = URL(text)
    except ValueError:
        url = None  # yarl's message may quote the URL, credentials included
    if url is None or not url.host or any(ch.isspace() for ch in text):
        raise InvalidArgumentError(f"{source} is not a valid proxy URL: {shown}")
    if url.scheme not in _PROXY_SCHEMES:
        raise InvalidArgumentError(
            f"{source} must be an http:// or https:// proxy ({SOCKS_ADVICE}), got {shown}"
        )
    if url.path not in ("", "/") or url.query_string or url.fragment:
        raise InvalidArgumentError(f"{source} must be a proxy's origin only, got {shown}")
    credentials = None
    if url.user is not None or url.password is not None:
        pair = f"{url.user or ''}:{url.password or ''}"
        try:
            raw = pair.encode("latin-1")  # as aiohttp's BasicAuth and requests encode it
        except UnicodeEncodeError:
            raw = pair.encode()
        credentials = "Basic " + base64.b64encode(raw).decode("ascii")
    return url.with_user(None).with_path(""), credentials


def _tls(value: object, base_url: URL, *, borrowed: bool) -> ssl.SSLContext | bool:
    """The TLS context ``ssl=`` asks for (True: the default trust, see ``_default_tls``)."""
    if value is True:
        # A plain http:// service never does TLS (no redirects are followed, next links
        # stay on its origin, no proxy carries it): no trust store is read for it (some
        # 20 ms of CPU where SSL_CERT_FILE names the system's bundle).
        return True if borrowed or base_url.scheme == "http" else _default_tls()
    if value is False:
        if not is_loopback(base_url.host):
            raise InvalidArgumentError(
                "ssl=False (no certificate check) is only for loopback hosts; for a private "
                "certificate authority pass ssl='/path/to/ca.pem' or an ssl.SSLContext"
            )
        return False
    if isinstance(value, ssl.SSLContext):
        return value
    if isinstance(value, (str, os.PathLike)):
        return check_ca_bundle(os.fspath(value), "ssl")
    raise InvalidArgumentError(
        "ssl must be an ssl.SSLContext, a CA bundle's path, True or False, "
        f"got {type(value).__name__}"
    )


def _default_tls() -> ssl.SSLContext | bool:
    """The system's trust store: ``SSL_CERT_FILE``/``SSL_CERT_DIR`` when one is set
    (OpenSSL's default trust reads them); on macOS and Windows the system's own store
    through ``truststore`` where installed; else aiohttp's default context.

    Elsewhere (Linux, the BSDs) the system's store is the bundle OpenSSL reads already,
    and ``truststore`` would read that file again at every handshake (some 15 ms of the
    event loop each).
    """
    named = tuple(_env.read(name) for name in _env.CERT_VARIABLES)
    if any(named):
        return _openssl(*named)
    if sys.platform in _OWN_STORE_PLATFORMS:
        return _truststore() or _verified()
    return _verified()


def _verified() -> ssl.SSLContext | bool:
    """aiohttp's default, verified context: ``True`` from aiohttp 3.10 on; before it
    ``ssl=True`` meant no verification at all, so a context of OpenSSL's default trust."""
    return True if _AIOHTTP >= (3, 10) else _openssl(None, None)


@functools.lru_cache(maxsize=4)
def _openssl(cafile: str | None, capath: str | None) -> ssl.SSLContext | bool:
    """OpenSSL's default trust, read now (aiohttp's own context read it at its import)."""
    del cafile, capath  # the cache's key: the context reads the same variables itself
    return ssl.create_default_context()


@functools.lru_cache(maxsize=1)
def _truststore() -> ssl.SSLContext | None:
    """One context of the system's trust store per process (None: not installed)."""
    try:
        import truststore
    except ImportError:
        return None
    return truststore.SSLContext(ssl.PROTOCOL_TLS_CLIENT)


class TunnelFailed(aiohttp.ClientConnectionError):
    """The proxy failed before the request was sent: refused, dropped or unreachable."""

    def __init__(self, proxy: str, status: int | None, what: str) -> None:
        super().__init__(" ".join(part for part in ("the proxy", proxy, what) if part))
        self.proxy = proxy
        self.status = status
        self.what = what


def tunnel_failure(exc: aiohttp.ClientError, proxy: URL | None) -> aiohttp.ClientError:
    """What a failure to connect through ``proxy`` was: the proxy's (a ``TunnelFailed``),
    or, for a TLS failure with the service at the tunnel's end, ``exc`` itself."""
    if proxy is None or isinstance(exc, (aiohttp.ClientSSLError, TunnelFailed)):
        return exc
    return _tunnel_failed(exc, f"{proxy.host}:{proxy.port}")


def _tunnel_failed(exc: aiohttp.ClientError, shown: str) -> TunnelFailed:
    if isinstance(exc, aiohttp.ClientHttpProxyError):
        # The status's own phrase, not the proxy's: a proxy may echo the Proxy-Authorization
        # it was sent (the credentials, in base64) in its reason phrase.
        reason = _phrase(exc.status)
        return TunnelFailed(shown, exc.status, f"refused the tunnel: {exc.status} {reason}".strip())
    if isinstance(exc, aiohttp.ClientProxyConnectionError):
        return TunnelFailed(shown, None, f"cannot be reached ({exc.os_error})")
    return TunnelFailed(shown, None, f"closed the connection during CONNECT ({_said(exc)})")


def proxy_failure(exc: BaseException) -> TunnelFailed | None:
    """A proxy's failure as aiohttp reports it to a session of the user's (whose connector
    cannot tell a dropped ``CONNECT``); None for any other failure."""
    if isinstance(exc, TunnelFailed):
        return exc
    if isinstance(exc, aiohttp.ClientProxyConnectionError):
        return _tunnel_failed(exc, f"{exc.host}:{exc.port}")
    if isinstance(exc, aiohttp.ClientHttpProxyError):
        return _tunnel_failed(exc, "")
    return None


def _phrase(status: int) -> str:
    try:
        return http.HTTPStatus(status).phrase
    except ValueError:
        return ""


def _said(exc: BaseException) -> str:
    text = str(exc) if not isinstance(exc, aiohttp.ClientResponseError) else ""
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
