"""The one helper that runs work in a task and abandons it after a grace."""

from __future__ import annotations

import asyncio

import pytest

from payroll_async._core._clock import abandoning


@pytest.mark.asyncio
async def test_the_result_comes_back_in_time() -> None:
    async def quick() -> int:
        return 7

    assert await abandoning(quick(), 5.0, grace=0.1) == 7


@pytest.mark.asyncio
async def test_a_failure_is_raised_as_it_is() -> None:
    async def fails() -> None:
        raise ValueError("boom")

    with pytest.raises(ValueError, match="boom"):
        await abandoning(fails(), 5.0, grace=0.1)


@pytest.mark.asyncio
async def test_work_that_swallows_cancellation_cannot_hold_the_caller() -> None:
    started = asyncio.Event()
    release = asyncio.Event()
    ended = asyncio.Event()

    async def stubborn() -> None:
        started.set()
        while True:
            try:
                await release.wait()
                break
            except asyncio.CancelledError:
                continue  # refuses to end
        ended.set()

    with pytest.raises(TimeoutError):
        await abandoning(stubborn(), 0.01, grace=0.01)
    assert started.is_set()
    assert not ended.is_set()
    release.set()  # the abandoned task goes on and ends on its own
    await asyncio.wait_for(ended.wait(), 5)


@pytest.mark.asyncio
async def test_work_that_obeys_cancellation_ends_within_the_grace() -> None:
    cancelled = asyncio.Event()

    async def obedient() -> None:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.set()
            raise

    with pytest.raises(TimeoutError):
        await abandoning(obedient(), 0.01, grace=5.0)
    assert cancelled.is_set()


@pytest.mark.asyncio
async def test_the_callers_cancellation_reaches_the_work() -> None:
    started = asyncio.Event()
    cancelled = asyncio.Event()

    async def work() -> None:
        started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.set()
            raise

    outer = asyncio.create_task(abandoning(work(), None, grace=5.0))
    await started.wait()
    outer.cancel()
    with pytest.raises(asyncio.CancelledError):
        await outer
    assert cancelled.is_set()
