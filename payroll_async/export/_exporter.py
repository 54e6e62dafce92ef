"""The export loop: pages into a :class:`Writer`, a checkpoint every half second, and how a
run starts (fresh, resumed, or already finished) and stops (checkpointed or cleaned up)."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs

from .._http._auth import Identity
from .._paging._pagination import AsyncPaginator, Page
from ._checkpoint import (
    Checkpoint,
    CheckpointError,
    ExportError,
    OutputWriteError,
    ResumeMismatchError,
    Service,
    Writer,
    checkpoint_path,
    read_checkpoint,
    write_checkpoint,
)

__all__ = ["CHECKPOINT_EVERY", "SERVICE_ADVICE", "ExportProgress", "Exporter", "checkpoint_path"]

CHECKPOINT_EVERY = 0.5  # seconds between checkpoints while the export runs


class _WriteFailed(Exception):
    def __init__(self, error: OSError) -> None:
        self.error = error


@attrs.define
class ExportProgress:
    """How far an export is, updated as it runs (pass one in to read it while it runs)."""

    resumed_from: int = 0
    """Items already in the file from an earlier run."""
    written: int = 0
    """Items in the output so far, earlier runs included."""
    committed: int = 0
    """Items on disk and recorded by the checkpoint: what a resume keeps."""
    nothing_to_resume: bool = False
    """A resume was asked for, but there was no interrupted export: it started afresh."""


@attrs.define
class Exporter:
    """One run of an export of ``job``, as ``identity`` (its credentials never stored)."""

    job: dict[str, Any]
    identity: Identity
    progress: ExportProgress
    on_page: Callable[[Page[Any], ExportProgress], None] | None = None
    _service: Service | None = None
    _position: tuple[int, dict[str, Any]] = (0, {})  # items and where they end, in memory
    _recorded: int = 0  # items in the last checkpoint written
    _last_checkpoint: float = 0.0
    _finishing: bool = False

    async def run(
        self, writer: Writer, target: Path | None, listing: AsyncPaginator[Any], *, resume: bool
    ) -> int:
        """Export every item of ``listing``; how many the output holds."""
        start = self._start(writer, target, resume=resume)
        if start is None:
            return self.progress.written  # it had finished before
        progress, written = self.progress, start
        try:
            try:
                async for page in listing.skip(start).pages():
                    try:
                        writer.write(page.items)
                    except OSError as exc:
                        raise _WriteFailed(exc) from None
                    written += len(page.items)
                    self._position = (written, writer.position())
                    progress.written = written
                    self._checkpoint(writer, target, force=False)
                    if self.on_page is not None:
                        self.on_page(page, progress)
                self._finishing = True  # from here, the last checkpoint is the one to keep
                try:
                    final = writer.finish()
                    if target is not None:
                        self._position = (written, final)
                        self._save(target, done=True)
                        writer.publish()
                except OSError as exc:
                    raise _WriteFailed(exc) from None
            except _WriteFailed as failed:
                self._stop(writer, target)
                if target is None:  # a stream: a closed pipe stays a BrokenPipeError
                    raise failed.error from None
                raise self._write_error(failed.error, target) from None
            except BaseException:
                self._stop(writer, target)
                raise
        finally:
            progress.committed = self._recorded
        if target is not None:
            checkpoint_path(target).unlink(missing_ok=True)
        progress.committed = written
        return written

    # -- starting ------------------------------------------------------------------------

    def _start(self, writer: Writer, target: Path | None, *, resume: bool) -> int | None:
        """Begin or resume ``writer``: the offset to list from (None: it had finished)."""
        if target is None:
            writer.begin()
            return 0
        path = checkpoint_path(target)
        state = read_checkpoint(path, lambda: _start_over(path, writer, None))
        if state is not None and state.done:
            same = state.service.mismatch(self.identity) if state.job == self.job else "another job"
            if writer.finished(state.writer, state.items):
                path.unlink(missing_ok=True)  # killed between the rename and this removal
                if resume and same is None:
                    self.progress.written = self.progress.committed = state.items
                    self.progress.resumed_from = state.items
                    return None
                state = None
            else:
                raise CheckpointError(
                    f"{path} marks a finished export, but {target} is not the file it "
                    f"finished; {_start_over(path, writer, state.writer, 'go on')}"
                )
        if state is None:
            self.progress.nothing_to_resume = resume
            self._service = Service.of(self.identity)
            try:
                writer.begin()
            except OSError as exc:
                raise ExportError(
                    f"cannot create a file beside {target}: {exc.strerror or exc}"
                ) from None
            self._position = (0, writer.position())
            try:
                self._checkpoint(writer, target, force=True)
            except _WriteFailed as failed:
                self._stop(writer, target)
                if target is None:  # a stream: a closed pipe stays a BrokenPipeError
                    raise failed.error from None
                raise self._write_error(failed.error, target) from None
            return 0
        # Every refusal names the way out that works: a resume only where it would be taken.
        start_over = _start_over(path, writer, state.writer)
        reasons = []
        if state.job != self.job:
            reasons.append(
                f"it belongs to another export ({_describe_job(state.job)}), not this one "
                f"({_describe_job(self.job)})"
            )
        elsewhere = state.service.mismatch(self.identity)
        if elsewhere is not None:
            reasons.append(elsewhere)
        if reasons:
            what = "that export" if state.job != self.job else "it"
            # resume=True is named unless this very export asked for it (the default)
            given = resume and state.job == self.job
            again = what if given else f"{what} with resume=True"
            if elsewhere is not None:
                again = f"{what}{_from(state.service, given)}"
            changing = elsewhere is not None and not state.service.named
            raise ResumeMismatchError(
                f"{path} cannot be resumed here: {' and '.join(reasons)}. Nothing was "
                f"written; to continue it, run {again}, or {start_over}"
                f"{SERVICE_ADVICE if changing else ''}"
            )
        if not resume:
            raise ExportError(
                f"{target} has an interrupted export ({state.items:,} items, see {path}): "
                f"pass resume=True to continue it, or {start_over}"
            )
        writer.resume(state.writer, state.items)
        self._service = state.service
        self._position = (state.items, writer.position())
        self._recorded = state.items
        progress = self.progress
        progress.resumed_from = progress.written = progress.committed = state.items
        return state.items

    # -- checkpoints ---------------------------------------------------------------------

    def _checkpoint(self, writer: Writer, target: Path | None, *, force: bool) -> None:
        """Record what is complete, at most every CHECKPOINT_EVERY seconds unless forced."""
        if target is None:
            return
        now = time.monotonic()
        if not force and now - self._last_checkpoint < CHECKPOINT_EVERY:
            return
        self._last_checkpoint = now
        try:
            writer.sync()  # the data is on disk before the checkpoint says so
        except OSError as exc:
            raise _WriteFailed(exc) from None
        self._save(target, done=False)

    def _save(self, target: Path, *, done: bool) -> None:
        assert self._service is not None
        items, position = self._position
        checkpoint = Checkpoint(self.job, self._service, items, position, done)
        try:
            write_checkpoint(checkpoint_path(target), checkpoint)
        except OSError as exc:
            raise _WriteFailed(exc) from None
        self._recorded = items
        self.progress.committed = items

    # -- stopping ------------------------------------------------------------------------

    def _stop(self, writer: Writer, target: Path | None) -> None:
        """After a failure or an interruption: checkpoint what is complete, close.

        A run that wrote no item at all leaves nothing behind, so the next run starts
        afresh without resume=True.
        """
        if target is None:
            return
        if self._position[0] == 0 and self.progress.resumed_from == 0:
            writer.close(keep=False)
            checkpoint_path(target).unlink(missing_ok=True)
            return
        # A checkpoint that cannot be written leaves the one before, which still holds: a
        # resume cuts the file back to it. Once the footer is written, that one is kept.
        if not self._finishing:
            with contextlib.suppress(_WriteFailed):
                self._checkpoint(writer, target, force=True)
        with contextlib.suppress(OSError):
            writer.close(keep=True)

    def _write_error(self, error: OSError, target: Path | None) -> OutputWriteError:
        where = "the output" if target is None else str(target)
        reason = f"cannot write {where}: {error.strerror or error}"
        saved = self._recorded if target is not None else 0
        return OutputWriteError(
            f"{reason}; {saved:,} items are saved, and resuming the export continues from there"
            if saved
            else reason,
            reason=reason,
            saved=saved,
            errno=error.errno,
        )


def _start_over(path: Path, writer: Writer, record: Any, to: str = "start over") -> str:
    """What to delete to start over: the checkpoint and the files its record names."""
    *names, last = [str(path), *(str(file) for file in writer.files(record))]
    return f"delete {', '.join(names)} and {last} to {to}" if names else f"delete {last} to {to}"


SERVICE_ADVICE = (
    ". An export of a service whose address or token changes from run to run while its "
    "data does not (an emulator started again with the same seed and sizes) resumes when "
    "every run passes the same service= (an Emulator's is emu.service)"
)
"""How a program's export resumes across runs of such a service (the command's --emulator
does it itself)."""


def _from(service: Service, given: bool) -> str:
    """Where a checkpoint's export was made, as a way to resume it (``given``: this export
    asked to resume already, so resume=True need not be said)."""
    if service.named:  # written with service=: that is the way back to it
        name = repr(service.base_url[:256])  # read from a file: bounded, escaped
        return f" with service={name}" + ("" if given else " and resume=True")
    token = " with the token it was started with" if service.credentials is not None else ""
    again = "" if given else " with resume=True"
    return f"{again} against {_word(service.base_url)}{token}"


def _describe_job(job: object) -> str:
    """A job in words; a checkpoint's job is read from a file, so each part is bounded."""
    if not isinstance(job, dict):
        return "an unknown export"
    listing = job.get("listing")
    what = job.get("collection") or (listing.get("path") if isinstance(listing, dict) else None)
    text = f"{_word(what)} as {_word(job.get('format'))}"
    if job.get("sort"):
        text += f" sorted by {_word(job['sort'])}"
    if job.get("employer"):
        text += f" of employer {_word(job['employer'])}"
    return text


def _word(value: object) -> str:
    text = str(value)
    if len(text) > 80 or not text.isprintable() or "[" in text:
        text = repr(text[:80])
    return text
