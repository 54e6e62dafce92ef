"""The mirror: the service's collections in your own database, kept current.

```pycon
>>> from payroll_async.mirror import mirror
>>> result = await mirror(client, "payroll-connections", into="sqlite:///payroll.db")
```

Needs the ``mirror`` extra (SQLAlchemy with aiosqlite and asyncpg). One table per
collection (``payroll_connections``, ``employer_identifiers``, ``webhook_subscriptions``,
``update_groups``), ``mirror_runs`` (one row per run) and ``mirror_changes`` (every insert,
update and delete). A row is marked deleted only once walks of the listing prove the item
gone, and a run that would mark more than ``max_deletions`` marks none; see
``docs/mirror.md``.
"""

from ._change import Change
from ._errors import MaxDeletions as MaxDeletions
from ._errors import MirrorBusyError, MirrorDeletionsError, MirrorError, MirrorURLError
from ._errors import check_max_deletions as check_max_deletions
from ._errors import refusal as refusal
from ._feed import Feed as Feed
from ._feed import open_feed as open_feed
from ._run import COLLECTIONS, MirrorProgress, MirrorResult, mirror
from ._schema import CHANGES as CHANGES
from ._schema import RUNS as RUNS
from ._schema import TABLES as TABLES

# Beyond __all__, the face offers the apps built on the mirror what they share with it:
# the change feed (the command's --changes), the deletion guard and the tables (dlt).

__all__ = [
    "COLLECTIONS",
    "Change",
    "MirrorBusyError",
    "MirrorDeletionsError",
    "MirrorError",
    "MirrorProgress",
    "MirrorResult",
    "MirrorURLError",
    "mirror",
]
