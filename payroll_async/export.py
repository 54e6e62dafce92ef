"""Bulk export to a file that is always whole, and that an interrupted run can resume.

```pycon
>>> from payroll_async.export import export_to_file
>>> listing = client.payroll_connections.list()
>>> result = await export_to_file(listing, "connections.jsonl")
>>> result.items
25000
```

Run it again after a crash (a killed worker, a lost connection) and it continues where the
last checkpoint left off: the file ends with every item exactly once. The command's
``export`` is built on it.

The export writes to ``FILE.partial`` beside the target and renames it to ``FILE`` only when
every item is written, so a finished file is never half a file. Every half second (and when
the run stops, for whatever reason) it records in ``FILE.checkpoint`` how many items, and
how many bytes of ``FILE.partial``, are complete and on disk. ``--resume`` cuts the partial
file back to that length and continues the listing at that offset: nothing is lost and
nothing is written twice.

Only a regular file (or a symlink to one, resolved: the link stays a link) gets the
partial file and the checkpoint. ``-`` is standard output, and a target that exists and is
not a regular file (a FIFO, a character device such as /dev/null, a socket, /dev/fd/N) is
written directly, streaming; such an export cannot be resumed.

A run that wrote no item leaves no partial file or checkpoint behind, and a checkpoint
left by a run killed between its final rename and the checkpoint's removal is recognised
(the partial file is gone, the target is there) and cleaned up.
"""

from __future__ import annotations

import json
import os
import stat
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

import attrs

from ._converter import to_camel, to_dict
from ._exceptions import PayrollError
from ._formats import FORMATS, Format
from ._pagination import AsyncPaginator, Page

__all__ = [
    "CHECKPOINT_VERSION",
    "FORMATS",
    "AlreadyComplete",
    "ExportError",
    "ExportProgress",
    "ExportResult",
    "Exporter",
    "Format",
    "export_to_file",
    "is_streamed",
    "open_target",
    "paths_for",
]

CHECKPOINT_VERSION = 1
CHECKPOINT_EVERY = 0.5  # seconds between checkpoints while the export runs


class ExportError(PayrollError):
    """The export cannot start or resume as asked (the command's exit code 2).

    E.g. a checkpoint of another export, a partial file shorter than its checkpoint, or
    resuming what is written to a pipe.
    """


class AlreadyComplete(Exception):
    """``--resume`` of an export that had finished: nothing to do."""


def open_target(output: str) -> tuple[Path | None, IO[bytes] | None]:
    """Where an export goes: (the real file to write atomically, None) or (None, a stream).

    ``-`` is standard output; an existing target that is not a regular file is opened and
    written directly; a symlink to a regular file is resolved to that file.
    """
    if output == "":
        raise ExportError("-o needs a file name (or - for standard output)")
    if output == "-":
        return None, None
    path = Path(output)
    try:
        mode = path.stat().st_mode  # follows symlinks
    except FileNotFoundError:
        mode = None
    except OSError as exc:
        raise ExportError(f"cannot use {path}: {exc.strerror or exc}") from None
    if mode is not None and not stat.S_ISREG(mode):
        if stat.S_ISDIR(mode):
            raise ExportError(f"{path} is a directory; -o takes a file")
        return None, path.open("wb")  # FIFO, device, socket: streamed, nothing beside it
    return (path.resolve() if path.is_symlink() else path), None


def is_streamed(output: str) -> bool:
    """Whether ``output`` is written straight through (``-``, a FIFO, a device): no resume."""
    if output == "-":
        return True
    try:
        return not stat.S_ISREG(Path(output).stat().st_mode)
    except OSError:
        return False


def paths_for(target: Path) -> tuple[Path, Path]:
    """The partial file and the checkpoint kept beside ``target``."""
    return target.with_name(target.name + ".partial"), target.with_name(target.name + ".checkpoint")


