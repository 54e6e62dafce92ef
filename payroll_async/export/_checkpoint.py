"""An export's checkpoint, the protocol of the writers it checkpoints, and the export's errors.

A checkpoint is a small JSON file beside the output, ``OUT.checkpoint``::

    {"version": 2, "job": {...}, "service": {"baseUrl": ..., "salt": ..., "credentials": ...},
     "items": 34900, "writer": {"partial": "OUT.k2j4f9.partial", "bytes": 5123456},
     "done": false}

- ``job`` names what is exported (collection, format, ...), ``service`` the base URL and a
  salted SHA-256 of the token (never the token): a checkpoint of another job, another
  service or another account is never resumed.
- ``items`` are complete and on disk; ``writer`` is the writer's own record of where they
  end (for a file: the random name of its partial file and its length), so a new kind of
  output is a new :class:`Writer`, not a change to the exporter.

A checkpoint comes from a file that anyone with write access to the directory can plant
or edit, so it is read as hostile input: opened without following a link, owned by this
user, bounded in size, and every field checked for type and range. Anything else is a
:class:`CheckpointError` that says what is wrong and how to start over.
"""

from __future__ import annotations

import errno
import hmac
import json
import os
import secrets
import stat
import tempfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

import attrs

from .._core._exceptions import PayrollError
from .._http._auth import Identity

__all__ = [
    "CHECKPOINT_VERSION",
    "Checkpoint",
    "CheckpointError",
    "ExportError",
    "OutputLockedError",
    "OutputWriteError",
    "ResumeMismatchError",
    "Service",
    "Writer",
    "checkpoint_path",
    "read_checkpoint",
    "replace_file",
    "shown",
    "write_checkpoint",
]

CHECKPOINT_VERSION = 2
MAX_CHECKPOINT_BYTES = 64 * 1024
MAX_ITEMS = 2**53  # far past any listing, and exact in every JSON reader
MAX_BYTES = 2**62


class ExportError(PayrollError):
    """The export cannot start or resume as asked (the command's exit code 2).

    E.g. an interrupted export without ``resume``, resuming what is written to a pipe, or
    a target whose directory does not exist.
    """


class CheckpointError(ExportError):
    """A checkpoint (or the partial file it names) that this export cannot trust.

    Tampered, truncated, of another version, a link, owned by another user, or naming a
    partial file that does not hold what it says. Delete both to start over.
    """


class ResumeMismatchError(ExportError):
    """A resume of a checkpoint written for another export, service or account."""


class OutputLockedError(ExportError):
    """Another export is writing to the same output right now."""


class OutputWriteError(ExportError):
    """Writing the output failed (a full disk, a quota); what was saved can be resumed.

    The next export of the same listing to the same file (``resume=True``) continues from
    what was saved.
    """

    def __init__(self, message: str, *, reason: str, saved: int, errno: int | None) -> None:
        super().__init__(message)
        self.reason: str = reason
        """What failed, e.g. "cannot write out.jsonl: No space left on device"."""
        self.saved: int = saved
        """Items on disk and recorded in the checkpoint: where a resume continues."""
        self.errno: int | None = errno
        """The failure's ``errno`` (``errno.ENOSPC`` for a full disk)."""


class Writer(Protocol):
    """Where an export's items go, and how a checkpoint finds its place again.

    The exporter calls ``begin`` (a fresh export) or ``resume`` (a checkpoint's ``writer``
    record and item count), then ``write`` for each page, ``position`` after each page
    (kept in memory), ``sync`` before a checkpoint records a position, and ``finish`` or
    ``close``. ``files`` names what it keeps beside the target for a checkpoint's record
    (for the messages that say what to delete to start over). A Parquet file or a
    database sink is a new Writer.
    """

    raw: bool
    """``write`` takes each item's JSON bytes as the service sent them (else models)."""

    def begin(self) -> None: ...

    def resume(self, record: Mapping[str, Any], items: int) -> None: ...

    def finished(self, record: Mapping[str, Any], items: int) -> bool: ...

    def write(self, items: Sequence[Any]) -> None: ...

    def position(self) -> dict[str, Any]: ...

    def sync(self) -> None: ...

    def finish(self) -> dict[str, Any]: ...

    def publish(self) -> None: ...

    def close(self, *, keep: bool) -> None: ...

    def files(self, record: Mapping[str, Any] | None) -> list[Path]: ...


