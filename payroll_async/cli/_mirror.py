"""``payroll-async mirror``: a collection into a database, with every change recorded."""

from __future__ import annotations

import errno
import json
import os
import sys
from typing import IO, Any

import click

from payroll_async import PayrollClient
from payroll_async._env import MIRROR_URL

from ._app import Settings, run
from ._collections import COLLECTIONS
from ._errors import BadInput, stderr
from ._progress import progress_bar, show_progress

__all__ = ["mirror"]

DEFAULT_INTO = "sqlite:///payroll.db"


def _changes_file(path: str) -> IO[bytes]:
    """``--changes FILE``: appended to, created 0600, never written through a link."""
    if path == "-":
        return os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        fd = os.open(path, flags, 0o600)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise BadInput(f"--changes: {path} is a symbolic link; give the file itself") from None
        raise BadInput(f"--changes: cannot open {path}: {exc.strerror}") from None
    return os.fdopen(fd, "ab")


@click.command()
@click.argument("collection", type=click.Choice(list(COLLECTIONS)))
@click.option(
    "--into",
    envvar=MIRROR_URL,
    default=DEFAULT_INTO,
    show_default=True,
    metavar="URL",
    help=f"sqlite:///PATH or postgresql://USER:PASSWORD@HOST/DB [env: {MIRROR_URL}].",
)
@click.option(
    "--employer", metavar="ID", help="update-groups: only this employer's (default: every one)."
)
@click.option(
    "--changes", metavar="FILE", help="Append each change to FILE as JSON Lines (- for stdout)."
)
@click.option(
    "--wait", is_flag=True, help="If another mirror of COLLECTION into URL runs, wait for it."
)
@click.option(
    "--page-size",
    type=click.IntRange(2, 10_000),
    default=100,
    show_default=True,
    help="Items per request.",
)
@click.option(
    "--concurrency",
    type=click.IntRange(1, 1024),
    default=8,
    show_default=True,
    help="Pages fetched at once.",
)
@click.pass_obj
def mirror(
    settings: Settings,
    collection: str,
    into: str,
    employer: str | None,
    changes: str | None,
    wait: bool,
    page_size: int,
    concurrency: int,
) -> None:
    """Copy COLLECTION into a database and record what changed since the last run.

    Creates the tables on first use; run it again (cron, a worker) to keep them current.
    Another run of the same collection into the same database is refused (exit 2) unless
    --wait.

    \b
    payroll-async mirror payroll-connections
    payroll-async mirror update-groups --into postgresql://me@db/payroll --changes c.jsonl
    """
    try:
        from payroll_async.mirror import MirrorBusyError, MirrorProgress, MirrorURLError
        from payroll_async.mirror import mirror as run_mirror
        from payroll_async.mirror._db import redact
    except ImportError:
        raise BadInput(
            "mirror needs the 'mirror' extra: python3 -m pip install 'payroll-async[mirror]'"
        ) from None
    if employer and collection != "update-groups":
        raise click.UsageError("--employer applies to update-groups only")
    if collection == "webhooks" and page_size > 100:
        raise BadInput("--page-size: webhooks are listed at most 100 a page")
    out = _changes_file(changes) if changes else None

    async def on_change(change: Any) -> None:
        assert out is not None
        out.write(json.dumps(change.to_json()).encode() + b"\n")

    async def main(client: PayrollClient) -> Any:
        try:
            with progress_bar() as bar:
                task = bar.add_task(f"Mirroring {collection}", total=None, rate="")
                walk = 1

                def on_progress(progress: MirrorProgress) -> None:
                    nonlocal walk
                    if progress.pass_number != walk:  # walked again to prove deletions
                        walk = progress.pass_number
                        bar.reset(task, description=f"Mirroring {collection} (walk {walk})")
                    show_progress(bar, task, progress.items, progress.total)

                return await run_mirror(
                    client,
                    collection,
                    into=into,
                    employer=employer,
                    on_change=on_change if out is not None else None,
                    wait=wait,
                    on_wait=lambda message: bar.console.print(message + " (--wait)"),
                    on_progress=on_progress,
                    page_size=page_size,
                    concurrency=concurrency,
                )
        except (MirrorBusyError, MirrorURLError) as exc:
            raise BadInput(str(exc)) from None
        finally:
            if out is not None:
                out.close()

    result = run(settings, main, lambda: "Interrupted; run the same command to finish.")
    where = redact(into)
    stderr.print(
        f"Mirrored {result.items:,} {collection} into {where}: {result.inserted:,} inserted, "
        f"{result.updated:,} updated, {result.deleted:,} deleted, "
        f"{result.unchanged:,} unchanged (run {result.run_id})"
    )
    if not result.complete:
        stderr.print(
            "The service changed too much during the run to prove every deletion; "
            "run it again to finish."
        )