@attrs.define
class Exporter:
    """Writes a listing to ``target`` (or a stream), checkpointing as it goes.

    ``job`` names what is exported (collection, format, sort, ...); a checkpoint of another
    job is never resumed.
    """

    target: Path | None
    fmt: Format
    columns: list[str]
    job: dict[str, Any]
    stream: IO[bytes] | None = None
    resumed_from: int = 0
    written: int = 0
    committed_items: int = 0
    committed_bytes: int = 0
    _file: IO[bytes] | None = None
    _last_checkpoint: float = 0.0

    # -- starting ----------------------------------------------------------------------

    def start(self, *, resume: bool) -> int:
        """Open the output; the offset to start the listing at."""
        if self.target is None:
            if resume:
                raise ExportError(
                    "--resume needs a regular file to resume (-o FILE); standard output, "
                    "pipes and devices are written straight through and cannot be resumed"
                )
            assert self.stream is not None
            self._file = self.stream
            self._write_raw(self.fmt.header(self.columns))
            return 0
        partial, checkpoint = paths_for(self.target)
        state = self._read_checkpoint(checkpoint)
        if state is not None and not partial.exists() and self.target.exists():
            # Killed after the final rename, before the checkpoint went: it had finished.
            checkpoint.unlink(missing_ok=True)
            if resume:
                raise AlreadyComplete(state.get("items", 0))
            state = None
        if state is not None and not resume:
            raise ExportError(
                f"{partial} holds an interrupted export ({state['items']} items): pass --resume "
                f"to continue it, or delete {partial} and {checkpoint} to start over"
            )
        if state is not None:
            if state.get("job") != self.job:
                raise ExportError(
                    f"{checkpoint} belongs to another export "
                    f"({_describe_job(state.get('job'))}), not this one "
                    f"({_describe_job(self.job)}); run that export with --resume, or delete "
                    f"{partial} and {checkpoint} to start over"
                )
            size = partial.stat().st_size if partial.exists() else -1
            if size < state["bytes"]:
                raise ExportError(
                    f"{partial} is shorter than its checkpoint says "
                    f"({size} < {state['bytes']} bytes); "
                    f"delete {partial} and {checkpoint} to start over"
                )
            self._file = partial.open("r+b")
            self._file.truncate(state["bytes"])  # drop whatever was written after the checkpoint
            self._file.seek(state["bytes"])
            self.written = self.committed_items = self.resumed_from = state["items"]
            self.committed_bytes = state["bytes"]
            return self.written
        self._file = partial.open("wb")
        self._write_raw(self.fmt.header(self.columns))
        self._commit()
        self.checkpoint(force=True)
        return 0

    @staticmethod
    def _read_checkpoint(path: Path) -> dict[str, Any] | None:
        try:
            state = json.loads(path.read_text())
        except FileNotFoundError:
            return None
        except ValueError as exc:
            raise ExportError(f"{path} is not a readable checkpoint ({exc})") from None
        if not isinstance(state, dict) or state.get("version") != CHECKPOINT_VERSION:
            raise ExportError(f"{path} is not a checkpoint this version can resume")
        return state

    # -- writing -------------------------------------------------------------------------

    def _write_raw(self, data: bytes) -> None:
        assert self._file is not None
        self._file.write(data)

    def _commit(self) -> None:
        assert self._file is not None
        self.committed_items = self.written
        self.committed_bytes = self._file.tell() if self.target is not None else 0

    def write_page(self, items: Any) -> None:
        fmt, columns = self.fmt, self.columns
        for item in items:
            self._write_raw(fmt.item(to_dict(item), columns, self.written == 0))
            self.written += 1
            self._commit()
        self.checkpoint()

    def checkpoint(self, *, force: bool = False) -> None:
        """Record what is complete, at most every CHECKPOINT_EVERY seconds unless forced."""
        if self.target is None or self._file is None:
            return
        now = time.monotonic()
        if not force and now - self._last_checkpoint < CHECKPOINT_EVERY:
            return
        self._last_checkpoint = now
        self._file.flush()
        os.fsync(self._file.fileno())  # the data is on disk before the checkpoint says so
        _, checkpoint = paths_for(self.target)
        state = {
            "version": CHECKPOINT_VERSION,
            "job": self.job,
            "items": self.committed_items,
            "bytes": self.committed_bytes,
        }
        tmp = checkpoint.with_name(checkpoint.name + ".tmp")
        tmp.write_text(json.dumps(state))
        os.replace(tmp, checkpoint)

    # -- finishing ------------------------------------------------------------------------

    def finish(self) -> None:
        """Write the footer; rename the partial file into place and drop the checkpoint."""
        assert self._file is not None
        self._write_raw(self.fmt.footer)
        if self.target is None:
            self._file.flush()
            return
        self._file.flush()
        os.fsync(self._file.fileno())
        self._file.close()
        self._file = None
        partial, checkpoint = paths_for(self.target)
        os.replace(partial, self.target)
        checkpoint.unlink(missing_ok=True)

    def stop(self) -> None:
        """After a failure or an interruption: checkpoint what is complete, close.

        A run that wrote no item at all leaves nothing behind, so the next run starts
        afresh without --resume.
        """
        if self._file is None or self.target is None:
            return
        if self.committed_items == 0 and self.resumed_from == 0:
            self._file.close()
            self._file = None
            for path in paths_for(self.target):
                path.unlink(missing_ok=True)
            return
        self.checkpoint(force=True)
        self._file.close()
        self._file = None


