"""Receiver processes sharing one RedisDedupe: every event handled exactly once.

Each receiver is a real process (``_receiver.py``) on its own port; the test is the
sender, delivering copies to any of them and coming back after a 409 or 503, as a
sender does. What was handled, and by which process, is read from a file the receivers
append to.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import random
import signal
import sys
import time
import uuid
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import aiohttp
import pytest

from tests.fleet.conftest import RedisServer

RECEIVER = Path(__file__).with_name("_receiver.py")
ROOT = Path(__file__).parents[2]
HEADERS = {"X-Test-Secret": "fleet", "Content-Type": "application/json"}


class Receiver:
    """One receiver process: its port, its pid, and the lines it prints."""

    def __init__(self, process: asyncio.subprocess.Process, port: int) -> None:
        self.process = process
        self.port = port
        self.url = f"http://127.0.0.1:{port}/hooks"

    async def started(self) -> str:
        """The id of the next event whose handler started holding."""
        assert self.process.stdout is not None
        line = await asyncio.wait_for(self.process.stdout.readline(), 30)
        started: str = json.loads(line)["started"]
        return started

    async def release(self, event_id: str) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(f"release {event_id}\n".encode())
        await self.process.stdin.drain()

    def kill(self) -> None:
        self.process.send_signal(signal.SIGKILL)


Start = Callable[..., Awaitable[Receiver]]


@pytest.fixture
async def fleet(redis_server: RedisServer, tmp_path: Path) -> AsyncIterator[Start]:
    key = f"hooks:{uuid.uuid4().hex}"
    started: list[asyncio.subprocess.Process] = []  # from the moment each is started

    async def start(*, lease: float = 30.0, hold: bool = False, timeout: float = 1.0) -> Receiver:
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            str(RECEIVER),
            redis_server.url,
            key,
            str(lease),
            str(tmp_path / "handled.log"),
            "1" if hold else "0",
            str(timeout),
            cwd=ROOT,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
        )
        started.append(process)
        assert process.stdout is not None
        line = await asyncio.wait_for(process.stdout.readline(), 60)
        return Receiver(process, json.loads(line)["port"])

    async def stop(process: asyncio.subprocess.Process) -> None:
        if process.returncode is None:
            assert process.stdin is not None
            process.stdin.close()  # the receiver shuts down cleanly
            try:
                await asyncio.wait_for(process.wait(), 30)
            except asyncio.TimeoutError:
                process.kill()
                await process.wait()

    yield start  # a test starts its receivers together (asyncio.gather): they start at once
    await asyncio.gather(*(stop(process) for process in started))


def handled(tmp_path: Path) -> list[tuple[str, int]]:
    path = tmp_path / "handled.log"
    if not path.exists():
        return []
    lines = path.read_text().splitlines()
    return [(event_id, int(pid)) for event_id, pid in (line.split() for line in lines)]


def payload(event_id: str) -> bytes:
    return json.dumps(
        {"eventId": event_id, "eventType": "PAYROLL_PROCESSED", "data": {"n": event_id}}
    ).encode()


async def deliver(session: aiohttp.ClientSession, receiver: Receiver, event_id: str) -> int:
    async with session.post(receiver.url, data=payload(event_id), headers=HEADERS) as response:
        if response.status in (409, 503):
            assert response.headers["Retry-After"] == "5"
        return response.status


async def deliver_until_acknowledged(
    session: aiohttp.ClientSession, receivers: list[Receiver], event_id: str, seed: int
) -> list[int]:
    """A sender: delivers to any receiver until one answers 2xx (comes back after 409/503).

    It waits 20 ms, not the 5 s of Retry-After, between attempts so the test stays short.
    """
    pick = random.Random(seed)
    answers = []
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        answers.append(await deliver(session, pick.choice(receivers), event_id))
        if answers[-1] == 200:
            return answers
        assert answers[-1] in (409, 503), answers
        await asyncio.sleep(0.02)
    raise AssertionError(f"{event_id} was never acknowledged: {answers}")


async def test_redeliveries_and_concurrent_copies_are_handled_once(
    fleet: Start, tmp_path: Path
) -> None:
    receivers = list(await asyncio.gather(fleet(), fleet(), fleet()))
    pick = random.Random(22)
    events = [f"evt-{n}" for n in range(120)]
    # every event 1 to 3 times, the copies sent at once to random receivers, and
    # redelivered later too
    copies = [event_id for event_id in events for _ in range(pick.randint(1, 3))]
    pick.shuffle(copies)
    async with aiohttp.ClientSession() as session:
        answers = await asyncio.gather(
            *(
                deliver_until_acknowledged(session, receivers, event_id, seed)
                for seed, event_id in enumerate(copies)
            )
        )
        late = [await deliver(session, pick.choice(receivers), e) for e in events[:30]]
    assert late == [200] * 30
    counts = Counter(event_id for event_id, _ in handled(tmp_path))
    assert counts == Counter(events)  # each exactly once
    pids = {pid for _, pid in handled(tmp_path)}
    assert pids == {r.process.pid for r in receivers}  # every process took part
    assert sum(len(a) for a in answers) >= len(copies)


async def test_a_copy_arriving_while_another_process_handles_it_gets_409(
    fleet: Start, tmp_path: Path
) -> None:
    holder, other = await asyncio.gather(fleet(hold=True), fleet())
    async with aiohttp.ClientSession() as session:
        first = asyncio.create_task(deliver(session, holder, "hold-1"))
        assert await holder.started() == "hold-1"
        assert await deliver(session, other, "hold-1") == 409  # not run in parallel
        assert handled(tmp_path) == []
        await holder.release("hold-1")
        assert await first == 200
        assert await deliver(session, other, "hold-1") == 200  # the retry is acknowledged
    assert handled(tmp_path) == [("hold-1", holder.process.pid)]


async def test_a_killed_handler_process_does_not_block_the_event(
    fleet: Start, tmp_path: Path
) -> None:
    # 2 s: a loaded machine may take a while between the kill and the next delivery
    holder, other = await asyncio.gather(fleet(hold=True, lease=2.0), fleet(lease=2.0))
    async with aiohttp.ClientSession() as session:
        first = asyncio.create_task(deliver(session, holder, "hold-2"))
        assert await holder.started() == "hold-2"
        holder.kill()  # mid-handler: its lease is renewed no more
        await holder.process.wait()
        with pytest.raises(aiohttp.ClientError):
            await first
        answers = await deliver_until_acknowledged(session, [other], "hold-2", 0)
    assert answers[0] == 409  # held until the dead process's lease expired
    assert answers[-1] == 200
    assert handled(tmp_path) == [("hold-2", other.process.pid)]


async def test_a_held_lease_is_renewed_past_its_length(fleet: Start, tmp_path: Path) -> None:
    # The handler holds for two lease lengths: renewed, the claim is never taken over.
    # renewed every 0.33 s: the holder may stall up to 0.67 s (a loaded machine) and keep it
    holder, other = await asyncio.gather(fleet(hold=True, lease=1.0), fleet(lease=1.0))
    async with aiohttp.ClientSession() as session:
        first = asyncio.create_task(deliver(session, holder, "hold-3"))
        assert await holder.started() == "hold-3"
        deadline = time.monotonic() + 2.0  # two lease lengths
        while time.monotonic() < deadline:
            assert await deliver(session, other, "hold-3") == 409
            await asyncio.sleep(0.05)
        await holder.release("hold-3")
        assert await first == 200
        assert await deliver(session, other, "hold-3") == 200
    assert handled(tmp_path) == [("hold-3", holder.process.pid)]


async def test_a_redis_restart_answers_503_then_handles_each_event_once(
    fleet: Start, redis_server: RedisServer, tmp_path: Path
) -> None:
    receivers = list(await asyncio.gather(fleet(), fleet()))
    events = [f"down-{n}" for n in range(20)]
    async with aiohttp.ClientSession() as session:
        assert await deliver(session, receivers[0], "before") == 200
        redis_server.stop()
        down = [await deliver(session, receivers[n % 2], e) for n, e in enumerate(events)]
        assert down == [503] * len(events)  # nothing lost: the sender comes back
        assert handled(tmp_path) == [("before", receivers[0].process.pid)]
        redis_server.start()  # back, empty (no persistence), on the same port
        await asyncio.gather(
            *(
                deliver_until_acknowledged(session, receivers, e, seed)
                for seed, e in enumerate(events * 2)  # each event twice, at once
            )
        )
    counts = Counter(event_id for event_id, _ in handled(tmp_path))
    assert counts == Counter(["before", *events])


# A Lua script that keeps Redis busy (every other client waits) for ARGV[1] microseconds.
_BUSY = """
local t = redis.call('TIME')
local stop = tonumber(t[1]) * 1000000 + tonumber(t[2]) + tonumber(ARGV[1])
repeat
  t = redis.call('TIME')
