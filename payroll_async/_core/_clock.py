"""The time source of retry waits and pauses: the loop's monotonic clock, or a test's."""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import Awaitable
from typing import Any, TypeVar

__all__ = ["SYSTEM_CLOCK", "Clock", "abandoning", "bounded", "doubled"]

T = TypeVar("T")


class Clock:
    """Monotonic seconds and an async sleep.

    The SDK asks its clock for every wait it makes (retry backoff, Retry-After, the 429
    pause), so a test can pass one whose time moves only when the code sleeps.

    ```pycon
    >>> class Instant(Clock):
    ...     def __init__(self): self.t = 0.0
    ...     def now(self): return self.t
    ...     async def sleep(self, seconds): self.t += seconds
    >>> client = PayrollClient(url, token, clock=Instant())  # no real waits
    ```
    """

    def now(self) -> float:
        """Monotonic seconds."""
        return time.monotonic()

    async def sleep(self, seconds: float) -> None:
        """Wait ``seconds``."""
        await asyncio.sleep(seconds)


SYSTEM_CLOCK = Clock()


async def bounded(command: Awaitable[T], seconds: float | None) -> T:
    """``await command``, at most ``seconds`` (None: no bound; asyncio.TimeoutError past
    them), in this task: on the paths taken once a request or a notification, no task is
    made for it."""
    if sys.version_info >= (3, 11):
        # asyncio.timeout runs the call in this task; wait_for makes a task of it, which
        # costs about 0.05 ms a call, a tenth of a Redis claim on loopback
        async with asyncio.timeout(seconds):
            return await command
    return await asyncio.wait_for(command, seconds)


def doubled(first: float, attempt: int, longest: float) -> float:
    """``first`` doubled with each attempt after the first (1, 2, ...), at most ``longest``:
    the growth of every backoff the SDK waits (a request's retries, an inbox's events)."""
    try:
        return min(longest, first * 2.0 ** (attempt - 1))
    except OverflowError:  # an attempt past a thousand
        return longest


_ABANDONED: set[asyncio.Task[Any]] = set()
"""Tasks given up on that have not ended yet: held so that they are not collected while
they run (asyncio keeps only weak references to tasks)."""


def _forget(task: asyncio.Task[Any]) -> None:
    _ABANDONED.discard(task)
    if not task.cancelled():
        task.exception()  # retrieved: an abandoned task's failure is nobody's to report


async def abandoning(command: Awaitable[T], seconds: float | None, *, grace: float) -> T:
    """``await command`` in a task of its own, at most ``seconds`` (None: no bound), then
    cancel it and give it ``grace`` seconds to end: past them the task is abandoned (left
    to end on its own, its result or failure dropped) and ``TimeoutError`` is raised all the
    same. Code that swallows ``CancelledError`` can therefore never hold the caller.

    The caller's own cancellation cancels the task too, with the same grace, then goes on.
    """
    loop = asyncio.get_running_loop()
    task: asyncio.Task[T] = asyncio.ensure_future(command)
    # One future woken by the task's end or the timer: what asyncio.wait does, without its
    # set, its second future and its callbacks' bookkeeping (a call pays this on every send).
    waiter: asyncio.Future[None] = loop.create_future()

    def wake(_: object = None) -> None:
        if not waiter.done():
            waiter.set_result(None)

    task.add_done_callback(wake)
    timer = None if seconds is None else loop.call_later(seconds, wake)
    try:
        await waiter
    except asyncio.CancelledError:
        task.remove_done_callback(wake)
        await _give_up(task, grace)
        raise
    finally:
        if timer is not None:
            timer.cancel()
    if task.done():
        return task.result()
    task.remove_done_callback(wake)
    await _give_up(task, grace)
    raise TimeoutError(f"gave up after {seconds} s")


async def _give_up(task: asyncio.Task[T], grace: float) -> None:
    """Cancel ``task`` and wait at most ``grace`` seconds for it to end; abandon it then."""
    task.cancel()
    try:
        await asyncio.wait((task,), timeout=grace)
    finally:
        if task.done():
            _forget(task)
        else:
            _ABANDONED.add(task)
            task.add_done_callback(_forget)