@attrs.frozen
class Service:
    """The base URL and account a checkpoint belongs to: a salted hash, never the token."""

    base_url: str
    salt: str
    credentials: str | None  # None: a TokenProvider, whose tokens rotate

    @classmethod
    def of(cls, identity: Identity) -> Service:
        salt = secrets.token_hex(16)
        return cls(identity.base_url, salt, identity.fingerprint(bytes.fromhex(salt)))

    @property
    def named(self) -> bool:
        """Whether it was written with ``service=`` (a name, not the service's URL)."""
        return self.credentials is None and not self.base_url.startswith(("http://", "https://"))

    def mismatch(self, identity: Identity) -> str | None:
        """Why a client sending as ``identity`` may not resume this, or None."""
        if identity.base_url != self.base_url:
            return f"it was written from {self.base_url}, not {identity.base_url}"
        if identity.rotating != (self.credentials is None):
            return "it was written with another kind of credentials"
        fingerprint = identity.fingerprint(bytes.fromhex(self.salt))
        if (
            fingerprint is not None
            and self.credentials is not None
            and not hmac.compare_digest(fingerprint, self.credentials)
        ):
            return "it was written with another token (another account)"
        return None


@attrs.frozen
class Checkpoint:
    """What an interrupted (or just finished) export left on disk."""

    job: Mapping[str, Any]
    service: Service
    items: int
    writer: Mapping[str, Any]
    done: bool = False

    def to_json(self) -> bytes:
        service = self.service
        return json.dumps(
            {
                "version": CHECKPOINT_VERSION,
                "job": self.job,
                "service": {
                    "baseUrl": service.base_url,
                    "salt": service.salt,
                    "credentials": service.credentials,
                },
                "items": self.items,
                "writer": self.writer,
                "done": self.done,
            }
        ).encode()


def checkpoint_path(target: Path) -> Path:
    """The checkpoint kept beside ``target``: ``OUT.checkpoint``."""
    return target.with_name(target.name + ".checkpoint")


def count(value: object, name: str, limit: int = MAX_BYTES) -> int:
    """``value`` as a count: an integer (not a bool) from 0 to ``limit``."""
    if type(value) is not int or not 0 <= value <= limit:
        raise ValueError(f"{name} is {shown(value)}, not a count")
    return value


def _text(value: object, name: str, *, hexadecimal: bool = False) -> str:
    if type(value) is not str or not value or len(value) > 4096:
        raise ValueError(f"{name} is {shown(value)}, not a text")
    if hexadecimal:
        try:
            bytes.fromhex(value)
        except ValueError:
            raise ValueError(f"{name} is not hexadecimal") from None
    return value


def shown(value: object) -> str:
    """``value`` read from a file, for a message: its repr, at most 40 characters."""
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _parse(state: object) -> Checkpoint:
    if type(state) is not dict:
        raise ValueError(f"it holds {type(state).__name__}, not an object")
    if state.get("version") != CHECKPOINT_VERSION or type(state["version"]) is not int:
        version = shown(state.get("version"))
        raise ValueError(f"it is of version {version}, not {CHECKPOINT_VERSION}")
    job, service, writer = state.get("job"), state.get("service"), state.get("writer")
    if type(job) is not dict:
        raise ValueError(f"job is {shown(job)}, not an object")
    if type(service) is not dict:
        raise ValueError(f"service is {shown(service)}, not an object")
    if type(writer) is not dict:
        raise ValueError(f"writer is {shown(writer)}, not an object")
    credentials = service.get("credentials")
    done = state.get("done", False)
    if type(done) is not bool:
        raise ValueError(f"done is {shown(done)}, not true or false")
    return Checkpoint(
        job=job,
        service=Service(
            base_url=_text(service.get("baseUrl"), "service.baseUrl"),
            salt=_text(service.get("salt"), "service.salt", hexadecimal=True),
            credentials=None
            if credentials is None
            else _text(credentials, "service.credentials", hexadecimal=True),
        ),
        items=count(state.get("items"), "items", MAX_ITEMS),
        writer=writer,
        done=done,
    )