until tonumber(t[1]) * 1000000 + tonumber(t[2]) >= stop
return 0
"""


# The stall test's receivers: each Redis call bounded at TIMEOUT, a claim's lease LEASE. A
# stall of 1 s is three timeouts long; the lease outlasts it by 2.5 s: a claim renewed just
# before the stall (a third of the lease, 1.17 s) is still held when the stall ends, with
# 1.33 s left for the completion tried again (within 0.4 s: the router's backoff) and one
# more call.
TIMEOUT = 0.3
LEASE = 3.5


@contextlib.asynccontextmanager
async def frozen(redis_server: RedisServer) -> AsyncIterator[None]:
    """Redis stopped (SIGSTOP) for 1 s: nothing answered, keys expire on its clock."""
    redis_server.freeze()
    try:
        yield
        await asyncio.sleep(1.0)  # the stall itself, not a synchronisation
    finally:
        redis_server.thaw()


@contextlib.asynccontextmanager
async def one_slow_command(redis_server: RedisServer) -> AsyncIterator[None]:
    """One command that takes Redis 0.75 s, which answers nothing else meanwhile."""
    from redis.asyncio import Redis

    redis = Redis.from_url(redis_server.url)
    try:
        slow = asyncio.create_task(redis.eval(_BUSY, 0, 750_000))  # type: ignore[arg-type]
        await asyncio.sleep(0.1)  # sent, and running (the script holds Redis from here)
        yield
        await slow
    finally:
        await redis.aclose()


@pytest.mark.parametrize("stall", [frozen, one_slow_command])
async def test_a_redis_stall_mid_run_never_gets_an_event_handled_twice(
    fleet: Start,
    redis_server: RedisServer,
    tmp_path: Path,
    stall: Callable[[RedisServer], contextlib.AbstractAsyncContextManager[None]],
) -> None:
    # Redis stops answering (frozen by SIGSTOP for 1 s, or busy with one 0.75 s command)
    # while three receivers handle three concurrent copies of each event: claims,
    # renewals and the recording of completions meet the stall. A completion that could
    # not be recorded at once must be recorded later, the claim kept meanwhile: never
    # answered 200 and then run again by a copy once the claim expired.
    receivers = list(
        await asyncio.gather(*(fleet(lease=LEASE, hold=True, timeout=TIMEOUT) for _ in range(3)))
    )
    events = [f"frozen-{n}" for n in range(45)]
    copies = [event_id for event_id in events for _ in range(3)]
    random.Random(9).shuffle(copies)
    acknowledged = 0
    some_acknowledged = asyncio.Event()

    async def sender(session: aiohttp.ClientSession, event_id: str, seed: int) -> None:
        nonlocal acknowledged
        await deliver_until_acknowledged(session, receivers, event_id, seed)
        acknowledged += 1
        if acknowledged >= 5:  # mid-run: some acknowledged, most still to come
            some_acknowledged.set()

    async with aiohttp.ClientSession() as session:
        # one event whose handler finishes while Redis is frozen: its completion meets it
        held = asyncio.create_task(deliver(session, receivers[0], "hold-frozen"))
        assert await receivers[0].started() == "hold-frozen"
        sending = asyncio.gather(
            *(sender(session, event_id, seed) for seed, event_id in enumerate(copies)),
            *(sender(session, "hold-frozen", 1000 + n) for n in range(2)),
        )
        await some_acknowledged.wait()
        async with stall(redis_server):
            await receivers[0].release("hold-frozen")  # it completes during the stall
        await sending
        assert await held == 200  # recorded once Redis answered again, within the lease
    counts = Counter(event_id for event_id, _ in handled(tmp_path))
    assert counts == Counter([*events, "hold-frozen"])  # each exactly once
