"""The command behind a proxy and a private CA: --proxy, --ca-bundle and the environment."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from payroll_async.cli._errors import ExitCode
from tests._network import SERVICE_HOST, PrivateCA, ServiceFactory, TunnelProxy

from ._run import invoke, start

SERVICE = f"https://{SERVICE_HOST}"
CLEAN = {"HTTPS_PROXY": None, "https_proxy": None, "ALL_PROXY": None, "all_proxy": None}
CLEAN |= {"NO_PROXY": None, "no_proxy": None, "SSL_CERT_FILE": None, "SSL_CERT_DIR": None}


async def _command(*args: str, env: dict[str, str | None]) -> tuple[int, str, str]:
    process = await start(
        None,
        *args,
        env={**CLEAN, **env},
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(process.communicate(), 60)
    assert process.returncode is not None
    return process.returncode, out.decode(), err.decode()


async def test_webhooks_create_through_the_environments_proxy_with_ca_bundle(
    ca: PrivateCA, tls_service: ServiceFactory
) -> None:
    service = await tls_service()
    token = service.emulator.token
    async with TunnelProxy(service.port) as proxy:
        code, out, err = await _command(
            "--base-url", SERVICE, "--ca-bundle", str(ca.bundle),
            "webhooks", "create", "--path", "https://hooks.example.com/in",
            "--event", "PAYROLL_PROCESSED", "--json",
            env={"HTTPS_PROXY": proxy.url, "PAYROLL_TOKEN": token},
        )  # fmt: skip
    assert code == 0, err
    assert "hooks.example.com/in" in out
    assert proxy.tunnels == 1
    assert token.encode() not in bytes(proxy.seen)
    assert service.authorizations == [f"Bearer {token}"]


async def test_proxy_option_and_its_refusal(ca: PrivateCA, tls_service: ServiceFactory) -> None:
    service = await tls_service()
    token = service.emulator.token
    async with TunnelProxy(service.port, credentials="me:right") as proxy:
        good = proxy.url.replace("://", "://me:right@")
        code, out, err = await _command(
            "--base-url", SERVICE, "--proxy", good, "--ca-bundle", str(ca.bundle),
            "webhooks", "list", "--json",
            env={"PAYROLL_TOKEN": token},
        )  # fmt: skip
        assert code == 0, err
        bad = proxy.url.replace("://", "://me:WRONGPASS@")
        code, out, err = await _command(
            "--base-url", SERVICE, "--proxy", bad, "--ca-bundle", str(ca.bundle),
            "webhooks", "replace", "00000000-0000-4000-8000-000000000000",
            "--path", "https://hooks.example.com/in", "--event", "PAYROLL_PROCESSED",
            env={"PAYROLL_TOKEN": token},
        )  # fmt: skip
    assert code == ExitCode.SERVICE
    assert "the proxy" in err
    assert "407" in err
    assert "WRONGPASS" not in err + out
    assert token not in err + out
    assert len(service.authorizations) == 1  # the list only


async def test_an_untrusted_certificate_names_ca_bundle(
    ca: PrivateCA, tls_service: ServiceFactory
) -> None:
    service = await tls_service()
    code, _, err = await _command(
        "--base-url", f"https://localhost:{service.port}", "webhooks", "list",
        env={"PAYROLL_TOKEN": service.emulator.token},
    )  # fmt: skip
    assert code == ExitCode.SERVICE
    assert "CERTIFICATE_VERIFY_FAILED" in err
    assert err.rstrip().endswith(
        "to trust a private one, pass --ca-bundle with its PEM file, or set SSL_CERT_FILE to "
        "that file"
    )
    assert len(err.splitlines()) == 1
    code, _, err = await _command(
        "--base-url", f"https://localhost:{service.port}", "--ca-bundle", str(ca.bundle),
        "webhooks", "list", "--json",
        env={"PAYROLL_TOKEN": service.emulator.token},
    )  # fmt: skip
    assert code == 0, err


def test_a_bad_ca_bundle_is_bad_input(tmp_path: Path) -> None:
    junk = tmp_path / "junk.pem"
    junk.write_text("not a certificate\n")
    for path in (junk, tmp_path / "missing.pem", ""):
        result = invoke(None, "--ca-bundle", str(path), "--emulator", "webhooks", "list")
        assert result.exit_code == ExitCode.BAD_INPUT
        assert "--ca-bundle" in result.output
        assert "CA bundle" in result.output


def test_a_bad_proxy_is_bad_input_in_the_commands_words() -> None:
    result = invoke(
        None,
        "--base-url",
        SERVICE,
        "--token",
        "tok",
        "--proxy",
        "socks5://u:SECRETPW@proxy:1080",
        "webhooks",
        "list",
    )
    assert result.exit_code == ExitCode.BAD_INPUT
    assert "--proxy must be an http:// or https:// proxy" in result.output
    assert "SECRETPW" not in result.output
    # the advice is what the command can do: session= is only Python's
    assert "session=" not in result.output
    assert "the command speaks HTTP proxies only" in result.output


def test_a_socks_proxy_of_the_environment_is_refused_with_the_commands_way_out(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("ALL_PROXY", "socks5://proxy:1080")
    monkeypatch.delenv("HTTPS_PROXY", raising=False)
    monkeypatch.delenv("https_proxy", raising=False)
    result = invoke(None, "--base-url", SERVICE, "--token", "tok", "webhooks", "list")
    assert result.exit_code == ExitCode.BAD_INPUT
    assert result.stderr.startswith("error: ALL_PROXY must be an http:// or https:// proxy")
    assert "session=" not in result.output
    assert "trust_env=False" not in result.output
    assert result.stderr.rstrip().endswith("add its host to NO_PROXY or unset the variable")
