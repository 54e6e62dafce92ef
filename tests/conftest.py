"""Fixtures shared by the whole suite: mocked HTTP, a fake clock, loopback servers."""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import inspect
import os
from collections.abc import AsyncIterator, Awaitable, Callable, Generator, Iterator
from typing import Any

import aiohttp
import pytest
from aiohttp import web
from aioresponses import aioresponses
from yarl import URL

from payroll_async import (
    AsyncTransport,
    PayrollClient,
    RetryPolicy,
    TransportRequest,
    TransportResponse,
)
from payroll_async._core._clock import Clock
from payroll_async.emulator import Emulator
from tests import factories
from tests._postgres import into, postgres_server, postgres_url  # noqa: F401 (fixtures)


@pytest.hookimpl(wrapper=True, optionalhook=True)  # a run without pytest-xdist has no such hook
def pytest_xdist_auto_num_workers(config: pytest.Config) -> Generator[None, int, int]:
    """``-n auto`` (tests/_start.py): half again as many workers as cores (the cores xdist counts;
    3 on 2). Much of the suite waits on real processes, servers and time (a kill, a lease,
    a Retry-After), and another worker runs meanwhile; more than that costs more in
    collection and contention than it saves. ``PYTEST_XDIST_AUTO_NUM_WORKERS`` still rules."""
    cores = yield
    if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS"):
        return cores
    return max(cores + 1, 3 * cores // 2)


# A test is `slow` (pyproject's markers; `pytest -m "not slow"` is the inner loop) when it
# starts a real server: these fixtures, or a database parameter that is PostgreSQL. A test
# file whose tests run real processes (the command, workers) says so itself (pytestmark).
_SERVERS = frozenset({"postgres_server", "redis_server"})
_ON_POSTGRES = {"into": "postgresql", "destination": "postgres"}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        params = getattr(getattr(item, "callspec", None), "params", {})
        if _SERVERS.intersection(getattr(item, "fixturenames", ())) or any(
            params.get(name) == value for name, value in _ON_POSTGRES.items()
        ):
            item.add_marker(pytest.mark.slow)


BASE = "https://api.example.test"
TOKEN = "tok_secret_0123456789"
# What the exact-request tests share: a listing's first page, the subscriptions path, a
# subscription id, a fixed "now", and a policy of one attempt (no retry).
LIST = f"{BASE}/v1/payroll-connections?limit=100&offset=0"
SUBS_PATH = "/v1/webhooks/subscriptions"  # a loopback server's route
SUBS = f"{BASE}{SUBS_PATH}"
SID = factories.uid(1, 5)
NOW = datetime.datetime(2026, 11, 22, 12, 0, 0, tzinfo=datetime.timezone.utc)
ONCE = RetryPolicy(max_attempts=1)


if tuple(int(part) for part in aiohttp.__version__.split(".")[:2]) < (3, 11):
    # aiohttp 3.9 and 3.10 build a server request's URL with URL.build(host="host:port"),
    # which yarl 1.10 and later refuse: every loopback server of the suite answered 500 at
    # the floors. The URL as newer aiohttp builds it (the SDK's emulator does the same).
    web.BaseRequest.url = property(  # type: ignore[assignment]
        lambda request: URL.build(scheme=request.scheme, authority=request.host).join(
            request.rel_url
        )
    )


class _NoStreamWriter:
    output_size = 0


# Newer aiohttp (3.14) requires it; the floor's (3.9) has no such argument.
_NEEDS_STREAM_WRITER = "stream_writer" in inspect.signature(aiohttp.ClientResponse).parameters


class _ShimResponse(aiohttp.ClientResponse):
    # aioresponses 0.7.9 builds ClientResponse without the `stream_writer` argument that
    # aiohttp 3.14 requires (and reads `.output_size` from): pnuckowski/aioresponses#289,
    # fixed the same way by the open PR #288. A writer that reports nothing written makes
    # it work; the SDK itself never sees this class. Drop it with the release that merges
    # #288. Tests of the client's own behaviour use `payroll_async.testing.MockTransport`,
    # which needs no such patch (CONTRIBUTING: "Which double for what").
    def __init__(self, method: str, url: Any, **kwargs: Any) -> None:
        if _NEEDS_STREAM_WRITER:
            kwargs.setdefault("stream_writer", _NoStreamWriter())
        super().__init__(method, url, **kwargs)


class _Aioresponses(aioresponses):  # type: ignore[misc]
    def add(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("response_class", _ShimResponse)
        super().add(*args, **kwargs)


@pytest.fixture
def mock_api() -> Iterator[aioresponses]:
    """aioresponses, patched to build responses under aiohttp 3.14 (see _ShimResponse)."""
    with _Aioresponses() as mocked:
        yield mocked


class FakeClock(Clock):
    """A monotonic clock that only moves when the code under test sleeps."""

    def __init__(self) -> None:
        self.time = 1000.0
        self.sleeps: list[float] = []

    def now(self) -> float:
        return self.time

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.time += seconds


class HeldClock(Clock):
    """A monotonic clock whose time moves only when the test advances it.

    A sleep waits until the test moves the time past its end. Unlike FakeClock, the time
    does not jump the moment anything sleeps, so whatever runs during a wait runs at the
    time the wait began, and a test can tell "sent during the pause" from "sent after it".
    """

    def __init__(self) -> None:
        self.time = 1000.0
        self.sleeps: list[float] = []
        self._sleepers: list[tuple[float, asyncio.Future[None]]] = []
        self._changed = asyncio.Event()

    def now(self) -> float:
        return self.time

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        waiter = asyncio.get_running_loop().create_future()
        entry = (self.time + seconds, waiter)
        self._sleepers.append(entry)
        self.poke()
        try:
            await waiter
        finally:
            if entry in self._sleepers:  # cancelled before its end
                self._sleepers.remove(entry)

    @property
    def sleeping(self) -> int:
        """How many sleeps are waiting for the time to move."""
        return len(self._sleepers)

    def poke(self) -> None:
        """Wake ``until()``: something it looks at may have changed."""
        self._changed.set()

    async def until(self, condition: Callable[[], bool]) -> None:
        """Return once ``condition()`` holds, looking again at each sleep or ``poke()``."""
        while not condition():
            self._changed.clear()
            await self._changed.wait()

    def advance(self) -> None:
        """Move the time to the end of the earliest sleep and wake every sleep ended."""
        self.time = max(self.time, min(end for end, _ in self._sleepers))
        ended = [entry for entry in self._sleepers if entry[0] <= self.time]
        for entry in ended:
            self._sleepers.remove(entry)
            entry[1].set_result(None)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
async def client(clock: FakeClock) -> AsyncIterator[PayrollClient]:
    """A client of BASE whose retry waits run on the fake clock."""
    async with PayrollClient(base_url=BASE, token=TOKEN, clock=clock) as c:
        yield c


class Asked:
    """A server middleware that tells the test when it has been asked ``requests`` times.

    ``reached`` is set at the n-th request (before it is answered): what a process under
    test has done by then (a lock taken, pages asked for) is known without polling.
    """

    __middleware_version__ = 1

    def __init__(self, requests: int = 1) -> None:
        self.requests = requests
        self.count = 0
        self.reached = asyncio.Event()

    async def __call__(self, request: web.Request, handler: Any) -> web.StreamResponse:
        self.count += 1
        if self.count >= self.requests:
            self.reached.set()
        response: web.StreamResponse = await handler(request)
        return response


StartEmulator = Callable[..., Awaitable[Emulator]]


@pytest.fixture
async def start_emulator() -> AsyncIterator[StartEmulator]:
    """``await start(**options)``: an Emulator serving in the test's own event loop, closed
    after the test (its own ``async with``).

    The in-loop form of the plugin's ``payroll_emulator_factory`` (payroll_async.testing),
    whose emulators serve from a thread of their own for sync tests: a test that churns
    the data between pages, or awaits ``emit()``, needs the emulator in its loop.
    """
    async with contextlib.AsyncExitStack() as started:

        async def start(**options: Any) -> Emulator:
            return await started.enter_async_context(Emulator(**options))

        yield start


Serve = Callable[[web.Application], Awaitable[str]]


@contextlib.asynccontextmanager
async def loopback(app: web.Application, **runner: Any) -> AsyncIterator[str]:
    """Serve ``app`` on a free loopback port for the block; yields its base URL.

    The one way the tests start a server of their own (``serve`` is its fixture form; a
    hypothesis example or a test of its own loop uses this). Teardown cancels handlers
    still running (a server that stalls on purpose) instead of waiting for them.
    """
    started = web.AppRunner(app, **{"shutdown_timeout": 0.01, **runner})
    await started.setup()
    try:
        await web.TCPSite(started, "127.0.0.1", 0).start()
        host, port = started.addresses[0][:2]
        yield f"http://{host}:{port}"
    finally:
        await started.cleanup()


@pytest.fixture
async def serve() -> AsyncIterator[Serve]:
    """Start an aiohttp app on a free loopback port; returns its base URL."""
    async with contextlib.AsyncExitStack() as servers:

        async def start(app: web.Application) -> str:
            return await servers.enter_async_context(loopback(app))

        yield start


class Yours:
    """A transport of a user's own, as ``transport=`` takes one: the seam's two methods and
    nothing of its optional part (``TransportStatus``). It carries each request through
    aiohttp's transport, so that a suite keeps its real servers: what runs above the seam
    is then the code that every user's transport (and ``MockTransport``) gets."""

    def __init__(self, inner: AsyncTransport) -> None:
        self._inner = inner

    async def handle_async_request(self, request: TransportRequest) -> TransportResponse:
        return await self._inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self._inner.aclose()


@pytest.fixture(params=["aiohttp", "yours"])
def either_transport(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """The suite once over the client's own transport and once over a transport of a
    user's (``Yours``): every client the test makes without ``transport=`` gets it."""
    if request.param == "yours":
        from payroll_async._http import _requester

        made = _requester.AiohttpTransport

        def yours(**options: Any) -> AsyncTransport:
            return Yours(made(**options))

        monkeypatch.setattr(_requester, "AiohttpTransport", yours)
    return str(request.param)


BOTH_TRANSPORTS = pytest.mark.usefixtures("either_transport")
"""A module's ``pytestmark``: its tests run over both transports (``either_transport``)."""


# The private CA and the emulator over TLS of the proxy and TLS tests (tests/_network.py).
from tests._network import ca, tls_service  # noqa: E402, F401
