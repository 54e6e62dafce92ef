"""A dlt source: the service's collections loaded into any dlt destination, kept current.

```python
import dlt
from payroll_async.dlt import payroll_source

pipeline = dlt.pipeline("payroll_pipeline", destination="duckdb", dataset_name="payroll")
pipeline.run(payroll_source())  # PAYROLL_BASE_URL and PAYROLL_TOKEN, or dlt's secrets
```

Needs the ``dlt`` extra (``pip install 'payroll-async[dlt]'``). Each run mirrors the
collections (`payroll_async.mirror.mirror`) into a small SQLite database of the source's
own, in the pipeline's working directory, and hands dlt the changes since the last load:
the items inserted or updated (as the service sent them: camelCase names, merged into the
destination by their id), and a tombstone for each item the mirror proved gone (dlt's
``hard_delete`` hint on ``mirror_deleted_at`` deletes its row). Which changes were loaded
is kept in dlt's resource state, which dlt commits with the load package: a load that
fails is finished by the next run, and a run in which nothing changed loads no row.
See ``docs/warehouse.md``.
"""

from __future__ import annotations

import asyncio
import datetime
import logging
import threading
import uuid
from collections.abc import Coroutine, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

try:
    import dlt
    import pyarrow as pa
    from dlt.common.typing import TSecretStrValue
    from dlt.extract import DltResource
    from sqlalchemy import Engine, Text, create_engine, func, select, type_coerce

    from .mirror import (
        CHANGES,
        COLLECTIONS,
        RUNS,
        TABLES,
        MaxDeletions,
        check_max_deletions,
        mirror,
        refusal,
    )
except ImportError as _missing:  # pragma: no cover - exercised by an install without the extra
    raise ImportError(
        "payroll_async.dlt needs the 'dlt' extra: python3 -m pip install 'payroll-async[dlt]'"
    ) from _missing

from ._client import PayrollClient
from ._core import _env
from ._core._converter import to_camel
from ._core._exceptions import InvalidArgumentError
from ._core._types import NOT_GIVEN

__all__ = ["payroll_source"]

logger: logging.Logger = logging.getLogger("payroll_async")

T = TypeVar("T")

STATE_DATABASE = "payroll_mirror.db"
"""The source's own mirror, in the pipeline's working directory."""
DELETED = "mirror_deleted_at"
"""The column of a tombstone (dlt's ``hard_delete`` hint): when the item was proven gone."""
_PAGE = 1000  # items handed to dlt at once
_TOMBSTONE: Any = {"data_type": "timestamp", "nullable": True, "hard_delete": True}
_REPLACED: Any = {**_TOMBSTONE, "hard_delete": False}  # a reload: no tombstone in it


