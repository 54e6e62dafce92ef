"""RedisGate: the one 429 pause and request budget a fleet of processes shares on Redis
(the package's face, ``payroll_async.fleet``, says how it behaves)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Literal

from .._core._clock import SYSTEM_CLOCK, Clock, bounded
from .._core._exceptions import CoordinationError, InvalidArgumentError
from .._core._types import RetryPolicy
from .._core._validation import check_redis_key, check_seconds
from .._http._gate import LocalGate, check_rate
from ._redis import Outage, redis_failures

if TYPE_CHECKING:
    from redis.asyncio import Redis

__all__ = ["RedisGate", "default_key"]


# KEYS: pause, tat. ARGV: interval in microseconds (0: no budget), max_wait in microseconds.
# Returns the microseconds to wait before asking again, 0 when the request may go now, -1
# when tat holds what no gate writes (not a number, another type, or beyond max_wait).
_ACQUIRE = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local pause = redis.call('PTTL', KEYS[1])
if pause > 0 then return pause * 1000 end
local interval = tonumber(ARGV[1])
if interval <= 0 then return 0 end
local raw = redis.pcall('GET', KEYS[2])
if type(raw) == 'table' then return -1 end
local tat = tonumber(raw or '0')
if tat == nil or tat - now > tonumber(ARGV[2]) then return -1 end
if tat < now then tat = now end
if tat - now > interval then return tat - now - interval end
tat = tat + interval
redis.call('SET', KEYS[2], string.format('%d', tat), 'PX', math.floor((tat - now) / 1000) + 1000)
return 0
"""

# KEYS: pause. ARGV: milliseconds. Extends the pause, never shortens it.
_PAUSE = """
local ms = tonumber(ARGV[1])
local current = redis.call('PTTL', KEYS[1])
if current < ms then redis.call('SET', KEYS[1], '1', 'PX', ms) end
return current
"""

_LONGEST_WAIT_US = 60_000_000  # a wait Redis asks for is checked again at least every minute


def default_key(base_url: str) -> str:
    """The gate key of every client of one service: derived from its origin, never a token.

    ```pycon
    >>> default_key("https://api.example.com/")
    'payroll-async:https://api.example.com'
    ```
    """
    from yarl import URL

    try:
        origin = str(URL(base_url).origin())
    except ValueError:
        raise InvalidArgumentError(f"not an absolute URL: {base_url!r}") from None
    return f"payroll-async:{origin}"[:200]


