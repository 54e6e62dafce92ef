"""A fleet of processes as one client: a shared 429 pause and request budget on Redis.

```pycon
>>> from redis.asyncio import Redis
>>> from payroll_async.fleet import RedisGate
>>> redis = Redis.from_url("redis://localhost")
>>> gate = RedisGate(redis, key="payroll:acme", rate=50)
>>> async with PayrollClient(..., gate=gate) as client:  # in every worker
...     ...
```

Every client of every process made with the same Redis and ``key`` shares one pause
(after any of them gets a 429 with Retry-After, none sends before that time) and, with
``rate``, one budget of requests per second, spread evenly (GCRA, no burst beyond one
request). Each decision is one Lua script that reads Redis's own clock (``TIME``), never
the workers' clocks. Every key starts with ``key``, expires, and holds only timestamps.

When Redis is unreachable or failing, requests go on through the process's own gate (the
in-process pause, and ``rate`` per process): one WARNING is logged on the
``payroll_async`` logger per outage, and one INFO when Redis answers again. With
``on_error="raise"`` a [`CoordinationError`][payroll_async.CoordinationError] is raised instead. A
Redis call never
holds a request longer than ``timeout`` seconds, and while Redis is down it is asked again
at most once a second. Redis never holds a request longer than ``max_wait`` seconds in all
(60, as ``RetryPolicy.max_retry_after``): a wait beyond it can only come from stray data at
the gate's keys (a far-future expiry or a foreign value), and is treated as a Redis failure
and logged, as are a reply of the wrong type and a reply that redis-py cannot parse.

Needs the ``redis`` extra (redis-py's asyncio client). The Redis client is the caller's:
the gate never closes it.
"""

from ._gate import RedisGate, default_key
from ._redis_dedupe import RedisDedupe

__all__ = ["RedisDedupe", "RedisGate", "default_key"]
