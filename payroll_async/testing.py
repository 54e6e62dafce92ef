"""Testing your code: an emulator on its own thread, and a transport with no server at all.

Any test runner can use it (unittest, a script, pytest): it imports no pytest. The pytest
plugin (fixtures ``payroll_emulator``, ``payroll_client``, ``payroll_emulator_factory``
and the ``payroll_emulator`` marker) is ``payroll_async.pytest_plugin``, which pytest
loads by itself (entry point ``pytest11``).

Without a server at all, [`MockTransport`][payroll_async.testing.MockTransport] answers a
client's requests from a function of yours, as httpx's ``MockTransport`` does:

```python
def handler(request: TransportRequest) -> TransportResponse:
    return page_response([])

client = PayrollClient("https://api.example.com", "token", transport=MockTransport(handler))
```

[`FakeClock`][payroll_async.testing.FakeClock] (``clock=``) makes the client's waits
(retries, ``Retry-After``, the 429 pause) cost no real time.
"""

from __future__ import annotations

import asyncio
import inspect
import threading
from collections.abc import Awaitable, Callable, Mapping
from types import TracebackType
from typing import Any

from ._core._clock import Clock
from ._core._json import dumps
from ._http._seam import TransportRequest, TransportResponse
from .emulator import Emulator

__all__ = ["EmulatorThread", "FakeClock", "MockTransport", "json_response", "page_response"]

pytest_plugins = ["payroll_async.pytest_plugin"]
"""Where pytest is told to load this module by name (``-p payroll_async.testing`` with
plugin autoloading off, as before the plugin had a module of its own), it loads the
plugin's: a name, not an import, so this module still imports no pytest."""

Handler = Callable[[TransportRequest], "TransportResponse | Awaitable[TransportResponse]"]


class MockTransport:
    """A transport that answers every request with ``handler(request)``: no network.

    ``handler`` (a function or a coroutine function) gets each
    [`TransportRequest`][payroll_async.TransportRequest] (the whole URL, the headers,
    ``Authorization`` included, and the body) and returns a
    [`TransportResponse`][payroll_async.TransportResponse] (``json_response`` makes one
    from data). Raise [`APIConnectionError`][payroll_async.APIConnectionError] (or an
    ``OSError``) from it for a send that got no answer. Everything above the transport
    is the client's own: retries and Retry-After, the token's refresh on a 401, the
    gates, the response bound, typed errors, pagination.

    ```pycon
    >>> seen = MockTransport(lambda request: json_response({"id": "p1"}))
    >>> async with PayrollClient("https://api.example.com", "tok", transport=seen) as client:
    ...     await client.get("/v1/payroll-platforms/p1", cast_to=dict)
    {'id': 'p1'}
    >>> seen.requests[0].url.path
    '/v1/payroll-platforms/p1'
    ```
    """

    def __init__(self, handler: Handler) -> None:
        self.handler: Handler = handler
        """What answers each request (replace it to change the answers mid-test)."""
        self.requests: list[TransportRequest] = []
        """Every request sent, in order."""
        self.closed: bool = False
        """Whether the client closed it (``aclose()``)."""

    async def handle_async_request(self, request: TransportRequest) -> TransportResponse:
        """Keep ``request`` in ``requests`` and return ``handler(request)`` (awaited when
        the handler is a coroutine function)."""
        self.requests.append(request)
        answer = self.handler(request)
        if inspect.isawaitable(answer):
            answer = await answer
        return answer

    async def aclose(self) -> None:
        """Mark it closed (the client calls it when it closes)."""
        self.closed = True


class FakeClock(Clock):
    """A clock for tests: a sleep returns at once and moves the time by its length, so a
    retry's backoff or a 429's ``Retry-After`` costs no real time.

    Give it to the client (``clock=``), which asks its clock for every wait it makes (retry
    backoff, ``Retry-After``, the 429 pause of the whole client). ``sleeps`` records each
    wait, for assertions. Each sleep still gives the event loop one turn, as a real one
    does; sleeps of tasks running at once add up, as if each waited alone.

    ```pycon
    >>> clock = FakeClock()
    >>> busy = MockTransport(lambda r: json_response({}, 429, {"Retry-After": "1"}))
    >>> async with PayrollClient(url, "tok", transport=busy, clock=clock) as client:
    ...     await client.get("/v1/payroll-platforms", cast_to=dict)
    Traceback (most recent call last):
    RateLimitError: ...
    >>> clock.sleeps
    [1.0, 1.0, 1.0]
    ```
    """

    def __init__(self, start: float = 0.0) -> None:
        self.time: float = start
        """Its monotonic seconds: ``start``, plus every sleep so far."""
        self.sleeps: list[float] = []
        """Every wait asked of it, in order, in seconds."""

    def now(self) -> float:
        """Its time: no real time passes on it."""
        return self.time

    async def sleep(self, seconds: float) -> None:
        """Move the time on by ``seconds`` (a negative wait by none) and return at once."""
        self.sleeps.append(seconds)
        self.time += max(seconds, 0.0)
        await asyncio.sleep(0)  # the loop's turn, which a real sleep gives


def page_response(
    items: list[Any],
    *,
    offset: int = 0,
    limit: int = 100,
    total: int | None = None,
    headers: Mapping[str, str] | None = None,
) -> TransportResponse:
    """A listing's page in the service's envelope (``data`` and ``meta``): ``items`` (JSON
    objects as the service writes them) from ``offset``, of ``total`` in all (left out: as
    many as ``items``)."""
    meta = {
        "currentCount": len(items),
        "filters": {},
        "limit": limit,
        "offset": offset,
        "sort": "createdAt",
        "totalCount": len(items) if total is None else total,
    }
    return json_response({"data": items, "meta": meta}, headers=headers)


def json_response(
    data: Any, status: int = 200, headers: Mapping[str, str] | None = None
) -> TransportResponse:
    """A `TransportResponse` whose body is ``data`` as JSON (``Content-Type`` set)."""
    return TransportResponse(
        status=status,
        headers={"Content-Type": "application/json", **(headers or {})},
        body=dumps(data),
    )


class EmulatorThread:
    """An emulator serving from an event loop of its own thread.

    ```pycon
    >>> with EmulatorThread(seed=1, payroll_connections=100) as emu:
    ...     requests.get(emu.base_url + "/v1/payroll-connections", ...)
    ```
    """

    def __init__(self, **options: Any) -> None:
        self.loop: asyncio.AbstractEventLoop = asyncio.new_event_loop()
        """The event loop the emulator serves from, on its own thread."""
        self.emulator: Emulator = Emulator(**options)
        """The emulator, started on entering the ``with`` block."""
        self._ready = threading.Event()
        self._failure: BaseException | None = None
        self._thread = threading.Thread(
            target=self._run, name="payroll-async emulator", daemon=True
        )

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        try:
            self.loop.run_until_complete(self.emulator.start())
        except BaseException as exc:  # reported to the thread that waits for the start
            self._failure = exc
            self._ready.set()
            self.loop.close()
            return
        self._ready.set()
        self.loop.run_forever()
        self.loop.run_until_complete(self.emulator.close())
        self.loop.close()

    def __enter__(self) -> Emulator:
        self._thread.start()
        if not self._ready.wait(30):
            raise RuntimeError("the emulator did not start within 30 s")
        if self._failure is not None:
            raise self._failure
        return self.emulator

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(30)
