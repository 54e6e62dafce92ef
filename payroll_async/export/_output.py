"""Where an export writes: the target, its lock, and the writers of a file or a stream.

Payroll data is written as payroll data:

- Every side file is created with ``O_CREAT|O_EXCL`` (``mkstemp``) under a random name in
  the target's directory, mode 0600, or opened with ``O_NOFOLLOW``: a link planted beside
  the target is never written through. The finished file replaces the target in one
  ``rename``; a new file is 0600, and a file being replaced keeps its own mode.
- A target that is a symlink to a regular file is resolved (the link stays a link); a
  dangling symlink is refused, as GNU ``cp`` refuses it. ``-``, FIFOs, devices and sockets
  are streamed, never created.
- One export writes to one target at a time: ``fcntl.flock`` on ``OUT.lock``.
"""

from __future__ import annotations

import glob
import os
import re
import stat
import tempfile
from collections.abc import Mapping, Sequence
from contextlib import suppress
from pathlib import Path
from typing import IO, Any

from .._core._lockfile import open_lock_file, try_lock
from ._checkpoint import (
    CheckpointError,
    ExportError,
    OutputLockedError,
    checked_open,
    checkpoint_path,
    count,
    shown,
    sync_directory,
)
from ._formats import Format

__all__ = ["FileWriter", "StreamWriter", "is_streamed", "lock_output", "open_target"]


def open_target(output: str) -> tuple[Path | None, IO[bytes] | None]:
    """Where an export goes: (the real file to replace atomically, None) or (None, a stream).

    ``-`` is (None, None): standard output. An existing target that is not a regular file
    is opened and written directly; a symlink to a regular file is resolved to that file.
    """
    if output == "":
        raise ExportError("an export needs a file name (or - for standard output)")
    if output == "-":
        return None, None
    path = Path(output)
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        _check_directory(path)
        return path, None
    except OSError as exc:
        raise ExportError(f"cannot use {path}: {exc.strerror or exc}") from None
    if stat.S_ISLNK(info.st_mode):
        try:
            info = os.stat(path)
        except FileNotFoundError:
            raise ExportError(
                f"not writing through the dangling symbolic link {path} "
                f"(it points to {os.readlink(path)}, which does not exist)"
            ) from None
        except OSError as exc:
            raise ExportError(f"cannot use {path}: {exc.strerror or exc}") from None
        if stat.S_ISREG(info.st_mode):
            return Path(os.path.realpath(path)), None
    if stat.S_ISDIR(info.st_mode):
        raise ExportError(f"{path} is a directory; an export is written to a file")
    if stat.S_ISREG(info.st_mode):
        return path, None
    return None, _open_stream(path)  # FIFO, device, socket: streamed, nothing beside it


def _check_directory(path: Path) -> None:
    directory = path.parent
    if not directory.exists():
        raise ExportError(f"directory {directory} does not exist")
    if not directory.is_dir():
        raise ExportError(f"{directory} is not a directory")


def _open_stream(path: Path) -> IO[bytes]:
    # Never O_CREAT or O_TRUNC: this opens what is there, and only if it is not a file.
    try:
        fd = os.open(path, os.O_WRONLY | os.O_NOCTTY | os.O_CLOEXEC)
    except OSError as exc:
        raise ExportError(f"cannot write to {path}: {exc.strerror or exc}") from None
    if stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise ExportError(f"{path} changed while it was opened; run the export again")
    return os.fdopen(fd, "wb")


def is_streamed(output: str) -> bool:
    """Whether ``output`` is written straight through (``-``, a FIFO, a device): no resume."""
    if output == "-":
        return True
    try:
        return not stat.S_ISREG(Path(output).stat().st_mode)
    except OSError:
        return False


# -- one writer per target ---------------------------------------------------------------


_LOCK_TEXT = re.compile(rb"(?:[0-9]{1,20}\n)?")  # empty, or the process id of its last holder


