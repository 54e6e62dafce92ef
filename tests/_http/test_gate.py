"""The Gate protocol and LocalGate: the shared pause, the request budget, custom gates."""

from __future__ import annotations

import math

import pytest
from aioresponses import aioresponses

from payroll_async import Gate, InvalidArgumentError, LocalGate, PayrollClient
from tests import factories
from tests.conftest import BASE, LIST, TOKEN, FakeClock


async def test_a_rate_spreads_requests_evenly(clock: FakeClock) -> None:
    gate = LocalGate(rate=10, clock=clock)
    start = clock.now()
    for _ in range(5):
        await gate.acquire()
    assert clock.now() - start == pytest.approx(0.4)  # the first at once, then every 0.1 s


async def test_a_pause_holds_back_and_a_later_pause_only_extends(clock: FakeClock) -> None:
    gate = LocalGate(clock=clock)
    await gate.pause(5)
    await gate.pause(2)  # shorter: no effect
    assert not gate.is_open()
    start = clock.now()
    await gate.acquire()
    assert clock.now() - start == pytest.approx(5)
    assert gate.is_open()


@pytest.mark.parametrize("rate", [0, -1, math.inf, math.nan, True, "5"])
def test_a_bad_rate_is_a_typed_error(rate: object) -> None:
    with pytest.raises(InvalidArgumentError, match="rate"):
        LocalGate(rate=rate)  # type: ignore[arg-type]


class Recording:
    """A custom gate: anything with acquire() and pause(seconds)."""

    def __init__(self) -> None:
        self.acquired = 0
        self.paused: list[float] = []

    async def acquire(self) -> None:
        self.acquired += 1

    async def pause(self, seconds: float) -> None:
        self.paused.append(seconds)


async def test_every_request_passes_a_custom_gate_and_a_429_reaches_it(
    mock_api: aioresponses, clock: FakeClock
) -> None:
    gate = Recording()
    assert isinstance(gate, Gate)
    mock_api.get(LIST, status=429, headers={"Retry-After": "3"})
    mock_api.get(LIST, payload=factories.envelope([factories.connection(1)]))
    async with PayrollClient(BASE, TOKEN, gate=gate, clock=clock) as client:
        assert len(await client.payroll_connections.list().collect()) == 1
        assert client.with_options(timeout=5).gate is gate  # copies share the gate
    assert gate.acquired == 2
    assert gate.paused == [3.0]
    assert clock.sleeps[0] == 3.0  # the in-process pause applied too


async def test_clients_given_one_local_gate_share_its_budget(
    mock_api: aioresponses, clock: FakeClock
) -> None:
    gate = LocalGate(rate=2, clock=clock)
    mock_api.get(LIST, payload=factories.envelope([]), repeat=True)
    async with (
        PayrollClient(BASE, TOKEN, gate=gate, clock=clock) as a,
        PayrollClient(BASE, TOKEN, gate=gate, clock=clock) as b,
    ):
        start = clock.now()
        for client in (a, b, a, b):
            await client.payroll_connections.list().collect()
    assert clock.now() - start == pytest.approx(1.5)  # 4 requests at 2 a second


def test_something_that_is_not_a_gate_is_refused() -> None:
    with pytest.raises(InvalidArgumentError, match="gate"):
        PayrollClient(BASE, TOKEN, gate=object())  # type: ignore[arg-type]
