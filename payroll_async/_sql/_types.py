"""Column types both databases share: ids and UTC timestamps, stored alike everywhere;
and the database's own time (``database_now``), which every stamp and age compared uses.

In PostgreSQL ``uuid`` and ``timestamptz``; in SQLite the closest it has (an id as the
service writes it, lower-case ``8-4-4-4-12`` text; a timestamp as UTC text). A timestamp
always comes back timezone-aware UTC, so that a row read back compares equal to the value
it was written from.
"""

from __future__ import annotations

import datetime
import uuid
from typing import Any

from sqlalchemy import (
    CHAR,
    Column,
    DateTime,
    Dialect,
    Integer,
    MetaData,
    Table,
    TypeDecorator,
    Uuid,
)
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.sql.compiler import SQLCompiler
from sqlalchemy.sql.expression import FunctionElement
from sqlalchemy.types import TypeEngine

__all__ = ["ItemId", "UTCDateTime", "database_now", "version_table"]


class ItemId(TypeDecorator[uuid.UUID]):
    """``uuid`` in PostgreSQL; in SQLite the lower-case ``8-4-4-4-12`` text of the id."""

    impl = Uuid
    cache_ok = True

    def load_dialect_impl(self, dialect: Dialect) -> TypeEngine[Any]:
        if dialect.name == "postgresql":
            return dialect.type_descriptor(Uuid())
        return dialect.type_descriptor(CHAR(36))

    def process_bind_param(self, value: Any, dialect: Dialect) -> Any:
        if value is None or dialect.name == "postgresql":
            return value
        return str(value if isinstance(value, uuid.UUID) else uuid.UUID(str(value)))

    def process_result_value(self, value: Any, dialect: Dialect) -> uuid.UUID | None:
        if value is None or isinstance(value, uuid.UUID):
            return value
        return uuid.UUID(str(value))


class UTCDateTime(TypeDecorator[datetime.datetime]):
    """``timestamptz`` in PostgreSQL; in SQLite UTC text that reads back timezone-aware."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(
        self, value: datetime.datetime | None, dialect: Dialect
    ) -> datetime.datetime | None:
        if value is None:
            return None
        value = value.astimezone(datetime.timezone.utc)
        return value if dialect.name == "postgresql" else value.replace(tzinfo=None)

    def process_result_value(
        self, value: datetime.datetime | None, dialect: Dialect
    ) -> datetime.datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            return value.replace(tzinfo=datetime.timezone.utc)
        return value.astimezone(datetime.timezone.utc)


class database_now(FunctionElement[datetime.datetime]):
    """SQL: the database's time, ``seconds`` ahead: ``statement_timestamp()`` in PostgreSQL
    (one time per statement, and an index can use it, unlike ``clock_timestamp()``),
    ``'now'`` in SQLite (one time per statement too), in the form ``UTCDateTime`` stores."""

    type = UTCDateTime()
    inherit_cache = True
    name = "database_now"

    def __init__(self, seconds: Any = None) -> None:
        super().__init__(*(() if seconds is None else (seconds,)))


# SQLite keeps a UTCDateTime as text with six digits of fraction; 'now' has three.
_SQLITE_FORM = "%Y-%m-%d %H:%M:%f000"


@compiles(database_now, "postgresql")
def _now_postgresql(element: database_now, compiler: SQLCompiler, **kw: Any) -> str:
    if not element.clauses.clauses:
        return "statement_timestamp()"
    seconds = compiler.process(element.clauses, **kw)
    return f"(statement_timestamp() + make_interval(secs => CAST({seconds} AS DOUBLE PRECISION)))"


@compiles(database_now, "sqlite")
def _now_sqlite(element: database_now, compiler: SQLCompiler, **kw: Any) -> str:
    if not element.clauses.clauses:
        return f"strftime('{_SQLITE_FORM}', 'now')"
    seconds = compiler.process(element.clauses, **kw)
    return f"strftime('{_SQLITE_FORM}', 'now', ({seconds}) || ' seconds')"


def version_table(name: str, metadata: MetaData) -> Table:
    """An app's table of schema versions: one row per version installed, the highest the
    database's (the mirror's ``mirror_schema``, the inbox's ``inbox_schema``)."""
    return Table(
        name,
        metadata,
        Column("version", Integer, primary_key=True),
        Column("installed_at", UTCDateTime, nullable=False),
    )