def checked_open(
    path: Path, flags: int, what: str, writer: str = "an export"
) -> tuple[int, os.stat_result]:
    """Open an existing ``path`` never through a link: a regular file of this user's, alone.

    Raises FileNotFoundError when it is not there, CheckpointError when it is not such a
    file.
    """
    try:
        fd = os.open(path, flags | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        raise
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise CheckpointError(
                f"{path} is a symbolic link, not the {what} {writer} wrote; "
                f"nothing was written through it: delete it to go on"
            ) from None
        raise CheckpointError(f"cannot open {path}: {exc.strerror or exc}") from None
    info = os.fstat(fd)
    problem = not_alone(info)
    if problem is not None:
        os.close(fd)
        raise CheckpointError(
            f"{path} {problem}, so it is not the {what} {writer} wrote; move it away to go on"
        )
    return fd, info


def not_alone(info: os.stat_result) -> str | None:
    """What keeps an open file from being a regular file of this user's, alone, or None."""
    if not stat.S_ISREG(info.st_mode):
        return "is not a regular file"
    if info.st_uid != os.geteuid():
        return "belongs to another user"
    if info.st_nlink != 1:
        return "has other hard links"
    return None


def read_checkpoint(path: Path, start_over: Callable[[], str] | None = None) -> Checkpoint | None:
    """The checkpoint at ``path``, None when there is none; CheckpointError if untrusted.

    ``start_over()`` says what to do instead ("delete X and Y to start over"), asked only
    when the checkpoint is refused.
    """

    def advice() -> str:
        if start_over is not None:
            return start_over()
        return f"delete {path} and the partial file beside it to start over"

    try:
        fd, info = checked_open(path, os.O_RDONLY, "checkpoint")
    except FileNotFoundError:
        return None
    try:
        if info.st_size > MAX_CHECKPOINT_BYTES:
            raise CheckpointError(
                f"{path} is too large ({info.st_size:,} bytes) to be a checkpoint; {advice()}"
            )
        with os.fdopen(fd, "rb", closefd=False) as file:
            data = file.read(MAX_CHECKPOINT_BYTES + 1)
    finally:
        os.close(fd)
    try:
        state = json.loads(data)
    except (ValueError, RecursionError):  # UnicodeDecodeError is a ValueError
        state, reason = None, "it is not JSON"
    else:
        try:
            return _parse(state)
        except ValueError as exc:
            reason = str(exc)
    raise CheckpointError(
        f"{path} is not a checkpoint this version can resume ({reason}); {advice()}"
    )


def write_checkpoint(path: Path, checkpoint: Checkpoint) -> None:
    """Replace ``path`` with ``checkpoint`` atomically (see `replace_file`)."""
    replace_file(path, checkpoint.to_json())


def replace_file(path: Path, data: bytes) -> None:
    """Replace ``path`` with ``data`` atomically: a new 0600 file, fsynced, renamed.

    The file is created under a random name (O_EXCL, never through a link) and renamed over
    ``path``, which replaces a link planted there instead of writing through it.
    """
    fd, tmp = tempfile.mkstemp(prefix=f"{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as file:
            file.write(data)
            file.flush()
            os.fsync(file.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    sync_directory(path.parent)


def sync_directory(directory: Path) -> None:
    """fsync a directory, so that a rename in it survives a crash (best effort)."""
    try:
        fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