class RedisGate:
    """One 429 pause and one request budget for every process that uses ``key``.

    Args:
        redis: A ``redis.asyncio.Redis`` of yours: the gate never closes it.
        key: The prefix of the gate's Redis keys: the same for every client of one
            service and token ([`default_key`][payroll_async.fleet.default_key] derives one).
        rate: Requests per second for the whole fleet; None: no budget, only the shared
            pause.
        on_error: When Redis cannot be asked: ``"local"`` goes on with the process's own
            gate; ``"raise"`` raises [`CoordinationError`][payroll_async.CoordinationError].
        timeout: The longest one Redis call may take, in seconds.
        max_wait: The longest Redis may hold one request in all, in seconds (use your
            ``RetryPolicy.max_retry_after``); a longer wait can only come from stray data
            at the keys, and is logged and handled as a Redis failure.
        clock: The time source of the waits (tests pass a virtual one).
    """

    def __init__(
        self,
        redis: Redis,
        *,
        key: str,
        rate: float | None = None,
        on_error: Literal["local", "raise"] = "local",
        timeout: float = 0.25,
        max_wait: float = RetryPolicy().max_retry_after,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        check_redis_key(key)
        if on_error not in ("local", "raise"):
            raise InvalidArgumentError(f'on_error must be "local" or "raise", got {on_error!r}')
        timeout = check_seconds(timeout, "timeout")
        max_wait = check_seconds(max_wait, "max_wait", zero=True)
        self.key: str = key
        """The prefix of the gate's Redis keys."""
        self.rate: float | None = check_rate(rate)
        """The fleet's requests per second (None: no budget)."""
        self.on_error: Literal["local", "raise"] = on_error
        """What happens when Redis cannot be asked: ``"local"`` or ``"raise"``."""
        self.timeout: float = float(timeout)
        """The longest one Redis call may take, in seconds."""
        self.max_wait: float = float(max_wait)
        """The longest Redis may hold one request in all, in seconds."""
        self._max_wait_us = round(self.max_wait * 1_000_000)
        self._redis = redis
        self._clock = clock
        self._keys = [f"{key}:pause", f"{key}:tat"]
        self._interval_us = 0 if self.rate is None else max(1, round(1_000_000 / self.rate))
        self._acquire = redis.register_script(_ACQUIRE)
        self._pause = redis.register_script(_PAUSE)
        self._fallback = LocalGate(rate=self.rate, clock=clock)
        self._outage = Outage(clock, f"the fleet's gate {self.key!r}")

    def __repr__(self) -> str:
        state = "down: using the local gate" if self._outage.down else "up"
        return f"<RedisGate key={self.key!r} rate={self.rate} {state}>"

    async def acquire(self) -> None:
        """Wait until the fleet's pause is over and this request's slot in the budget."""
        # Every wait Redis asks for counts against one deadline: no data at the keys, however
        # stray, holds this request longer than max_wait.
        deadline = self._clock.now() + self.max_wait
        while True:
            try:
                answer = await self._call(
                    self._acquire, self._keys, [self._interval_us, self._max_wait_us]
                )
                if isinstance(answer, bool) or not isinstance(answer, int):
                    self._failed(
                        f"an unexpected answer of type {type(answer).__name__}",
                        "cannot trust Redis",
                    )
                    raise _Unavailable
                if answer < 0:
                    self._failed(
                        f"{self._keys[1]!r} holds a value no gate wrote", "cannot trust Redis"
                    )
                    raise _Unavailable
                if answer > 0 and self._clock.now() + answer / 1_000_000 > deadline:
                    self._failed(
                        f"Redis asks for a wait of {answer / 1_000_000:.0f}s, beyond "
                        f"max_wait={self.max_wait:g}s: stray data at {self.key!r}:*",
                        "cannot trust Redis",
                    )
                    raise _Unavailable
            except _Unavailable:
                await self._fallback.acquire()
                return
            self._outage.answered()
            wait_us = min(answer, _LONGEST_WAIT_US)  # asked again after that
            if wait_us <= 0:
                return
            await self._clock.sleep(wait_us / 1_000_000)

    async def pause(self, seconds: float) -> None:
        """No request of the fleet before ``seconds`` from now."""
        await self._fallback.pause(seconds)
        milliseconds = max(1, math.ceil(seconds * 1000))
        try:
            await self._call(self._pause, self._keys[:1], [milliseconds])
        except _Unavailable:
            return
        self._outage.answered()

    async def _call(self, script: Any, keys: list[str], args: list[int]) -> Any:
        if self._outage.waiting() and self.on_error == "local":
            raise _Unavailable
        failure: str | None = None
        try:
            result = await bounded(script(keys=keys, args=args), self.timeout)
        except redis_failures() as exc:
            failure = type(exc).__name__  # only its kind: see redis_failures()
        if failure is not None:
            self._failed(failure)
            raise _Unavailable
        return result

    def _failed(self, reason: str, problem: str = "cannot reach Redis") -> None:
        if self.on_error == "raise":
            raise CoordinationError(
                f"the fleet's gate {self.key!r} {problem} ({reason}); nothing was sent"
            )
        budget = f" and {self.rate:g} requests/s" if self.rate else ""
        meanwhile = f"requests go on with this process's own pause{budget}"
        self._outage.failed(problem, reason, meanwhile)


class _Unavailable(Exception):
    """Redis did not answer in time or failed; the local gate decides."""
