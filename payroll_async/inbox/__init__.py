"""The inbox: every verified notification committed before the 200, handled by workers.

```pycon
>>> from payroll_async.inbox import Inbox
>>> inbox = Inbox("sqlite:///inbox.db")                   # or postgresql://... for a fleet
>>> router = EventRouter(secret="whsec_...", inbox=inbox)  # store, answer 200; handle later
>>> await inbox.run(router, concurrency=8)                 # a worker: claim, handle, retry
```

Needs the ``mirror`` extra (SQLAlchemy with aiosqlite and asyncpg): the inbox lives on
the mirror's database layer. One table, ``inbox_events``; see ``docs/webhooks.md``, "The
inbox", and "Operating it".
"""

from ._inbox import Inbox, InboxEntry, InboxError, InboxStats, InboxURLError

__all__ = ["Inbox", "InboxEntry", "InboxError", "InboxStats", "InboxURLError"]
