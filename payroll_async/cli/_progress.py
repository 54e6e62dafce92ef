"""The progress bar of the commands that walk a whole collection (export, mirror).

On stderr, and only when stderr is a terminal: a pipe or a log file gets the final line
of the command, not a bar redrawn many times a second.
"""

from __future__ import annotations

from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TaskProgressColumn,
    TextColumn,
    TimeRemainingColumn,
)
from rich.table import Column

from ._errors import stderr

__all__ = ["progress_bar", "show_progress"]


def progress_bar() -> Progress:
    """Description, bar, done of total, percent, items/s and time left (off unless a terminal).

    Add its task with ``rate=""`` and update it with `show_progress`.
    """
    return Progress(
        TextColumn("[progress.description]{task.description}"),
        BarColumn(),
        # Numbers are never cut to fit a narrow terminal (80 columns): the bar shrinks.
        MofNCompleteColumn(table_column=Column(no_wrap=True)),
        TaskProgressColumn(),
        TextColumn("{task.fields[rate]}", table_column=Column(no_wrap=True)),
        TimeRemainingColumn(),
        console=stderr,
        disable=not stderr.is_terminal,
        transient=False,
    )


def show_progress(bar: Progress, task: TaskID, done: int, total: int | None) -> None:
    """``done`` items of ``total`` (None: not known yet), and the rate since the task began."""
    elapsed = bar.tasks[task].elapsed or 0.0
    rate = f"{done / elapsed:,.0f} items/s" if elapsed > 0 else ""
    bar.update(task, total=total, completed=done, rate=rate)