def _run(coroutine: Coroutine[Any, Any, T]) -> T:
    """Run ``coroutine`` to the end; on a thread of its own if this one has a running loop."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        running = False  # asyncio.run below, outside this handler: no context in its errors
    else:
        running = True
    if not running:
        return asyncio.run(coroutine)
    outcome: list[T] = []
    failure: list[BaseException] = []

    def target() -> None:
        try:
            outcome.append(asyncio.run(coroutine))
        except BaseException as exc:  # handed to the caller's thread, raised there
            failure.append(exc)

    thread = threading.Thread(target=target, name="payroll-dlt-mirror")
    thread.start()
    thread.join()
    if failure:
        raise failure[0]
    return outcome[0]


async def _mirror(
    base_url: str,
    token: str,
    network: Mapping[str, Any],
    collection: str,
    into: str,
    max_deletions: MaxDeletions,
) -> None:
    async with PayrollClient(base_url, token, **network) as client:
        result = await mirror(client, collection, into=into, max_deletions=max_deletions)
    if not result.complete:
        logger.warning(
            "%s changed too much during the run to prove every deletion; "
            "the next run loads the rest",
            collection,
        )


def _item(names: Sequence[str], values: Sequence[Any]) -> dict[str, Any]:
    """The item of a live row, as the service sent it: its camelCase ``names``, ids as
    text, timestamps as UTC.

    The one place that makes an item of the mirror's row, today from its typed columns
    (dlt types them as the service's JSON would be: text, timestamp, bool, bigint). With
    the item as last sent kept in the row (``mirror_item``, issue 31 item 2), this reads
    that instead, and the Arrow pages parse its timestamps (``_arrow_schema`` types them).
    """
    return dict(zip(names, values, strict=True))


_TIMESTAMP = pa.timestamp("us", tz="UTC")
_ARROW_TYPES: dict[type, Any] = {
    uuid.UUID: pa.string(),
    str: pa.string(),
    datetime.datetime: _TIMESTAMP,
    int: pa.int64(),
    bool: pa.bool_(),
}


def _canonical(stored: str) -> str:
    """An id as the service writes it (lower-case 8-4-4-4-12) from the text the mirror's
    SQLite stores: 32 hex digits (SQLAlchemy's Uuid), or already canonical text."""
    if len(stored) == 36:
        return stored.lower()
    return f"{stored[:8]}-{stored[8:12]}-{stored[12:16]}-{stored[16:20]}-{stored[20:]}".lower()


def _python_type(column: Any) -> type:
    # a TypeDecorator (UTCDateTime) says object; what it stores says datetime
    kind: type = getattr(column.type, "impl_instance", column.type).python_type
    return kind


def _arrow_schema(collection: str) -> Any:
    """The Arrow schema of a collection's items and tombstones; None for one with a list
    (a subscription's event types), whose items dlt normalizes into a child table."""
    mirrored = TABLES[collection]
    fields = []
    for column in mirrored.table.c:
        kind = _python_type(column)
        if column.name == DELETED:
            fields.append(pa.field(DELETED, _TIMESTAMP))
        elif column.name in mirrored.fields:
            if kind not in _ARROW_TYPES:
                return None
            key = column.name == mirrored.key
            fields.append(pa.field(to_camel(column.name), _ARROW_TYPES[kind], nullable=not key))
    return pa.schema(fields)


def _changed(
    engine: Engine, collection: str, after: int, upto: int, live_only: bool
) -> Iterator[Any]:
    """Pages of the items changed by ``mirror_changes`` ``after`` < change_id <= ``upto``:
    each item as it is now, or a tombstone (its id and ``mirror_deleted_at``) if it is
    deleted (left out with ``live_only``). A page is an Arrow table where the items are
    flat (dlt loads those without normalizing each row), else a list of dicts."""
    mirrored = TABLES[collection]
    table = mirrored.table
    key = table.c[mirrored.key]
    changed = (
        select(CHANGES.c.item_id)
        .where(CHANGES.c.collection == collection)
        .where(CHANGES.c.change_id > after, CHANGES.c.change_id <= upto)
    )
    ids = [n for n, f in enumerate(mirrored.fields) if _python_type(table.c[f]) is uuid.UUID]
    # ids read as the text stored, made canonical below: 5x cheaper than uuid.UUID objects
    selected = [
        type_coerce(table.c[f], Text) if n in ids else table.c[f]
        for n, f in enumerate(mirrored.fields)
    ]
    query = select(*selected, table.c.mirror_deleted_at)
    if after > 0:  # from the start, every row has changed: no need to ask which
        query = query.where(key.in_(changed))
    if live_only:
        query = query.where(table.c.mirror_deleted_at.is_(None))
    names = [to_camel(f) for f in mirrored.fields]  # the key first
    schema = _arrow_schema(collection)
    with engine.connect() as conn:
        result = conn.execution_options(yield_per=_PAGE).execute(query)
        for rows in result.partitions():
            page = []
            for row in rows:
                *values, gone = row
                for n in ids:
                    values[n] = _canonical(values[n])
                page.append(
                    _item(names, values) if gone is None else {names[0]: values[0], DELETED: gone}
                )
            yield page if schema is None else pa.Table.from_pylist(page, schema=schema)


def _feed(
    base_url: str,
    token: str,
    network: Mapping[str, Any],
    collection: str,
    max_deletions: MaxDeletions,
) -> Iterator[Any]:
    """One collection's resource: mirror it, then yield the changes dlt has not loaded."""
    pipeline = dlt.current.pipeline()
    state = dlt.current.resource_state()
    path = Path(pipeline.working_dir) / STATE_DATABASE
    _run(_mirror(base_url, token, network, collection, f"sqlite:///{path}", max_deletions))
    engine = create_engine(f"sqlite:///{path}")
    try:
        with engine.connect() as conn:
            first_run = conn.execute(
                select(RUNS.c.run_id)
                .where(RUNS.c.collection == collection)
                .order_by(RUNS.c.started_at)
                .limit(1)
            ).scalar_one()
            upto = conn.execute(
                select(func.coalesce(func.max(CHANGES.c.change_id), 0)).where(
                    CHANGES.c.collection == collection
                )
            ).scalar_one()
            table = TABLES[collection].table
            live = conn.execute(
                select(func.count()).where(table.c.mirror_deleted_at.is_(None))
            ).scalar_one()
        mirror_id = str(first_run)
        after = int(state.get("change_id", 0))
        # A cursor of another state database (this one was lost, or made anew): reload
        # every live item and replace the table, since the deletions in between are unknown.
        fresh = state.get("mirror") not in (None, mirror_id)
        if fresh:
            logger.warning(
                "%s: the source's state database in %s is new; reloading every item",
                collection,
                pipeline.working_dir,
            )
            after = 0
            # The reload replaces the table: the rows it leaves out are deleted, under the
            # same bound as the mirror's (a sandbox's token answering 5 items of 300).
            before = state.get("live")
            if type(before) is int:
                refused = refusal(collection, max(0, before - live), before, max_deletions)
                if refused is not None:
                    raise refused
        if upto <= after and not fresh:
            return  # nothing changed: no row, and the state is left as it is
        # A reload replaces the table; it has no tombstone, and dlt applies ``hard_delete``
        # only when merging (it warns of the hint otherwise): the next load merges with it.
        hints = (
            dlt.mark.make_hints(write_disposition="replace", columns={DELETED: _REPLACED})
            if fresh
            else None
        )
        for page in _changed(engine, collection, after, upto, live_only=fresh):
            yield dlt.mark.with_hints(page, hints) if hints is not None else page
            hints = None  # once is enough: the rest of the load follows it
        state["mirror"] = mirror_id
        state["change_id"] = upto
        state["live"] = live  # the rows at the destination: a reload's deletions are bounded
    finally:
        engine.dispose()


@dlt.source(name="payroll")
def payroll_source(
    base_url: str | None = None,
    token: TSecretStrValue | None = None,
    *,
    collections: Sequence[str] = COLLECTIONS,
    proxy: TSecretStrValue | None = None,
    ca_bundle: str | None = None,
    max_deletions: MaxDeletions = NOT_GIVEN,
) -> list[DltResource]:
    """The service as a dlt source: one resource (and table) per collection, kept current.

    ```python
    pipeline = dlt.pipeline("payroll_pipeline", destination="duckdb", dataset_name="payroll")
    info = pipeline.run(payroll_source(collections=("payroll-connections",)))
    ```

    ``base_url`` and ``token`` as `PayrollClient` takes them (default: dlt's configuration,
    ``sources.payroll.token`` in ``.dlt/secrets.toml``, else ``PAYROLL_BASE_URL`` and
    ``PAYROLL_TOKEN``). ``collections``: any of ``payroll-connections``,
    ``employer-identifiers``, ``webhooks``, ``update-groups`` (every employer's); the
    resources are named after their tables (``payroll_connections``,
    ``employer_identifiers``, ``webhook_subscriptions``, ``update_groups``).

    ``proxy`` and ``ca_bundle`` as `PayrollClient` takes ``proxy=`` and ``ssl=`` (a CA
    bundle's path; ``sources.payroll.ca_bundle`` in ``.dlt/config.toml``): left out, the
    environment's ``HTTPS_PROXY``/``NO_PROXY`` and the system's trust store (or
    ``SSL_CERT_FILE``).

    Each resource's primary key is the item's id, its write disposition ``merge``; a list
    (a subscription's ``webhookEventTypes``) is a child table, as dlt makes one. An item is
    deleted at the destination only when the mirror proves it gone (two walks of the
    listing, each checked, missed it), and never more at once than ``max_deletions``
    allows, as `mirror()` counts them (default: a run that would delete more than half of
    at least 100 rows deletes none and raises `MirrorDeletionsError`, and loads nothing;
    None: no bound). Bad arguments raise `InvalidArgumentError` here, before any request.
    """
    chosen = tuple(dict.fromkeys(collections))
    for collection in chosen:
        if collection not in TABLES:
            raise InvalidArgumentError(
                f"collections: each one of {', '.join(COLLECTIONS)}, got {collection!r}"
            )
    if not chosen:
        raise InvalidArgumentError("collections: give at least one")
    check_max_deletions(max_deletions)
    url = base_url if base_url is not None else _env.require(_env.BASE_URL, "base_url")
    secret = token if token is not None else _env.require(_env.TOKEN, "token")
    network: dict[str, Any] = {"proxy": proxy, "ssl": True if ca_bundle is None else ca_bundle}
    PayrollClient(url, secret, **network)  # every argument checked now; never opened
    resources = []
    for collection in chosen:
        mirrored = TABLES[collection]
        resources.append(
            dlt.resource(
                _feed(url, secret, network, collection, max_deletions),
                name=mirrored.table.name,
                primary_key=to_camel(mirrored.key),
                write_disposition="merge",
                columns={DELETED: _TOMBSTONE},
            )
        )
    return resources
