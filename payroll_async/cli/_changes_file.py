"""``mirror --changes FILE``: every committed change in FILE exactly once, whatever happens.

A run writes each change to FILE once it is committed (live), and FILE's cursor,
``FILE.cursor`` beside it, records up to which change of ``mirror_changes`` FILE is
complete, per feed (a collection, or one employer's update groups, of one database), and
FILE's length then. A run

- starts by cutting FILE back to that length (the lines a killed run wrote after its
  cursor: nothing else is ever cut) and writing every change after the cursor from the
  database, then moves the cursor;
- ends by checking that its live lines are all of its own changes (else it writes them
  again from the database), writing what other runs committed meanwhile, and moving the
  cursor past all of it.

So a run killed at any point (SIGKILL included) or stopped by a full disk leaves FILE
with no change missing and none twice once the next run has started. FILE, its cursor and
its lock (``FILE.lock``, one run writes to FILE at a time) are payroll data: created 0600,
never opened through a symbolic link, FILE never with another hard link. ``-`` (standard
output), a pipe or a device get the live lines only: there is nothing to catch up in.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import json
import os
import stat
import sys
import uuid
from collections.abc import Callable
from pathlib import Path

import attrs

from payroll_async.export import (
    MAX_CHECKPOINT_BYTES,
    CheckpointError,
    OutputLockedError,
    checked_open,
    count,
    lock_output,
    not_alone,
    replace_file,
    unlock_output,
)
from payroll_async.mirror import Change, Feed, MirrorError

from ._errors import BadInput

__all__ = ["ChangesFile", "open_changes"]

CURSOR_VERSION = 1
_LOCK_POLL = 0.2  # seconds between tries while another run writes to FILE (--wait)


def line(change: Change) -> bytes:
    """One change as a line of ``--changes``."""
    return json.dumps(change.to_json()).encode() + b"\n"


@attrs.define
class Cursor:
    """What ``FILE.cursor`` says: FILE's length and identity, and each feed's last change."""

    length: int
    """FILE's length: what it holds up to the feeds' changes."""
    file: tuple[int, int]
    """FILE's (device, inode): a FILE replaced since (rotated) is appended to, never cut."""
    feeds: dict[str, int] = attrs.Factory(dict)

    def to_json(self) -> bytes:
        return json.dumps(
            {
                "version": CURSOR_VERSION,
                "bytes": self.length,
                "file": list(self.file),
                "feeds": self.feeds,
            },
            sort_keys=True,
        ).encode()


def _parse(state: object) -> Cursor:
    if type(state) is not dict or state.get("version") != CURSOR_VERSION:
        raise ValueError(f"not a cursor of version {CURSOR_VERSION}")
    file, feeds = state.get("file"), state.get("feeds")
    if type(file) is not list or len(file) != 2:
        raise ValueError("file is not a (device, inode) pair")
    if type(feeds) is not dict:
        raise ValueError("feeds is not an object")
    return Cursor(
        count(state.get("bytes"), "bytes"),
        (count(file[0], "file[0]", 2**64), count(file[1], "file[1]", 2**64)),
        {str(key): count(value, f"feeds[{key!r}]", 2**63) for key, value in feeds.items()},
    )


def _read_cursor(path: Path) -> Cursor | None:
    """The cursor at ``path`` (None when there is none); BadInput when it is not one."""
    try:
        fd, _ = checked_open(path, os.O_RDONLY, "cursor", "payroll-async mirror")
    except FileNotFoundError:
        return None
    except CheckpointError as exc:
        raise BadInput(f"--changes: {exc}") from None
    try:
        data = os.read(fd, MAX_CHECKPOINT_BYTES + 1)
    finally:
        os.close(fd)
    try:
        return _parse(json.loads(data))
    except (ValueError, RecursionError) as exc:  # JSON's errors are ValueErrors
        reason = str(exc) if not isinstance(exc, json.JSONDecodeError) else "it is not JSON"
        raise BadInput(
            f"--changes: {path} is not the cursor of {path.name.removesuffix('.cursor')} "
            f"({reason}); move it away to start a new feed with the next run's changes"
        ) from None


