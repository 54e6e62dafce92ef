"""RedisDedupe: the handled-event memory of a fleet of receivers, on Redis.

Each event id has at most one key, ``{key}:{event_id}``, holding either a lease token (a
random id: one process is handling the event) that expires after ``lease`` seconds
unless renewed, or ``done`` (handled) expiring after ``window`` seconds. Claiming is one
Lua script, so two processes never both claim an event; renewing and releasing are
scripts that act only on the caller's own token, so a process whose lease expired never
extends or deletes the claim of the process that took over.
"""

from __future__ import annotations

import logging
import math
import secrets
from typing import TYPE_CHECKING, Any, NoReturn

from .._core._clock import SYSTEM_CLOCK, Clock, bounded
from .._core._exceptions import CoordinationError
from .._core._validation import check_redis_key, check_seconds
from .._core._visible import visible
from ._redis import Outage, redis_failures

if TYPE_CHECKING:
    from redis.asyncio import Redis

    from ..events import Claim

__all__ = ["RedisDedupe"]

logger = logging.getLogger("payroll_async")

# KEYS: the event's key. ARGV: token, lease in milliseconds.
# Returns 0 (claimed), 1 (done) or 2 (held by another process).
_CLAIM = """
local v = redis.call('GET', KEYS[1])
if v == 'done' then return 1 end
if v then return 2 end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return 0
"""

# KEYS: the event's key. ARGV: token, lease in milliseconds. 1 if renewed, 0 if lost.
_RENEW = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0
"""

# KEYS: the event's key. ARGV: token. Deletes the claim only if it is still the caller's.
_RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""

_CLAIMS: dict[int, Claim] = {0: "claimed", 1: "done", 2: "busy"}


class RedisDedupe:
    """Remembers handled events for every receiver process on one Redis and ``key``.

    ```pycon
    >>> from redis.asyncio import Redis
    >>> from payroll_async.fleet import RedisDedupe
    >>> redis = Redis.from_url("redis://localhost")
    >>> dedupe = RedisDedupe(redis, key="payroll:hooks", window=86400)
    >>> router = EventRouter(secret=os.environ["PAYROLL_WEBHOOK_SECRET"], dedupe=dedupe)
    ```

    An event handled by any of them within ``window`` seconds is acknowledged by all
    without running handlers; a copy that arrives while one of them handles it is answered
    409 (the sender comes back). While Redis is unreachable,
    [`claim()`][payroll_async.fleet.RedisDedupe.claim] raises
    [`CoordinationError`][payroll_async.CoordinationError] and the router answers 503 (and
    Redis is asked again at most once a second); one WARNING is logged on the
    ``payroll_async`` logger per outage, and one INFO when Redis answers again. Keys hold
    only event ids, random claim tokens and ``done``, and all expire.

    Args:
        redis: A ``redis.asyncio.Redis`` of yours: never closed here.
        key: The prefix of the Redis keys: the same for every receiver of one
            subscription (or of several, if their events may be handled by any of them).
        window: Seconds a handled event is remembered (Redis's persistence decides whether
            the memory survives a Redis restart).
        lease: Seconds a claim outlives the process that holds it: a process that dies
            mid-handler blocks its event that long; a live one renews its claim every
            ``lease / 3`` seconds until the completion is recorded, so a Redis stall
            shorter than ``lease`` never gets an event handled twice.
        timeout: The longest one Redis call may take, in seconds.
        clock: The time source of the once-a-second retry while Redis is down.
    """

    def __init__(
        self,
        redis: Redis,
        *,
        key: str,
        window: float = 86400.0,
        lease: float = 30.0,
        timeout: float = 1.0,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        check_redis_key(key)
        window = check_seconds(window, "window")
        lease = check_seconds(lease, "lease")
        timeout = check_seconds(timeout, "timeout")
        self.key: str = key
        """The prefix of the Redis keys."""
        self.window: float = float(window)
        """Seconds a handled event is remembered."""
        self.lease: float = float(lease)
        """Seconds a claim outlives the process that holds it (renewed every third)."""
        self.timeout: float = float(timeout)
        """The longest one Redis call may take, in seconds."""
        self._redis = redis
        self._clock = clock
        self._window_ms = max(1, math.ceil(self.window * 1000))
        self._lease_ms = max(1, math.ceil(self.lease * 1000))
        self._claim = redis.register_script(_CLAIM)
        self._renew = redis.register_script(_RENEW)
        self._release = redis.register_script(_RELEASE)
        self._held: dict[str, str] = {}  # event id -> this process's claim token
        self._outage = Outage(clock, f"the receivers' memory {self.key!r}")

    def __repr__(self) -> str:
        state = "down" if self._outage.down else "up"
        return f"<RedisDedupe key={self.key!r} window={self.window:g} {state}>"

    async def claim(self, event_id: str) -> Claim:
        """``"claimed"`` for this process, ``"done"`` (handled) or ``"busy"`` (elsewhere)."""
        if self._outage.waiting():
            raise CoordinationError(f"the receivers' memory {self.key!r} cannot reach Redis")
        token = secrets.token_hex(8)
        answer = await self._call(
            self._claim(keys=[self._key_of(event_id)], args=[token, self._lease_ms])
        )
        claim = _CLAIMS.get(answer) if isinstance(answer, int) else None
        if claim is None:
            self._failed(f"an unexpected answer of type {type(answer).__name__}")
        if claim == "claimed":
            self._held[event_id] = token
        return claim

    async def renew(self, event_id: str) -> None:
        """Extend this process's claim of ``event_id`` by ``lease`` seconds."""
        token = self._held.get(event_id)
        if token is None:
            return
        kept = await self._call(
            self._renew(keys=[self._key_of(event_id)], args=[token, self._lease_ms])
        )
        if kept != 1 and self._held.get(event_id) == token:
            logger.warning(
                "the claim of notification %s expired before its handlers finished (was "
                "this process stalled for %gs?): another receiver may run it too",
                visible(event_id),  # what a sender wrote: no control codes in a log line
                self.lease,
            )

    async def complete(self, event_id: str) -> None:
        """``event_id`` was handled: acknowledged by the whole fleet for ``window`` seconds.

        The claim is this process's (and renewed) until this succeeds: the router calls it
        again after a failure, while the claim lasts.
        """
        await self._call(self._redis.set(self._key_of(event_id), "done", px=self._window_ms))
        self._held.pop(event_id, None)

    async def release(self, event_id: str) -> None:
        """Handling failed: drop this process's claim, so that a redelivery runs again."""
        token = self._held.pop(event_id, None)
        if token is not None:
            await self._call(self._release(keys=[self._key_of(event_id)], args=[token]))

    def _key_of(self, event_id: str) -> str:
        """The Redis key of ``event_id``'s claim or record."""
        return f"{self.key}:{event_id}"

    async def _call(self, command: Any) -> Any:
        failure: str | None = None
        try:
            result = await bounded(command, self.timeout)
        except redis_failures() as exc:
            failure = type(exc).__name__  # only its kind: see redis_failures()
        if failure is not None:
            self._failed(failure)
        self._outage.answered()
        return result

    def _failed(self, reason: str) -> NoReturn:
        meanwhile = "notifications are answered 503, to be delivered again"
        self._outage.failed("cannot reach Redis", reason, meanwhile)
        raise CoordinationError(f"the receivers' memory {self.key!r} cannot reach Redis ({reason})")