def lock_output(
    target: Path,
    kind: str = "export",
    advice: str = "wait for it to finish, or stop it and run this one with resume=True",
) -> tuple[int, Path]:
    """Lock ``target`` for this ``kind`` of writer: (the lock's descriptor, its path), or raise.

    ``OUT.lock`` is opened with O_NOFOLLOW and locked with ``flock``, which the kernel
    releases when the process ends however it ends. A lock file that was replaced while
    this process waited for it is opened again, so two exports never hold two locks.
    """
    path = target.with_name(target.name + ".lock")
    for _ in range(5):
        fd = open_lock_file(path, ExportError)
        info = os.fstat(fd)
        try:
            locked = try_lock(fd)
        except OSError as exc:
            os.close(fd)
            raise ExportError(f"cannot lock {target}: {exc.strerror or exc}") from None
        if not locked:
            holder = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
            os.close(fd)
            who = f" (process {holder})" if holder.isdigit() else ""
            raise OutputLockedError(
                f"another {kind}{who} is writing to {target}; {advice}"
            ) from None
        try:
            now = os.lstat(path)
        except FileNotFoundError:
            now = None
        if now is None or (now.st_dev, now.st_ino) != (info.st_dev, info.st_ino):
            os.close(fd)  # the one that held it removed it meanwhile: take the new one
            continue
        if not _LOCK_TEXT.fullmatch(os.pread(fd, 64, 0)):
            os.close(fd)  # a file of the user's that happens to have the name: leave it be
            raise ExportError(
                f"{path} exists and is not an export's lock file; move it away to go on"
            )
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        return fd, path
    raise OutputLockedError(f"{target} is being locked and unlocked by other exports; try again")


def unlock_output(fd: int, path: Path) -> None:
    """Remove the lock file and let go of it (removed first, while still held)."""
    try:
        path.unlink(missing_ok=True)
    finally:
        os.close(fd)


# -- writers -------------------------------------------------------------------------------

_NEW_FILE_MODE = 0o600


class FileWriter:
    """A :class:`~payroll_async.export._checkpoint.Writer` to a regular file, replaced at the end.

    Writes go to ``OUT.<random>.partial`` (0600, created with O_EXCL); its name and length
    are this writer's part of a checkpoint. The name is random, so nothing planted at a
    name known in advance is in its way; the messages that say what to delete name it.
    """

    def __init__(self, target: Path, fmt: Format, columns: list[str]) -> None:
        self.target = target
        self.fmt = fmt
        self.raw = fmt.raw
        self._columns = columns
        self._file: IO[bytes] | None = None
        self._partial: Path | None = None
        self._bytes = 0
        self._items = 0

    @property
    def partial(self) -> Path | None:
        """The partial file being written (None before ``begin`` or ``resume``)."""
        return self._partial

    def begin(self) -> None:
        fd, name = tempfile.mkstemp(
            prefix=f"{self.target.name}.", suffix=".partial", dir=self.target.parent
        )
        self._partial = Path(name)
        self._file = os.fdopen(fd, "wb", buffering=0)  # pages are written whole: no buffer
        self._write(self.fmt.header(self._columns))

    def files(self, record: Mapping[str, Any] | None) -> list[Path]:
        """The partial file ``record`` names, or else the first five beside the target."""
        if record is not None:
            with suppress(CheckpointError):
                return [self._named(record)[0]]
        pattern = f"{glob.escape(self.target.name)}.*.partial"
        return sorted(self.target.parent.glob(pattern))[:5]

    def _named(self, record: Mapping[str, Any]) -> tuple[Path, int]:
        """The partial file and length a checkpoint's ``writer`` record names, checked."""
        name, size = record.get("partial"), record.get("bytes")
        prefix = f"{self.target.name}."
        if (
            type(name) is not str
            or not name.startswith(prefix)
            or not name.endswith(".partial")
            or len(name) <= len(prefix) + len(".partial")
            or "/" in name
            or "\0" in name
        ):
            raise CheckpointError(
                f"the checkpoint of {self.target} names {shown(name)}, not a partial file of "
                f"it; delete {checkpoint_path(self.target)} to start over"
            )
        try:
            length = count(size, "writer.bytes")
        except ValueError as exc:
            raise CheckpointError(f"the checkpoint of {self.target} is damaged ({exc})") from None
        return self.target.with_name(name), length

    def resume(self, record: Mapping[str, Any], items: int) -> None:
        partial, size = self._named(record)
        try:
            fd, info = checked_open(partial, os.O_RDWR, "partial file")
        except FileNotFoundError:
            raise CheckpointError(
                f"{partial}, the partial file of the interrupted export, is missing; "
                f"delete {self.target.name}.checkpoint to start over"
            ) from None
        try:
            if info.st_size < size:
                raise CheckpointError(
                    f"{partial} is shorter than its checkpoint says "
                    f"({info.st_size} < {size} bytes); delete {partial} and "
                    f"{self.target.name}.checkpoint to start over"
                )
            found = self.fmt.count(fd, size)
            if found != items:
                raise CheckpointError(
                    f"{partial} holds {max(found, 0):,} items, not the {items:,} its "
                    f"checkpoint says; delete {partial} and {self.target.name}.checkpoint "
                    f"to start over"
                )
            os.ftruncate(fd, size)  # drop whatever was written after the checkpoint
            file = os.fdopen(fd, "r+b", buffering=0)
        except BaseException:
            os.close(fd)
            raise
        file.seek(size)
        self._file, self._partial, self._bytes, self._items = file, partial, size, items

    def finished(self, record: Mapping[str, Any], items: int) -> bool:
        """Whether the whole file a checkpoint marked done is in place: killed after the
        rename and before the checkpoint's removal, or (the rename is then done now) after
        the done checkpoint and before the rename."""
        partial, size = self._named(record)
        if partial.exists():
            try:
                fd, info = checked_open(partial, os.O_RDONLY, "partial file")
            except (FileNotFoundError, CheckpointError):
                return False
            try:
                whole = self._holds(fd, info.st_size, size, items)
            finally:
                os.close(fd)
            if whole:
                os.replace(partial, self.target)
                sync_directory(self.target.parent)
            return whole
        try:
            fd, info = checked_open(self.target, os.O_RDONLY, "export")
        except (FileNotFoundError, CheckpointError):
            return False
        try:
            return self._holds(fd, info.st_size, size, items)
        finally:
            os.close(fd)

    def _holds(self, fd: int, length: int, size: int, items: int) -> bool:
        """Whether a finished file of ``length`` bytes is ``size`` long with ``items``."""
        return length == size and self.fmt.count(fd, size - len(self.fmt.footer)) == items

    def _write(self, data: bytes) -> None:
        # Unbuffered, so that a failed write (a full disk) leaves nothing pending: the file
        # holds whole pages up to ``_bytes`` and perhaps part of the next, which sync cuts.
        assert self._file is not None
        view = memoryview(data)
        while view:
            written = self._file.write(view)
            view = view[written or 0 :]
        self._bytes += len(data)

    def write(self, items: Sequence[Any]) -> None:
        self._write(self.fmt.page(items, self._columns, self._items == 0))
        self._items += len(items)

    def position(self) -> dict[str, Any]:
        assert self._partial is not None
        return {"partial": self._partial.name, "bytes": self._bytes}

    def sync(self) -> None:
        """Make the whole pages written durable, and drop part of a page that failed."""
        assert self._file is not None
        fd = self._file.fileno()
        os.ftruncate(fd, self._bytes)  # frees what a failed write took, on a full disk too
        self._file.seek(self._bytes)
        os.fsync(fd)

    def finish(self) -> dict[str, Any]:
        """Write the footer, give the file its mode, make it durable: the final position."""
        assert self._file is not None
        self._write(self.fmt.footer)
        os.fchmod(self._file.fileno(), _mode_of(self.target))
        os.fsync(self._file.fileno())
        return self.position()

    def publish(self) -> None:
        """Replace the target with the finished file, in one rename."""
        assert self._partial is not None
        self.close(keep=True)
        os.replace(self._partial, self.target)
        sync_directory(self.target.parent)

    def close(self, *, keep: bool) -> None:
        file, self._file = self._file, None
        if file is not None:
            try:
                file.close()
            except OSError:
                if keep:
                    raise
        if not keep and self._partial is not None:
            self._partial.unlink(missing_ok=True)


