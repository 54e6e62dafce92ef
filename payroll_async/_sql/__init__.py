"""The storage of the mirror, the inbox, dlt and the command: one package for databases.

Database URLs as users write them (checked, libpq's parameters mapped, shown without
their secrets), engines and connections, the run lock, statements compiled once per
dialect, the column types and stored forms both databases share, and failures raised as
the owning app's own errors (`ErrorKinds`). It imports only ``_core``: the apps build on
it, never on each other's storage.
"""

from ._compiled import compiled
from ._database import (
    MIRROR_PRAGMAS,
    SQLITE_PRAGMAS,
    Database,
    open_database,
    sqlite3_connection,
)
from ._errors import ErrorKinds, database_errors
from ._types import ItemId, UTCDateTime, database_now, version_table
from ._url import URLRefused, redact
from ._values import Convert, column_converter, converter, has_upper, id_text, row_converter

__all__ = [
    "MIRROR_PRAGMAS",
    "SQLITE_PRAGMAS",
    "Convert",
    "Database",
    "ErrorKinds",
    "ItemId",
    "URLRefused",
    "UTCDateTime",
    "column_converter",
    "compiled",
    "converter",
    "database_errors",
    "database_now",
    "has_upper",
    "id_text",
    "open_database",
    "redact",
    "row_converter",
    "sqlite3_connection",
    "version_table",
]