class ChangesFile:
    """``--changes FILE``: live lines, and for a regular file the cursor's catch-up."""

    def __init__(self, path: Path | None, fd: int) -> None:
        self.path = path
        """The regular file with a cursor (None: a stream, live lines only)."""
        self._fd = fd
        self._cursor: Cursor | None = None
        self._pending = bytearray()
        self._lock: tuple[int, Path] | None = None
        self._key = ""
        self._after = 0  # the feed's change the cursor is at
        self._live = 0  # lines written live by this run since the cursor
        self._run: uuid.UUID | None = None  # the run whose changes they are
        self.failed: OSError | None = None
        """The first write that failed (a full disk): FILE is behind until the next run."""

    @property
    def catches_up(self) -> bool:
        """Whether FILE keeps a cursor (a regular file): the run reads the database for it."""
        return self.path is not None

    # -- live lines ----------------------------------------------------------------------

    async def write(self, change: Change) -> None:
        """``on_change``: the line of a committed change, written at the next ``flush``."""
        self._pending += line(change)
        self._live += 1
        self._run = change.run_id

    def flush(self) -> None:
        """Write the pending lines (after each transaction of the run)."""
        data, self._pending = bytes(self._pending), bytearray()
        if not data or self.failed is not None:
            return
        if self.path is None:
            _write_all(self._fd, data)  # a stream: its errors are the command's (| head)
            return
        try:
            _write_all(self._fd, data)
        except OSError as exc:
            self._failed(exc)

    # -- the catch-up ---------------------------------------------------------------------

    async def start(self, feed: Feed) -> None:
        """Cut FILE back to its cursor and write every change of ``feed`` after it."""
        assert self.path is not None
        self._key = f"{feed.database_id} {feed.collection}"
        if feed.employer is not None:
            self._key += f" {feed.employer}"
        info = os.fstat(self._fd)
        cursor = self._cursor
        if cursor is None or cursor.file != (info.st_dev, info.st_ino):
            # New, replaced (rotated) or written before cursors: kept whole, appended to.
            cursor = self._cursor = Cursor(
                info.st_size, (info.st_dev, info.st_ino), cursor.feeds if cursor is not None else {}
            )
        elif info.st_size != cursor.length:
            # Longer: lines of a run killed after its cursor, which the catch-up writes
            # again. Shorter: cut by hand; appended to.
            cursor.length = min(cursor.length, info.st_size)
            os.ftruncate(self._fd, cursor.length)
        after = cursor.feeds.get(self._key)
        try:
            if after is None:  # the feed starts in FILE with this run's changes
                self._after = await feed.last()
                self._save(self._after)
            else:
                self._after = after
                await self._catch_up(feed)
        except OSError as exc:
            self._failed(exc)

    async def finish(self, feed: Feed) -> None:
        """After the run (or its failure): its live lines checked, the rest caught up, the
        cursor moved."""
        assert self._cursor is not None
        self.flush()
        run_id = self._run
        try:
            if self.failed is None:
                recorded, last = 0, None  # no change told: none recorded
                if run_id is not None:
                    recorded, last = await feed.recorded(run_id, self._after)
                if recorded == self._live:
                    # Every change of the run is in FILE, after the cursor: FILE is complete
                    # up to the run's last change once what others committed meanwhile is
                    # written too. No cursor before that: it would have FILE's length with
                    # lines after its change.
                    await self._catch_up(feed, until=last, skip_run=run_id)
                else:
                    self._redo()
            else:
                self._redo()
                self.failed = None  # a second chance: space may have been freed
            await self._catch_up(feed)
        except OSError as exc:
            self._failed(exc)

    def _redo(self) -> None:
        """Forget the live lines: cut them off; the catch-up writes them from the database."""
        assert self._cursor is not None
        os.ftruncate(self._fd, self._cursor.length)
        self._live = 0

    async def _catch_up(
        self, feed: Feed, until: int | None = None, skip_run: uuid.UUID | None = None
    ) -> None:
        """Write the feed's changes after the cursor: each chunk then its cursor, or with
        ``until`` one cursor at ``until`` once every change up to it is written."""
        after = self._after
        while until is None or after < until:
            rows = await feed.after(after, skip_run=skip_run)
            if until is not None:
                rows = [(number, change) for number, change in rows if number <= until]
            if not rows:
                break
            _write_all(self._fd, b"".join(line(c) for _, c in rows if c is not None))
            after = rows[-1][0]
            if until is None:
                self._save(after)
        if until is not None:
            self._save(until)

    def _save(self, after: int) -> None:
        """The cursor at change ``after`` and FILE's length now, FILE durable first."""
        assert self._cursor is not None
        assert self.path is not None
        os.fsync(self._fd)
        length = os.fstat(self._fd).st_size
        cursor = attrs.evolve(
            self._cursor, length=length, feeds={**self._cursor.feeds, self._key: after}
        )
        replace_file(self.path.with_name(self.path.name + ".cursor"), cursor.to_json())
        self._cursor, self._after, self._live = cursor, after, 0

    def _failed(self, exc: OSError) -> None:
        """A write failed: FILE back to its cursor's length (no part of a line left)."""
        if self.failed is None:
            self.failed = exc
        if self._cursor is not None:
            with contextlib.suppress(OSError):
                os.ftruncate(self._fd, self._cursor.length)

    def error(self) -> MirrorError | None:
        """The command's error when FILE is behind (exit 1: a file not written), or None."""
        if self.failed is None:
            return None
        reason = self.failed.strerror or str(self.failed)
        return MirrorError(
            f"cannot write the changes to {self.path}: {reason}; the database holds every "
            f"change, and the next run with --changes {self.path} catches up"
        )

    def close(self) -> None:
        """The last live lines written (a stream's errors raised), FILE and its lock let go."""
        try:
            self.flush()
        finally:
            self._release()

    def _release(self) -> None:
        try:
            os.close(self._fd)
        finally:
            if self._lock is not None:
                unlock_output(*self._lock)
                self._lock = None

    async def lock(self, wait: bool, on_wait: Callable[[str], None]) -> None:
        """One run writes to FILE at a time: ``FILE.lock``, waited for with ``wait``; then
        the cursor is read."""
        if self.path is None:
            return
        advice = "try again later, or wait for it (--wait)"
        waited = False
        while True:
            try:
                self._lock = lock_output(self.path, "mirror", advice)
                self._cursor = _read_cursor(self.path.with_name(self.path.name + ".cursor"))
                return
            except OutputLockedError as exc:
                if not wait:
                    raise BadInput(f"--changes: {exc}") from None
                if not waited:
                    on_wait(f"--changes: {str(exc).partition(';')[0]}; waiting for it to finish")
                    waited = True
            await asyncio.sleep(_LOCK_POLL)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def open_changes(path: str) -> ChangesFile:
    """``--changes PATH``: appended to, created 0600, never written through a link."""
    if path == "-":
        return ChangesFile(None, os.dup(sys.stdout.fileno()))
    flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        fd = os.open(path, flags | os.O_NONBLOCK, 0o600)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise BadInput(f"--changes: {path} is a symbolic link; give the file itself") from None
        raise BadInput(f"--changes: cannot open {path}: {exc.strerror}") from None
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):  # a pipe, a device: streamed
        os.set_blocking(fd, True)
        return ChangesFile(None, fd)
    problem = not_alone(info)
    if problem is not None:
        os.close(fd)
        raise BadInput(f"--changes: {path} {problem}; give a file of your own")
    return ChangesFile(Path(path), fd)
