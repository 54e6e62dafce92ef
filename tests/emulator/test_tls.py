"""The emulator over TLS (issue 54 item 2): a certificate authority of its own and its CA
file, so that a proxy and a private CA are rehearsed end to end on one machine: the
emulator, docs/emulator.md's CONNECT proxy, and the client and the command through both."""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from payroll_async import APIConnectionError, PayrollClient
from payroll_async.cli._errors import ExitCode
from payroll_async.emulator import Emulator
from tests.cli._run import invoke, start

pytestmark = pytest.mark.slow  # the page's proxy, the emulator and the command as processes

PAGE = Path(__file__).parents[2] / "docs" / "emulator.md"
NO_PROXIES = dict.fromkeys(("HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy"))
CLEAN = {**NO_PROXIES, "SSL_CERT_FILE": None, "SSL_CERT_DIR": None}


def page_proxy_program() -> str:
    """The CONNECT proxy docs/emulator.md gives its readers to save as connect_proxy.py."""
    text = PAGE.read_text()
    start = text.index("```python\n# connect_proxy.py") + len("```python\n")
    return text[start : text.index("```", start)]


class PageProxy:
    """The page's proxy, run as its reader runs it (``python3 connect_proxy.py PORT``, here
    port 0); ``said`` is what it printed, once it is stopped."""

    def __init__(self, process: asyncio.subprocess.Process, url: str) -> None:
        self.process = process
        self.url = url
        self.said = ""


@contextlib.asynccontextmanager
async def page_proxy(folder: Path) -> AsyncIterator[PageProxy]:
    program = folder / "connect_proxy.py"
    program.write_text(page_proxy_program())
    process = await asyncio.create_subprocess_exec(
        sys.executable, str(program), "0", stdout=asyncio.subprocess.PIPE
    )
    assert process.stdout is not None
    try:
        first = (await asyncio.wait_for(process.stdout.readline(), 30)).decode()
        assert first.startswith("proxy on http://127.0.0.1:"), first
        proxy = PageProxy(process, first.split()[-1])
        yield proxy
    finally:
        if process.returncode is None:
            process.terminate()
        rest, _ = await asyncio.wait_for(process.communicate(), 30)
    proxy.said = rest.decode()


async def test_a_client_reaches_the_emulator_over_tls_through_the_pages_proxy(
    tmp_path: Path,
) -> None:
    async with Emulator(tls=True, payroll_connections=30) as emu, page_proxy(tmp_path) as proxy:
        assert emu.base_url.startswith("https://127.0.0.1:")
        ca_file = Path(emu.ca_file)
        assert ca_file.read_bytes().startswith(b"-----BEGIN CERTIFICATE-----")  # noqa: ASYNC240
        async with PayrollClient(
            emu.base_url, emu.token, proxy=proxy.url, ssl=emu.ca_file
        ) as client:
            assert len(await client.payroll_connections.list().collect()) == 30
        # not trusted without its CA, as a company's private CA is not: the way out named
        async with PayrollClient(emu.base_url, emu.token, proxy=proxy.url, retry=None) as bare:
            with pytest.raises(APIConnectionError, match="pass ssl= with its PEM file"):
                await bare.webhooks.list().collect()
    port = emu.base_url.rsplit(":", 1)[1]
    assert proxy.said.count(f"CONNECT 127.0.0.1:{port}") == 2  # both went through it
    assert not ca_file.exists()  # noqa: ASYNC240 (deleted with the emulator)
    assert emu.ca_file == ""