def _describe_job(job: object) -> str:
    if not isinstance(job, dict):
        return "an unknown export"
    text = f"{job.get('collection')} as {job.get('format')}"
    if job.get("sort"):
        text += f" sorted by {job['sort']}"
    if job.get("employer"):
        text += f" of employer {job['employer']}"
    return text


@contextmanager
def exporting(exporter: Exporter) -> Iterator[Exporter]:
    """Checkpoint and close on any way out that is not a finished export."""
    try:
        yield exporter
    except BaseException:
        exporter.stop()
        raise


async def run_export(
    exporter: Exporter,
    paginator_for: Callable[[int], AsyncPaginator[Any]],
    *,
    resume: bool,
    on_page: Callable[[Page[Any], int], None] | None = None,
) -> int:
    """Export every item; returns how many the output holds."""
    try:
        start = exporter.start(resume=resume)
    except AlreadyComplete as done:
        return int(done.args[0])
    with exporting(exporter):
        async for page in paginator_for(start).pages():
            exporter.write_page(page.items)
            if on_page is not None:
                on_page(page, start)
        exporter.finish()
    return exporter.written


@attrs.define
class ExportProgress:
    """How far an export is, updated as it runs (pass one in to read it while it runs)."""

    resumed_from: int = 0
    """Items already in the file from an earlier run."""
    written: int = 0
    """Items in the output so far, earlier runs included."""
    committed: int = 0
    """Items on disk and recorded by the checkpoint: what a resume keeps."""


@attrs.frozen
class ExportResult:
    """A finished export."""

    path: Path | None
    """The file written (None when streamed to a pipe, a device or a stream)."""
    items: int
    """Items in the output."""
    resumed_from: int
    """Items that an earlier, interrupted run had written (0 for a fresh export)."""


def _default_job(paginator: AsyncPaginator[Any], fmt: str) -> dict[str, Any]:
    return {"listing": paginator.describe(), "format": fmt}


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
) -> ExportResult:
    """Write every item of ``source`` to ``path``: whole or not at all, resumable.

    ``format``: ``jsonl``, ``csv`` or ``json``. ``resume``: continue an interrupted export
    of the same listing to the same file (it starts afresh when there is none); with
    ``resume=False`` an interrupted one is an ExportError. A stream is written whole each
    time: there is nothing to resume. ``path`` may be a FIFO or a
    device (written straight through, not resumable); ``path=None`` writes to ``stream``.
    ``job`` names the export in its checkpoint (default: the listing and the format); a
    checkpoint of another job is never resumed. ``on_page(page, progress)`` is called after
    each page is written.

    ```pycon
    >>> listing = client.employer_identifiers.list()
    >>> result = await export_to_file(listing, "employers.csv", format="csv")
    >>> result.items, result.resumed_from
    (200, 0)
    ```
    """
    fmt = FORMATS.get(format)
    if fmt is None:
        raise ExportError(f"format must be one of {', '.join(FORMATS)}, got {format!r}")
    if not isinstance(source, AsyncPaginator):
        raise ExportError(f"source must be an AsyncPaginator, got {type(source).__name__}")
    if path is None:
        if stream is None:
            raise ExportError("export_to_file needs a path, or a stream with path=None")
        target, opened = None, None
    else:
        target, opened = open_target(os.fspath(path))
    columns = [to_camel(field.name) for field in attrs.fields(source.model)]
    exporter = Exporter(
        target=target,
        fmt=fmt,
        columns=columns,
        job=job if job is not None else _default_job(source, format),
        stream=opened or stream,
    )
    state = progress if progress is not None else ExportProgress()

    def track() -> None:
        state.resumed_from = exporter.resumed_from
        state.written = exporter.written
        state.committed = exporter.committed_items

    def after_page(page: Page[Any], start: int) -> None:
        track()
        if on_page is not None:
            on_page(page, state)

    try:
        count = await run_export(
            exporter,
            lambda start: source.skip(start),
            resume=resume and target is not None,  # a stream has nothing to resume
            on_page=after_page,
        )
    finally:
        track()
        if opened is not None:
            opened.close()
    return ExportResult(path=target, items=count, resumed_from=exporter.resumed_from)
