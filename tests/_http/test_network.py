"""Proxies and private certificate authorities (_http/_network.py), with real parts.

A CONNECT proxy on loopback in front of a TLS server whose certificate comes from a CA
made for the test: the whole walk goes through both, the proxy reads no token, refusals
are ProxyErrors, and the environment's variables are read as httpx and requests read them.
"""

from __future__ import annotations

import asyncio
import base64
import logging
import os
import socket
import ssl
import subprocess
import sys
from asyncio.subprocess import PIPE
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from payroll_async import (
    APIConnectionError,
    InvalidArgumentError,
    PayrollClient,
    ProxyError,
    RetryPolicy,
)
from payroll_async.emulator import Emulator
from tests._network import (
    SERVICE_HOST,
    PrivateCA,
    Service,
    ServiceFactory,
    TunnelProxy,
    tls_server,
)
from tests.conftest import FakeClock

SERVICE = f"https://{SERVICE_HOST}"
PROXY_VARIABLES = (
    "HTTPS_PROXY",
    "https_proxy",
    "HTTP_PROXY",
    "http_proxy",
    "ALL_PROXY",
    "all_proxy",
    "NO_PROXY",
    "no_proxy",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
)


@pytest.fixture(autouse=True)
def _no_proxy_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test sets the variables it is about; none of the machine's."""
    for name in PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


# -- the whole walk through the proxy and the private CA ----------------------------------


