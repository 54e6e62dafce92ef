"""One process at a time: a lock file held with ``flock`` (the export's and the mirror's).

The kernel lets go of an ``flock`` when its process ends, however it ends, so a lock is
never left behind by a crash. The file is opened with O_NOFOLLOW and must be a regular
file: a link planted at its name is refused, never followed.
"""

from __future__ import annotations

import errno
import fcntl
import os
import stat
from collections.abc import Callable
from pathlib import Path

__all__ = ["open_lock_file", "try_lock"]


def open_lock_file(path: Path, error: Callable[[str], Exception]) -> int:
    """The descriptor of the lock file at ``path`` (created 0600), or ``error(why)``."""
    try:
        fd = os.open(
            path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, 0o600
        )
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise error(f"{path} is a symbolic link; delete it to go on") from None
        raise error(f"cannot open the lock file {path}: {exc.strerror or exc}") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise error(f"{path} is not a regular file; delete it to go on")
    return fd


def try_lock(fd: int) -> bool:
    """Take the lock on ``fd`` if no other process holds it; whether it was taken."""
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
            return False
        raise
    return True
