"""Bulk export to a file that is always whole, and that an interrupted run can resume.

```pycon
>>> from payroll_async.export import export_to_file
>>> listing = client.payroll_connections.list()
>>> result = await export_to_file(listing, "connections.jsonl")
>>> result.items
25000
```

Run it again after a crash (a killed worker, a lost connection, a full disk) and it
continues where the last checkpoint left off: the file ends with every item exactly once.
The command's ``export`` is built on it.

The export writes to ``FILE.<random>.partial`` beside the target (created 0600 with
``O_EXCL``, never through a link) and renames it to ``FILE`` only when every item is
written, so a finished file is never half a file; a file it replaces keeps its own mode.
Every half second (and when the run stops, for whatever reason) it records in
``FILE.checkpoint`` how many items, and how many bytes of the partial file, are complete
and on disk, with the base URL and a salted hash of the token (or the ``service`` it is
given). A resume checks all of it (the same job, service and account, and a partial file
that holds what the checkpoint says), cuts the partial file back to
that length and continues the listing at that offset: nothing lost, nothing twice.

``FILE.lock`` (``flock``) keeps a second export from writing to the same file meanwhile:
it gets :class:`OutputLockedError` at once.

Only a regular file (or a symlink to one, resolved: the link stays a link) gets the
partial file and the checkpoint. ``-`` is standard output, and a target that exists and is
not a regular file (a FIFO, a character device such as /dev/null, a socket, /dev/fd/N) is
written directly, streaming; such an export cannot be resumed. A dangling symlink is
refused. JSON Lines and JSON are written from the bytes the service sent (see
``_formats``); CSV cells that a spreadsheet would run as a formula get a ``'`` in front,
unless ``csv_raw=True``.
"""

from ._api import ExportResult, export_to_file
from ._checkpoint import (
    CHECKPOINT_VERSION,
    CheckpointError,
    ExportError,
    OutputLockedError,
    OutputWriteError,
    ResumeMismatchError,
    Writer,
)
from ._checkpoint import MAX_CHECKPOINT_BYTES as MAX_CHECKPOINT_BYTES
from ._checkpoint import checked_open as checked_open
from ._checkpoint import count as count
from ._checkpoint import not_alone as not_alone
from ._checkpoint import replace_file as replace_file
from ._exporter import SERVICE_ADVICE as SERVICE_ADVICE
from ._exporter import ExportProgress
from ._formats import FORMATS, Format
from ._output import is_streamed, open_target
from ._output import lock_output as lock_output
from ._output import unlock_output as unlock_output

# Beyond __all__ (the `as` names above), the face offers the command what its changes file
# shares with a checkpoint: a private file read within its bound and replaced whole, and
# the output's lock; and the advice of a refused resume that only a program can follow.

__all__ = [
    "CHECKPOINT_VERSION",
    "FORMATS",
    "CheckpointError",
    "ExportError",
    "ExportProgress",
    "ExportResult",
    "Format",
    "OutputLockedError",
    "OutputWriteError",
    "ResumeMismatchError",
    "Writer",
    "export_to_file",
    "is_streamed",
    "open_target",
]