async def test_the_whole_walk_goes_through_the_environments_proxy_and_a_private_ca(
    ca: PrivateCA, tls_service: ServiceFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    service = await tls_service(faults={3: 429, 6: 503})
    async with TunnelProxy(service.port) as proxy:
        monkeypatch.setenv("HTTPS_PROXY", proxy.url)
        clock = FakeClock()
        async with PayrollClient(
            SERVICE, service.emulator.token, ssl=str(ca.bundle), clock=clock, page_size=20
        ) as client:
            items = [c.id async for c in client.payroll_connections.list(concurrency=4)]

    assert len(set(items)) == 230
    assert 1.0 in clock.sleeps  # the 429's pause, on the client's clock
    assert proxy.tunnels >= 1
    assert all(head.startswith(f"CONNECT {SERVICE_HOST}:443 ".encode()) for head in proxy.heads)
    # The token went to the service only: the proxy read none of it, not even its header.
    token = service.emulator.token.encode()
    assert token not in bytes(proxy.seen)
    assert b"authorization" not in b"".join(proxy.heads).lower()
    assert set(service.authorizations) == {f"Bearer {service.emulator.token}"}


async def test_an_explicit_proxy_with_credentials_overrides_the_environment(
    ca: PrivateCA, tls_service: ServiceFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    service = await tls_service()
    monkeypatch.setenv("HTTPS_PROXY", f"http://127.0.0.1:{_closed_port()}")
    async with TunnelProxy(service.port, credentials="me:pa ss") as proxy:
        given = proxy.url.replace("://", "://me:pa%20ss@")
        async with PayrollClient(
            SERVICE, service.emulator.token, proxy=given, ssl=str(ca.bundle)
        ) as client:
            hooks = [w async for w in client.webhooks.list()]
    assert hooks
    assert proxy.tunnels == 1


@pytest.mark.parametrize("echo", [False, True])
async def test_a_407_is_a_proxy_error_without_the_proxys_password_or_the_token(
    ca: PrivateCA, tls_service: ServiceFactory, caplog: pytest.LogCaptureFixture, echo: bool
) -> None:
    """With ``echo``, the proxy's reason phrase repeats the credentials it was sent."""
    service = await tls_service()
    caplog.set_level(logging.DEBUG, logger="payroll_async")
    async with TunnelProxy(service.port, credentials="me:right", echo=echo) as proxy:
        given = proxy.url.replace("://", "://me:WRONGPASS@")
        client = PayrollClient(SERVICE, service.emulator.token, proxy=given, ssl=str(ca.bundle))
        async with client:
            with pytest.raises(ProxyError) as caught:
                [w async for w in client.webhooks.list()]
    error = caught.value
    assert isinstance(error, APIConnectionError)
    assert error.status == 407
    assert error.proxy == f"127.0.0.1:{proxy.port}"
    assert not error.retryable
    assert not error.request_sent
    assert "the proxy" in str(error)
    assert "407" in str(error)
    assert len(proxy.heads) == 1  # a refusal is not retried
    assert error.__cause__ is None
    assert error.__context__ is None
    assert "407 Proxy Authentication Required" in str(error)
    shown = " ".join([str(error), repr(error), repr(client), caplog.text])
    assert "WRONGPASS" not in shown
    assert base64.b64encode(b"me:WRONGPASS").decode() not in shown
    assert service.emulator.token not in shown
    assert not service.authorizations  # nothing reached the service


@pytest.mark.parametrize("answer", [403, 502, "drop"])
async def test_a_proxy_that_refuses_or_drops_the_tunnel_is_a_proxy_error(
    ca: PrivateCA, tls_service: ServiceFactory, answer: int | str
) -> None:
    service = await tls_service()
    async with TunnelProxy(service.port, answer=answer) as proxy:
        async with PayrollClient(
            SERVICE,
            service.emulator.token,
            proxy=proxy.url,
            ssl=str(ca.bundle),
            clock=FakeClock(),
            retry=RetryPolicy(max_attempts=3),
        ) as client:
            with pytest.raises(ProxyError) as caught:
                await client.webhooks.delete("00000000-0000-4000-8000-000000000000")
    error = caught.value
    assert "the proxy" in str(error)
    assert service.emulator.token not in str(error)
    assert not error.request_sent
    if answer == 403:
        assert (error.status, error.retryable, len(proxy.heads)) == (403, False, 1)
    else:  # a gateway failure or a dropped CONNECT may mend: retried
        assert error.status == (502 if answer == 502 else None)
        assert error.retryable
        assert len(proxy.heads) == 3
    assert not service.authorizations


async def test_a_proxy_that_cannot_be_reached_is_a_proxy_error() -> None:
    port = _closed_port()
    async with PayrollClient(
        SERVICE, "tok", proxy=f"http://u:SECRETPW@127.0.0.1:{port}", retry=None
    ) as client:
        with pytest.raises(ProxyError) as caught:
            await client.webhooks.delete("00000000-0000-4000-8000-000000000000")
    assert f"127.0.0.1:{port}" in str(caught.value)
    assert "cannot be reached" in str(caught.value)
    assert "SECRETPW" not in str(caught.value) + repr(caught.value)


# -- the environment: HTTPS_PROXY, ALL_PROXY, NO_PROXY, trust_env --------------------------


async def _list_through(base_url: str, service: Service, **options: Any) -> None:
    """List the service's subscriptions with a client of ``options``: they are all there."""
    async with PayrollClient(base_url, service.emulator.token, **options) as client:
        assert len([w async for w in client.webhooks.list()]) == 3


@pytest.mark.parametrize("variable", ["HTTPS_PROXY", "https_proxy", "ALL_PROXY"])
async def test_the_proxy_variables_are_honoured(
    ca: PrivateCA, tls_service: ServiceFactory, monkeypatch: pytest.MonkeyPatch, variable: str
) -> None:
    service = await tls_service()
    async with TunnelProxy(service.port) as proxy:
        monkeypatch.setenv(variable, proxy.url.removeprefix("http://"))  # no scheme: http
        await _list_through(SERVICE, service, ssl=ca.bundle)
    assert proxy.tunnels == 1


async def test_trust_env_false_ignores_the_environment(
    ca: PrivateCA, tls_service: ServiceFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    service = await tls_service()
    async with TunnelProxy(service.port) as proxy:
        monkeypatch.setenv("HTTPS_PROXY", proxy.url)
        monkeypatch.setenv("NO_PROXY", "")
        await _list_through(
            f"https://localhost:{service.port}", service, ssl=ca.bundle, trust_env=False
        )
    assert proxy.heads == []


@pytest.mark.parametrize(
    ("no_proxy", "proxied"),
    [(None, False), ("other.example", False), ("", True), ("*", False), ("localhost", False)],
)
async def test_loopback_goes_straight_unless_no_proxy_is_emptied_on_purpose(
    ca: PrivateCA,
    tls_service: ServiceFactory,
    monkeypatch: pytest.MonkeyPatch,
    no_proxy: str | None,
    proxied: bool,
) -> None:
    service = await tls_service()
    async with TunnelProxy(service.port) as proxy:
        monkeypatch.setenv("HTTPS_PROXY", proxy.url)
        if no_proxy is not None:
            monkeypatch.setenv("NO_PROXY", no_proxy)
        await _list_through(f"https://localhost:{service.port}", service, ssl=ca.bundle)
    assert (proxy.tunnels == 1) is proxied


@pytest.mark.parametrize(
    "no_proxy", [SERVICE_HOST, ".example.test", "example.test", "*", "x.org, payroll.example.test"]
)
async def test_no_proxy_names_the_service(
    ca: PrivateCA, tls_service: ServiceFactory, monkeypatch: pytest.MonkeyPatch, no_proxy: str
) -> None:
    service = await tls_service()
    async with TunnelProxy(service.port) as proxy:
        monkeypatch.setenv("HTTPS_PROXY", proxy.url)
        monkeypatch.setenv("NO_PROXY", no_proxy)
        async with PayrollClient(SERVICE, "tok", ssl=str(ca.bundle), retry=None) as client:
            # Straight to the service: its name resolves nowhere, so no connection at all.
            with pytest.raises(APIConnectionError) as caught:
                await client.webhooks.delete("00000000-0000-4000-8000-000000000000")
    assert not isinstance(caught.value, ProxyError)
    assert proxy.heads == []


async def test_no_proxy_takes_address_ranges(
    tls_service: ServiceFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    service = await tls_service()
    async with TunnelProxy(service.port) as proxy:
        monkeypatch.setenv("HTTPS_PROXY", proxy.url)
        monkeypatch.setenv("NO_PROXY", "example.org, 192.0.2.0/24")
        async with PayrollClient("https://192.0.2.7", "tok", timeout=0.5, retry=None) as client:
            # Straight to a documentation address (RFC 5737): no route, or no answer.
            with pytest.raises(APIConnectionError) as caught:
                await client.webhooks.delete("00000000-0000-4000-8000-000000000000")
    assert not isinstance(caught.value, ProxyError)
    assert proxy.heads == []


# -- a session of the user's ---------------------------------------------------------------


async def test_with_a_session_of_yours_proxy_and_ssl_still_apply(
    ca: PrivateCA, tls_service: ServiceFactory
) -> None:
    service = await tls_service()
    async with TunnelProxy(service.port) as proxy, aiohttp.ClientSession() as session:
        await _list_through(SERVICE, service, session=session, proxy=proxy.url, ssl=ca.bundle)
    assert proxy.tunnels == 1


async def test_with_a_session_of_yours_a_refusal_is_still_a_proxy_error(
    ca: PrivateCA, tls_service: ServiceFactory
) -> None:
    service = await tls_service()
    async with TunnelProxy(service.port, answer=403) as proxy, aiohttp.ClientSession() as s:
        async with PayrollClient(
            SERVICE, "tok", session=s, proxy=proxy.url, ssl=str(ca.bundle), retry=None
        ) as client:
            with pytest.raises(ProxyError) as caught:
                await client.webhooks.delete("00000000-0000-4000-8000-000000000000")
    assert caught.value.status == 403


# -- private certificate authorities and client certificates -------------------------------


async def test_a_private_ca_is_refused_by_default_and_trusted_when_given(
    ca: PrivateCA, tls_service: ServiceFactory
) -> None:
    service = await tls_service()
    base_url = f"https://localhost:{service.port}"
    async with PayrollClient(base_url, service.emulator.token) as client:
        with pytest.raises(APIConnectionError) as caught:
            [w async for w in client.webhooks.list()]
    assert "TLS failed" in str(caught.value)
    assert "CERTIFICATE_VERIFY_FAILED" in str(caught.value)
    # the way out, named: a private CA is trusted by ssl= or SSL_CERT_FILE
    assert str(caught.value).endswith(
        "; its certificate authority is not one this client trusts: to trust a private one, "
        "pass ssl= with its PEM file (or an ssl.SSLContext), or set SSL_CERT_FILE to that file"
    )
    assert not caught.value.retryable
    await _list_through(base_url, service, ssl=ca.bundle)
    await _list_through(base_url, service, ssl=ca.client_context())


async def test_a_name_the_certificate_does_not_match_is_no_matter_of_trust(
    ca: PrivateCA,
) -> None:
    # trusted, but issued for another name: another CA would not mend it
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.ca.issue_cert("elsewhere.example.test").configure_cert(context)
    async with Emulator() as emu, tls_server(emu.app, context) as port:
        async with PayrollClient(f"https://localhost:{port}", "tok", ssl=ca.bundle) as client:
            with pytest.raises(APIConnectionError) as caught:
                await client.webhooks.delete("00000000-0000-4000-8000-000000000000")
    assert "TLS failed" in str(caught.value)
    assert "ssl=" not in str(caught.value)


async def test_ssl_cert_file_keeps_working(
    ca: PrivateCA, tls_service: ServiceFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    service = await tls_service()
    monkeypatch.setenv("SSL_CERT_FILE", str(ca.bundle))
    await _list_through(f"https://localhost:{service.port}", service)


def test_a_plain_http_service_reads_no_trust_store(
    ca: PrivateCA, monkeypatch: pytest.MonkeyPatch
) -> None:
    """TLS never happens on an http:// service: its client reads no CA bundle (some 20 ms
    of CPU for the system's), even with SSL_CERT_FILE set; an https:// one does."""
    monkeypatch.setenv("SSL_CERT_FILE", str(ca.bundle))
    assert PayrollClient("http://127.0.0.1:9", "tok")._transport.route.ssl is True
    https = PayrollClient(f"https://{SERVICE_HOST}", "tok")._transport.route.ssl
    assert isinstance(https, ssl.SSLContext)


@pytest.fixture
def hashed(ca: PrivateCA, tmp_path: Path) -> Path:
    """The CA in a directory of hashed certificates, as ``c_rehash`` makes one."""
    directory = tmp_path / "certs"
    directory.mkdir()
    name = subprocess.run(
        ["openssl", "x509", "-hash", "-noout", "-in", str(ca.bundle)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    (directory / f"{name}.0").write_bytes(ca.bundle.read_bytes())
    return directory


async def test_ssl_cert_file_set_after_aiohttp_was_imported_without_truststore(
    ca: PrivateCA, tls_service: ServiceFactory
) -> None:
    """aiohttp reads SSL_CERT_FILE once, as it is imported; the client reads it when made."""
    service = await tls_service()
    code = f"""
import asyncio, os, sys
sys.modules["truststore"] = None  # not installed
import aiohttp, payroll_async
os.environ["SSL_CERT_FILE"] = {str(ca.bundle)!r}
async def main():
    async with payroll_async.PayrollClient(
        "https://localhost:{service.port}", {service.emulator.token!r}, retry=None
    ) as client:
        print(len([w async for w in client.webhooks.list()]))
asyncio.run(main())
"""
    environ = {k: v for k, v in os.environ.items() if k not in PROXY_VARIABLES}
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-c", code, env=environ, stdout=PIPE, stderr=PIPE
    )
    out, err = await asyncio.wait_for(process.communicate(), 60)
    assert process.returncode == 0, err.decode()
    assert out.decode().strip() == "3"


_OLD_AIOHTTP = tuple(int(n) for n in aiohttp.__version__.split(".")[:2]) < (3, 10)


def test_the_default_trust_is_truststores_on_macos_and_windows(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Not observable here: on Linux the system's store is OpenSSL's files, read as they
    are; elsewhere the default context is truststore's, unless SSL_CERT_* names one."""
    truststore = pytest.importorskip("truststore")
    default = PayrollClient(SERVICE, "tok")._transport.route.ssl  # OpenSSL's (aiohttp's)
    # aiohttp before 3.10 took ssl=True for "no verification": a verified context instead
    assert default is True or (_OLD_AIOHTTP and isinstance(default, ssl.SSLContext))
    assert not isinstance(default, truststore.SSLContext)
    monkeypatch.setattr(sys, "platform", "darwin")
    client = PayrollClient(SERVICE, "tok")
    assert isinstance(client._transport.route.ssl, truststore.SSLContext)
    monkeypatch.setenv("SSL_CERT_DIR", str(tmp_path))
    client = PayrollClient(SERVICE, "tok")
    assert not isinstance(client._transport.route.ssl, truststore.SSLContext)


def test_trust_env_is_a_bool() -> None:
    with pytest.raises(InvalidArgumentError, match="trust_env must be True or False"):
        PayrollClient(SERVICE, "tok", trust_env="no")  # type: ignore[arg-type]


async def test_a_directory_of_hashed_certificates_is_a_bundle(
    hashed: Path, tls_service: ServiceFactory
) -> None:
    service = await tls_service()
    await _list_through(f"https://localhost:{service.port}", service, ssl=hashed)


async def test_mutual_tls_with_a_client_certificate(
    ca: PrivateCA, tls_service: ServiceFactory
) -> None:
    service = await tls_service(client_certificate=True)
    base_url = f"https://localhost:{service.port}"
    await _list_through(base_url, service, ssl=ca.client_context(certificate=True))
    async with PayrollClient(
        base_url, service.emulator.token, ssl=ca.client_context(), retry=None
    ) as client:
        with pytest.raises(APIConnectionError):
            [w async for w in client.webhooks.list()]
    assert len(service.authorizations) == 1  # the one with its certificate


async def test_mutual_tls_through_the_proxy(ca: PrivateCA, tls_service: ServiceFactory) -> None:
    service = await tls_service(client_certificate=True)
    async with TunnelProxy(service.port) as proxy:
        await _list_through(
            SERVICE, service, proxy=proxy.url, ssl=ca.client_context(certificate=True)
        )
    assert proxy.tunnels == 1


# -- bad input, before any request -----------------------------------------------------------


def test_a_bad_ca_bundle_is_refused_before_any_request(tmp_path: Path) -> None:
    with pytest.raises(InvalidArgumentError, match=r"cannot use the CA bundle .*No such file"):
        PayrollClient(SERVICE, "tok", ssl=str(tmp_path / "missing.pem"))
    junk = tmp_path / "junk.pem"
    junk.write_text("not a certificate\n")
    with pytest.raises(InvalidArgumentError, match="no PEM certificate"):
        PayrollClient(SERVICE, "tok", ssl=junk)
    for empty in ("", " "):  # not the default trust in disguise
        with pytest.raises(InvalidArgumentError, match="an empty path is no CA bundle"):
            PayrollClient(SERVICE, "tok", ssl=empty)
    with pytest.raises(InvalidArgumentError, match="ssl must be"):
        PayrollClient(SERVICE, "tok", ssl=1.5)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="proxy= must be a string URL"):
        PayrollClient(SERVICE, "tok", proxy=3128)  # type: ignore[arg-type]


def test_no_certificate_check_only_for_loopback() -> None:
    with pytest.raises(InvalidArgumentError, match="only for loopback"):
        PayrollClient(SERVICE, "tok", ssl=False)
    PayrollClient("https://127.0.0.1:8443", "tok", ssl=False)


async def test_no_certificate_check_on_loopback_reaches_a_self_made_certificate(
    tls_service: ServiceFactory,
) -> None:
    service = await tls_service()
    await _list_through(f"https://127.0.0.1:{service.port}", service, ssl=False)


@pytest.mark.parametrize(
    ("proxy", "message"),
    [
        ("socks5://u:SECRETPW@proxy:1080", "http:// or https:// proxy"),
        ("http://u:SECRETPW@proxy:3128/path", "origin only"),
        ("http://u:SECRETPW@:3128", "not a valid proxy URL"),
        # a password not percent-encoded: its "/", "?" or "#" ends yarl's authority
        ("http://u:SECRET/PW@proxy:3128", "not a valid proxy URL"),
        ("http://u:SECRET?PW@proxy:3128", "not a valid proxy URL"),
        ("http://u:SECRET#PW@proxy:3128", "not a valid proxy URL"),
        ("u:SECRET/PW@proxy:3128", "not a valid proxy URL"),
        ("socks5://u:SECRET@PW@proxy:1080", "http:// or https:// proxy"),
    ],
)
def test_a_bad_proxy_is_refused_without_its_password(proxy: str, message: str) -> None:
    with pytest.raises(InvalidArgumentError, match=message) as caught:
        PayrollClient(SERVICE, "tok", proxy=proxy)
    assert "SECRET" not in str(caught.value)
    assert "PW" not in str(caught.value)


def test_a_bad_proxy_variable_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTTPS_PROXY", "socks5://u:SECRETPW@proxy:1080")
    with pytest.raises(InvalidArgumentError, match="HTTPS_PROXY must be") as caught:
        PayrollClient(SERVICE, "tok")
    assert "add its host to NO_PROXY or pass trust_env=False" in str(caught.value)
    assert "SECRETPW" not in str(caught.value)
    PayrollClient(SERVICE, "tok", trust_env=False)  # the environment is not read


def test_a_plain_http_service_never_goes_through_a_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(InvalidArgumentError, match="plain http://"):
        PayrollClient("http://127.0.0.1:8080", "tok", proxy="http://proxy:3128")


async def test_a_plain_http_service_ignores_the_environments_proxy(
    monkeypatch: pytest.MonkeyPatch, start_emulator: Callable[..., Awaitable[Emulator]]
) -> None:
    emulator = await start_emulator()
    monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{_closed_port()}")
    monkeypatch.setenv("ALL_PROXY", f"http://127.0.0.1:{_closed_port()}")
    monkeypatch.setenv("NO_PROXY", "")
    async with PayrollClient(emulator.base_url, emulator.token) as client:
        assert [w async for w in client.webhooks.list()]
