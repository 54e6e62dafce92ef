"""Writes that arrive together, committed together: one transaction for many callers.

A commit waits for the database's disk (PostgreSQL's WAL flush, SQLite's write lock); a
receiver with 60 notifications in flight would wait for 60 of them one after another.
``Batched`` lets each caller wait for its own item's result while the items that arrived
during one commit go into the next one, as a single statement: the cost of a commit is
shared by however many arrived, and one caller alone still waits for one commit only.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import Generic, TypeVar

import attrs

__all__ = ["Batched", "Failed"]

T = TypeVar("T")
R = TypeVar("R")


@attrs.frozen
class Failed:
    """A result of ``flush`` for one item that failed alone: its caller gets ``error``."""

    error: Exception


class Batched(Generic[T, R]):
    """``await batched(item)``: the result ``flush`` gave ``item``, in a batch of others.

    ``flush(items)`` returns one result per item, in order (a ``Failed`` one is raised to
    that item's caller alone), or raises; its exception is each caller's. A caller
    cancelled while waiting is left out of its batch if that batch has not started.
    """

    def __init__(
        self, flush: Callable[[list[T]], Awaitable[Sequence[R | Failed]]], limit: int = 500
    ) -> None:
        self._flush = flush
        self._limit = limit
        self._queue: list[tuple[T, asyncio.Future[R]]] = []
        self._task: asyncio.Task[None] | None = None

    async def __call__(self, item: T) -> R:
        future: asyncio.Future[R] = asyncio.get_running_loop().create_future()
        self._queue.append((item, future))
        if self._task is None or self._task.done():
            self._task = asyncio.ensure_future(self._run())
        return await future

    async def _run(self) -> None:
        while self._queue:
            batch = [entry for entry in self._queue[: self._limit] if not entry[1].done()]
            del self._queue[: self._limit]
            if not batch:
                continue
            try:
                results = await self._flush([item for item, _ in batch])
            except Exception as exc:
                for _, future in batch:
                    if not future.done():
                        future.set_exception(exc)
                        future.exception()  # retrieved: a caller cancelled meanwhile is gone
                continue
            except BaseException:  # this task cancelled (the loop ends): no caller hangs
                for _, future in [*batch, *self._queue]:
                    future.cancel()
                self._queue.clear()
                raise
            for (_, future), result in zip(batch, results, strict=True):
                if future.done():
                    continue
                if isinstance(result, Failed):
                    future.set_exception(result.error)
                    future.exception()  # retrieved, as above
                else:
                    future.set_result(result)
