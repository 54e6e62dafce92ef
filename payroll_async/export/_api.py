"""export_to_file: one listing to one file, whole or not at all, resumable (the package's
face, ``payroll_async.export``, says how)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

import attrs

from .._core._converter import columns
from .._http._auth import Identity
from .._paging._decode import RawPageDecoder
from .._paging._pagination import AsyncPaginator, Page
from ._checkpoint import ExportError, Writer
from ._exporter import Exporter, ExportProgress
from ._formats import FORMATS, format_for
from ._output import FileWriter, StreamWriter, lock_output, open_target, unlock_output

__all__ = ["ExportResult", "export_to_file"]


@attrs.frozen
class ExportResult:
    """A finished export."""

    path: Path | None
    """The file written (None when streamed to a pipe, a device or a stream)."""
    items: int
    """Items in the output."""
    resumed_from: int
    """Items that an earlier, interrupted run had written (0 for a fresh export)."""


def _default_job(paginator: AsyncPaginator[Any], fmt: str, csv_raw: bool) -> dict[str, Any]:
    job: dict[str, Any] = {"listing": paginator.describe(), "format": fmt}
    if csv_raw:
        job["csvRaw"] = True
    return job


async def export_to_file(
    source: AsyncPaginator[Any],
    path: str | os.PathLike[str] | None,
    *,
    format: str = "jsonl",
    resume: bool = True,
    stream: IO[bytes] | None = None,
    job: dict[str, Any] | None = None,
    progress: ExportProgress | None = None,
    on_page: Callable[[Page[Any], ExportProgress], None] | None = None,
    csv_raw: bool = False,
    service: str | None = None,
) -> ExportResult:
    """Write every item of ``source`` to ``path``: whole or not at all, resumable.

    ``format``: ``jsonl``, ``csv`` or ``json``. ``resume``: continue an interrupted export
    of the same listing, from the same service and account, to the same file (it starts
    afresh when there is none, and ``progress.nothing_to_resume`` says so); with
    ``resume=False`` an interrupted one is an ExportError. A stream is written whole each
    time: there is nothing to resume. ``path`` may be a FIFO or a device (written straight
    through, not resumable); ``path=None`` writes to ``stream``. ``job`` names the export in
    its checkpoint (default: the listing and the format); a checkpoint of another job is
    never resumed. ``on_page(page, progress)`` is called after each page is written.
    ``csv_raw``: CSV values exactly as sent, without the ``'`` that keeps a spreadsheet
    from running a value such as ``=1+1`` as a formula. ``service``: what the checkpoint
    knows the service by, in place of the listing's base URL and token (which are then
    not checked): for a service whose address and token change from run to run while
    its data does not, such as an emulator started afresh with the same seed and sizes
    (the command's ``--emulator``); a checkpoint is resumed only with the same
    ``service``.

    Errors (all :class:`ExportError`, a PayrollError): :class:`CheckpointError` for a
    checkpoint or partial file that cannot be trusted, :class:`ResumeMismatchError` for
    one of another job, service or account, :class:`OutputLockedError` while another
    export writes to ``path``, :class:`OutputWriteError` when the disk is full (what was
    saved is resumed by the next call).

    ```pycon
    >>> listing = client.employer_identifiers.list()
    >>> result = await export_to_file(listing, "employers.csv", format="csv")
    >>> result.items, result.resumed_from
    (200, 0)
    ```
    """
    fmt = format_for(format, csv_raw=csv_raw)
    if fmt is None:
        raise ExportError(f"format must be one of {', '.join(FORMATS)}, got {format!r}")
    if not isinstance(source, AsyncPaginator):
        raise ExportError(f"source must be an AsyncPaginator, got {type(source).__name__}")
    if service is not None and (not isinstance(service, str) or not 0 < len(service) <= 4096):
        raise ExportError("service must be a text of 1 to 4,096 characters, or None")
    modelled = attrs.has(source.model)  # a listing of dict (get_api_list) has no columns
    if not modelled and fmt.name.startswith("csv"):
        raise ExportError(
            "CSV needs the items' fields: export a listing of an attrs model as CSV, or this "
            "one as jsonl or json"
        )
    if path is None:
        if stream is None:
            raise ExportError("export_to_file needs a path, or a stream with path=None")
        target, opened = None, None
    else:
        target, opened = open_target(os.fspath(path))
    keys = columns(source.model) if modelled else []
    state = progress if progress is not None else ExportProgress()
    listing = source.with_decoder(RawPageDecoder(source.model)) if fmt.raw else source
    exporter = Exporter(
        job=job if job is not None else _default_job(source, format, csv_raw),
        identity=source.identity if service is None else Identity(service, token=None),
        progress=state,
        on_page=on_page,
    )
    try:
        if target is None:
            out = opened or stream
            assert out is not None
            writer: Writer = StreamWriter(out, fmt, keys)
            count = await exporter.run(writer, None, listing, resume=False)
        else:
            lock, lock_path = lock_output(target)
            try:
                writer = FileWriter(target, fmt, keys)
                count = await exporter.run(writer, target, listing, resume=resume)
            finally:
                unlock_output(lock, lock_path)
    finally:
        if opened is not None:
            opened.close()
    return ExportResult(path=target, items=count, resumed_from=state.resumed_from)
