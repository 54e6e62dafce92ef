"""The inbox's table, ``inbox_events``: one row per notification, kept until purged.

The lease of a claim is ``next_attempt_at``: a worker that claims an event moves it a lease
ahead (and counts the attempt), so no other worker sees it as due while the handlers run;
a worker that dies leaves it to come due again when the lease ends. Every time is the
database's (``database_now``), never a worker's: no machine's clock decides when a lease
ends. ``claims`` is the claim's fence: it only grows (every claim, every burial of a dead event
and every ``retry`` moves it on), and a worker
writes the outcome only while the row still has the number it claimed, so a worker whose
lease ran out cannot overwrite the outcome of any later claim. ``claimed_at`` is set while
a claim has no outcome written: a due event that still has it was left by a worker that died.

``install`` creates the table, or migrates one made by an earlier version, in the caller's
transaction (``inbox_schema`` holds the version, as ``mirror_schema`` does the mirror's).
"""

from __future__ import annotations

import logging

from sqlalchemy import (
    BigInteger,
    Column,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    Table,
    Text,
    func,
    insert,
    inspect,
    select,
)
from sqlalchemy.engine import Connection
from sqlalchemy.schema import CreateColumn

from .._sql import UTCDateTime, database_now, version_table

__all__ = [
    "DEAD",
    "DONE",
    "EVENTS",
    "METADATA",
    "PENDING",
    "SCHEMA_VERSION",
    "STATUSES",
    "database_now",
    "install",
]

logger = logging.getLogger("payroll_async.inbox")

PENDING = "pending"
DONE = "done"
DEAD = "dead"
STATUSES = (PENDING, DONE, DEAD)

SCHEMA_VERSION = 2
"""1: the first release (no version table; the fence was ``attempts``, times on the
workers' clocks). 2: ``claims`` (the fence, never reset) and ``claimed_at``; times are
the database's."""

METADATA = MetaData()

EVENTS = Table(
    "inbox_events",
    METADATA,
    Column("event_id", Text, primary_key=True),
    # NULL: a type the database cannot hold (a NUL in PostgreSQL); the body keeps it
    Column("event_type", Text, nullable=True),
    Column("occurred_at", UTCDateTime, nullable=True),
    Column("received_at", UTCDateTime, nullable=False),
    Column("body", LargeBinary, nullable=False),
    Column("status", Text, nullable=False),
    Column("attempts", Integer, nullable=False),
    Column("next_attempt_at", UTCDateTime, nullable=True),
    Column("last_error", Text, nullable=True),
    Column("handled_at", UTCDateTime, nullable=True),
    # the fence: times the event was ever claimed (a default, so that a worker of the
    # first release still inserts during an upgrade)
    Column("claims", BigInteger, nullable=False, server_default="0"),
    Column("claimed_at", UTCDateTime, nullable=True),
    # what a worker asks for: the pending events that are due, soonest first
    Index("inbox_events_due", "status", "next_attempt_at"),
)

SCHEMA = version_table("inbox_schema", METADATA)
"""One row per schema version installed; the highest is the database's."""


def install(conn: Connection) -> int | None:
    """Create, or migrate to this release's, the inbox's tables; the version found.

    A version newer than this release's is left untouched (the caller refuses it).
    """
    names = set(inspect(conn).get_table_names())
    stored: int | None = None
    if SCHEMA.name in names:
        stored = conn.execute(select(func.max(SCHEMA.c.version))).scalar()
    elif EVENTS.name in names:
        stored = 1  # the first release kept no version
    if stored is not None and stored > SCHEMA_VERSION:
        return stored
    if stored is not None and stored < SCHEMA_VERSION:
        _upgrade(conn, stored)
    METADATA.create_all(conn, checkfirst=True)
    if stored is None or stored < SCHEMA_VERSION:
        conn.execute(insert(SCHEMA).values(version=SCHEMA_VERSION, installed_at=database_now()))
    return stored


def _upgrade(conn: Connection, stored: int) -> None:
    """Version ``stored``'s table in this release's form, its rows kept."""
    found = {c["name"]: c for c in inspect(conn).get_columns(EVENTS.name)}
    quote = conn.dialect.identifier_preparer.quote
    table = quote(EVENTS.name)
    for column in EVENTS.c:
        if column.name not in found:
            added = CreateColumn(column).compile(dialect=conn.dialect)
            conn.exec_driver_sql(f"ALTER TABLE {table} ADD COLUMN {added}")
        elif (
            conn.dialect.name == "postgresql"
            and column.nullable
            and not found[column.name]["nullable"]
        ):
            # event_type: NULL now for a type PostgreSQL's text cannot hold (a NUL); in
            # SQLite, whose text holds every one, it never is
            conn.exec_driver_sql(
                f"ALTER TABLE {table} ALTER COLUMN {quote(column.name)} DROP NOT NULL"
            )
    if "claims" not in found:
        # the claims so far, as far as they are known; only ever more from now on
        conn.exec_driver_sql(f"UPDATE {table} SET claims = attempts")
    logger.info(
        "inbox: the table was migrated from schema version %d to %d", stored, SCHEMA_VERSION
    )