def _mode_of(target: Path) -> int:
    """The mode for the finished file: the replaced file's own, else 0600 for a new one."""
    try:
        info = os.stat(target, follow_symlinks=False)
    except OSError:
        return _NEW_FILE_MODE
    return stat.S_IMODE(info.st_mode) & 0o777 if stat.S_ISREG(info.st_mode) else _NEW_FILE_MODE


class StreamWriter:
    """A writer straight into a stream (standard output, a pipe, a device): no resume."""

    def __init__(self, stream: IO[bytes], fmt: Format, columns: list[str]) -> None:
        self.stream = stream
        self.fmt = fmt
        self.raw = fmt.raw
        self._columns = columns
        self._items = 0

    def begin(self) -> None:
        self.stream.write(self.fmt.header(self._columns))

    def resume(self, record: Mapping[str, Any], items: int) -> None:
        raise ExportError("a stream is written whole each time: there is nothing to resume")

    def finished(self, record: Mapping[str, Any], items: int) -> bool:
        return False

    def write(self, items: Sequence[Any]) -> None:
        self.stream.write(self.fmt.page(items, self._columns, self._items == 0))
        self._items += len(items)

    def position(self) -> dict[str, Any]:
        return {}

    def sync(self) -> None:
        self.stream.flush()

    def finish(self) -> dict[str, Any]:
        self.stream.write(self.fmt.footer)
        self.stream.flush()
        return {}

    def publish(self) -> None:
        pass

    def close(self, *, keep: bool) -> None:
        pass

    def files(self, record: Mapping[str, Any] | None) -> list[Path]:
        return []
