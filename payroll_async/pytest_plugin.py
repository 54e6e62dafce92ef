"""The pytest plugin: a started emulator and a client of it, for your tests.

Installed with the package and active in every pytest run (entry point ``pytest11``):

```python
@pytest.mark.asyncio
async def test_my_export(payroll_client):
    conns = await payroll_client.payroll_connections.list(max_items=5).collect()
    assert len(conns) == 5

@pytest.mark.payroll_emulator(seed=7, payroll_connections=40, rate_limit=5)
def test_with_a_smaller_service(payroll_emulator):
    assert payroll_emulator.data.payroll_connections.size == 40
```

Fixtures:

- ``payroll_emulator``: a started [`Emulator`][payroll_async.emulator.Emulator], serving on
  its own thread (so that sync and async tests can both use it); options from the
  ``payroll_emulator`` marker (any keyword of ``Emulator``); closed after the test.
- ``payroll_client``: a [`PayrollClient`][payroll_async.PayrollClient] of that emulator, made in
  the test's event loop and closed after the test (needs pytest-asyncio, as async tests
  do anyway).
- ``payroll_emulator_factory``: ``start(**options) -> Emulator``, for several emulators
  or options known only in the test.

What needs no pytest (``EmulatorThread``, ``MockTransport``) is in ``payroll_async.testing``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import pytest

from .emulator import Emulator
from .testing import EmulatorThread

__all__ = ["payroll_client", "payroll_emulator", "payroll_emulator_factory", "pytest_configure"]


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "payroll_emulator(**options): options of the payroll_emulator fixture's Emulator "
        "(seed, payroll_connections, rate_limit, error_rate, latency, ...)",
    )


@pytest.fixture
def payroll_emulator_factory() -> Iterator[Callable[..., Emulator]]:
    """``start(**options)``: a started Emulator per call, each closed after the test."""
    running: list[EmulatorThread] = []

    def start(**options: Any) -> Emulator:
        thread = EmulatorThread(**options)
        emulator = thread.__enter__()
        running.append(thread)
        return emulator

    yield start
    for thread in reversed(running):
        thread.__exit__(None, None, None)


@pytest.fixture
def payroll_emulator(
    request: pytest.FixtureRequest, payroll_emulator_factory: Callable[..., Emulator]
) -> Emulator:
    """A started Emulator, with the options of the test's ``payroll_emulator`` marker."""
    marker = request.node.get_closest_marker("payroll_emulator")
    options = dict(marker.kwargs) if marker is not None else {}
    return payroll_emulator_factory(**options)


def _client_fixture() -> Any:
    try:
        import pytest_asyncio
    except ImportError:  # pragma: no cover - exercised where pytest-asyncio is not installed

        @pytest.fixture(name="payroll_client")
        def needs_pytest_asyncio(payroll_emulator: Emulator) -> Any:
            pytest.fail(
                "the payroll_client fixture needs pytest-asyncio (pip install pytest-asyncio)"
            )

        return needs_pytest_asyncio

    @pytest_asyncio.fixture
    async def payroll_client(payroll_emulator: Emulator) -> AsyncIterator[Any]:
        """A PayrollClient of ``payroll_emulator``, closed after the test."""
        from . import PayrollClient

        async with PayrollClient(payroll_emulator.base_url, payroll_emulator.token) as client:
            yield client

    return payroll_client


payroll_client: Callable[..., object] = _client_fixture()
