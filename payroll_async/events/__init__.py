"""Receiving webhook notifications: parse, verify, deduplicate and route them.

```pycon
>>> from payroll_async import EventType
>>> from payroll_async.events import EventRouter, WebhookEvent
>>> router = EventRouter(secret=os.environ["PAYROLL_WEBHOOK_SECRET"])   # "whsec_..."
>>> @router.on(EventType.PAYROLL_PROCESSED)
... async def on_payroll(event: WebhookEvent) -> None:
...     print(event.event_id, event.data)
>>> app = router.app(path="/hooks")          # an aiohttp.web.Application
>>> asgi = router.asgi(path="/hooks")        # or an ASGI 3 app (uvicorn, FastAPI, Starlette)
```

In any other framework, ``event = unwrap(body, headers, secret=...)`` verifies and parses one
notification (``verify()`` only verifies), and ``await router.receive(body, headers)``
gives the router's whole answer as a [`Reply`][payroll_async.events.Reply].

Delivery semantics a receiver needs:

- with ``secret=`` every notification must carry a valid Standard Webhooks signature
  (``webhook-id``, ``webhook-timestamp`` within ``tolerance`` seconds, ``webhook-signature``:
  ``v1`` for ``whsec_`` secrets, ``v1a`` for ``whpk_`` public keys) and a ``webhook-id``
  equal to its ``eventId``; anything else is answered 401, nothing runs, and one line
  without the secret is logged. ``EventRouter()`` with none of
  ``secret``, ``verify`` or ``insecure=True`` refuses to be built;
- the answer is 2xx only after every matching handler succeeded; a handler that raises
  makes the answer 500, so that the sender delivers again;
- a delivery of an ``event_id`` already handled within ``dedupe_window`` seconds is
  acknowledged without running the handlers again (a copy that arrives while the first is
  still being handled waits for its outcome); with ``dedupe=RedisDedupe(...)`` that
  memory is shared by every receiver process on one Redis, a copy being handled by
  another process is answered 409, and while Redis cannot be reached the answer is 503
  and nothing runs;
- a body that is not JSON, is nested more than 64 levels deep, has no event type, or has
  no ``eventId`` that is a non-empty string of at most 256 characters, gets 400 and a log
  line, and runs nothing;
- a sender has ``read_timeout`` seconds (10) for a request's headers, and as long again
  for its body;
- a handler that takes longer than ``handler_timeout`` seconds (30) is cancelled and the
  answer is 503, so that the sender delivers again; copies waiting on it get 503 too;
- with ``inbox=``, a verified notification is stored and answered 200 (``duplicate`` if it
  was stored before) and no handler runs in the request; an inbox that fails answers 503;
- text from the sender (ids, types) is written to the log with control characters escaped.

ASSUMED notification body (not shown by the interface document):
``{"eventId", "eventType", "occurredAt", "data"}``. Unknown event types stay plain ``str``;
other top-level fields are kept in ``data`` (without overwriting its own keys).
"""

from __future__ import annotations

from ..models import WebhookEvent
from ._dedupe import Claim, Dedupe
from ._receive import Reply
from ._router import EventHandler, EventRouter, InboxLike
from ._signature import Verify, WebhookVerificationError, compare_secret, header_secret, sign
from ._unwrap import unwrap, verify

__all__ = [
    "Claim",
    "Dedupe",
    "EventHandler",
    "EventRouter",
    "InboxLike",
    "Reply",
    "Verify",
    "WebhookEvent",
    "WebhookVerificationError",
    "compare_secret",
    "header_secret",
    "sign",
    "unwrap",
    "verify",
]
