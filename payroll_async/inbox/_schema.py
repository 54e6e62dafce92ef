"""The inbox's table, ``inbox_events``: one row per notification, kept until purged.

The lease of a claim is ``next_attempt_at``: a worker that claims an event moves it a lease
ahead (and counts the attempt), so no other worker sees it as due while the handlers run;
a worker that dies leaves it to come due again when the lease ends. ``attempts`` is the
claim's fence: a worker writes the outcome only while the row still has the count it
claimed, so a worker whose lease ran out cannot overwrite the outcome of the next one.
"""

from __future__ import annotations

from sqlalchemy import Column, Index, Integer, LargeBinary, MetaData, Table, Text

from ..mirror._schema import UTCDateTime

__all__ = ["DEAD", "DONE", "EVENTS", "METADATA", "PENDING", "STATUSES"]

PENDING = "pending"
DONE = "done"
DEAD = "dead"
STATUSES = (PENDING, DONE, DEAD)

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
    # what a worker asks for: the pending events that are due, soonest first
    Index("inbox_events_due", "status", "next_attempt_at"),
)