async def test_the_command_through_the_proxy_with_the_ca_file_the_emulator_prints(
    tmp_path: Path,
) -> None:
    """The page's three terminals: `payroll-async emulator --tls`, connect_proxy.py, and
    the command with --proxy and --ca-bundle."""
    served = await start(None, "emulator", "--tls", "--port", "0", stdout=asyncio.subprocess.PIPE)
    assert served.stdout is not None
    try:
        banner: dict[str, str] = {}
        while "CA file" not in banner:
            line = (await asyncio.wait_for(served.stdout.readline(), 30)).decode().strip()
            assert line, "the emulator stopped before its banner ended"
            if line.startswith("CA file: "):
                banner["CA file"] = line.removeprefix("CA file: ").split(" ")[0]
            elif line.startswith("PAYROLL_"):
                name, _, value = line.partition("=")
                banner[name] = value
        base_url, ca_file = banner["PAYROLL_BASE_URL"], banner["CA file"]
        assert base_url.startswith("https://")
        env = {**CLEAN, "PAYROLL_BASE_URL": base_url, "PAYROLL_TOKEN": banner["PAYROLL_TOKEN"]}
        async with page_proxy(tmp_path) as proxy:
            trusted = await start(
                None, "--proxy", proxy.url, "--ca-bundle", ca_file, "webhooks", "list", "--json",
                env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
            )  # fmt: skip
            out, err = await asyncio.wait_for(trusted.communicate(), 60)
            assert trusted.returncode == 0, err.decode()
            assert len(json.loads(out)) == 3  # the emulator's subscriptions at start
            untrusted = await start(
                None, "--proxy", proxy.url, "webhooks", "list",
                env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
            )  # fmt: skip
            _, err = await asyncio.wait_for(untrusted.communicate(), 60)
        assert untrusted.returncode == ExitCode.SERVICE
        assert "pass --ca-bundle with its PEM file, or set SSL_CERT_FILE" in err.decode()
        assert proxy.said.count(f"CONNECT {base_url.removeprefix('https://')}") == 2
    finally:
        served.send_signal(signal.SIGINT)
        await asyncio.wait_for(served.communicate(), 30)
    assert served.returncode == 0
    assert not Path(ca_file).exists()  # noqa: ASYNC240


async def test_emulator_and_proxy_run_the_command_through_the_proxy(tmp_path: Path) -> None:
    async with page_proxy(tmp_path) as proxy:
        command = await start(
            None, "--emulator", "--proxy", proxy.url, "webhooks", "list", "--json",
            env=CLEAN, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip
        out, err = await asyncio.wait_for(command.communicate(), 60)
    assert command.returncode == 0, err.decode()  # no longer a usage error (exit 2)
    assert len(json.loads(out)) == 3
    assert proxy.said.count("CONNECT 127.0.0.1:") == 1


def test_without_the_extra_tls_is_refused_naming_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "trustme", None)  # as if it were not installed
    with pytest.raises(ValueError, match=r"pip install 'payroll-async\[emulator-tls\]'"):
        Emulator(tls=True)
    result = invoke(None, "--emulator", "--proxy", "http://127.0.0.1:9", "webhooks", "list")
    assert result.exit_code == ExitCode.BAD_INPUT
    assert "--proxy with --emulator serves the emulator over TLS" in result.stderr
    assert "'payroll-async[emulator-tls]'" in result.stderr
    served = invoke(None, "emulator", "--tls", "--port", "0")
    assert served.exit_code == ExitCode.BAD_INPUT
    assert served.stderr.startswith("error: --tls needs the 'emulator-tls' extra")


async def test_webhooks_listen_on_the_emulator_subscribes_through_the_proxy(
    tmp_path: Path,
) -> None:
    async with page_proxy(tmp_path) as proxy:
        listening = await start(
            None, "--emulator", "--proxy", proxy.url, "webhooks", "listen",
            "--port", "0", "--interval", "0.05", "--count", "1", "--json",
            env=CLEAN, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip
        out, err = await asyncio.wait_for(listening.communicate(), 60)
    assert listening.returncode == 0, err.decode()
    assert json.loads(out)["eventType"] == "PAYROLL_PROCESSED"
    assert proxy.said.count("CONNECT 127.0.0.1:") >= 1  # its subscription went through it
