"""``payroll-async mirror``: a collection into a database, with every change recorded."""

from __future__ import annotations

import contextlib
import re
import uuid
from typing import Any

import click

from payroll_async import PayrollClient
from payroll_async._core._env import MIRROR_URL
from payroll_async._core._types import NOT_GIVEN, NotGiven
from payroll_async._core._validation import check_id

from .._collections import COLLECTIONS
from ._app import Settings, number_option, run
from ._errors import BadInput, CommandError, ParamType, ServiceFailed, in_cli_terms, stderr
from ._progress import progress_bar, show_progress

__all__ = ["mirror"]

DEFAULT_INTO = "sqlite:///payroll.db"


class MaxDeletions(ParamType[int | NotGiven | None]):
    """``--max-deletions``: a count of rows (0 or more), or ``all`` (None: no bound); left
    out, NOT_GIVEN (the mirror's default bound)."""

    name = "N|all"
    _COUNT = re.compile(r"\d{1,18}")

    def convert(
        self, value: Any, param: click.Parameter | None, ctx: click.Context | None
    ) -> int | NotGiven | None:
        if isinstance(value, NotGiven) or value is None:
            return value
        text = str(value).strip()
        if text.lower() == "all":
            return None
        if self._COUNT.fullmatch(text) is None:
            self.fail(f"{value!r} is not a count of rows (0 or more) or 'all'", param, ctx)
        return int(text)


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
@number_option("--page-size", 2, 10_000, 100, "Items per request.")
@number_option("--concurrency", 1, 1024, 8, "Pages fetched at once.")
@click.option(
    "--max-deletions",
    type=MaxDeletions(),
    default=NOT_GIVEN,
    help="Refuse a run that would mark more than N rows deleted ('all': no bound). "
    "Default: more than half of the live rows, when there are 100 or more.",
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
    max_deletions: int | NotGiven | None,
) -> None:
    """Copy COLLECTION into a database and record what changed since the last run.

    Creates the tables on first use; run it again (cron, a worker) to keep them current.
    Another run of the same collection into the same database is refused (exit 2) unless
    --wait. A run that would mark more rows deleted than --max-deletions allows marks
    none (exit 5).

    \b
    payroll-async mirror payroll-connections
    payroll-async mirror update-groups --into postgresql://me@db/payroll --changes c.jsonl
    """
    try:
        from payroll_async._sql import redact
        from payroll_async.mirror import (
            MirrorBusyError,
            MirrorDeletionsError,
            MirrorProgress,
            MirrorURLError,
            open_feed,
        )
        from payroll_async.mirror import (
            mirror as run_mirror,
        )

        from ._changes_file import open_changes
    except ImportError:
        raise BadInput(
            "mirror needs the 'mirror' extra: python3 -m pip install 'payroll-async[mirror]'"
        ) from None
    if employer and collection != "update-groups":
        raise click.UsageError("--employer applies to update-groups only")
    if (too_many := COLLECTIONS[collection].page_size_error(page_size)) is not None:
        raise BadInput(f"--page-size: {too_many}")
    out = open_changes(changes) if changes else None

    async def main(client: PayrollClient) -> Any:
        scope = uuid.UUID(check_id(employer, "employer")) if employer else None
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
                    if out is not None:
                        out.flush()  # the changes of the transaction just committed

                def on_wait(message: str) -> None:
                    bar.console.print(message + " (--wait)")

                if out is not None and out.catches_up:
                    await out.lock(wait, on_wait)
                    async with open_feed(into, collection, scope) as feed:
                        await out.start(feed)
                try:
                    result = await run_mirror(
                        client,
                        collection,
                        into=into,
                        employer=employer,
                        on_change=out.write if out is not None else None,
                        wait=wait,
                        on_wait=on_wait,
                        on_progress=on_progress,
                        page_size=page_size,
                        concurrency=concurrency,
                        max_deletions=max_deletions,
                    )
                except Exception:
                    if out is not None and out.catches_up:
                        # What the run committed before it failed, if the database answers.
                        with contextlib.suppress(Exception):
                            async with open_feed(into, collection, scope) as feed:
                                await out.finish(feed)
                    raise
                if out is not None and out.catches_up:
                    async with open_feed(into, collection, scope) as feed:
                        await out.finish(feed)
                return result, out.error() if out is not None else None, None
        except (MirrorBusyError, MirrorURLError) as exc:
            raise BadInput(in_cli_terms(str(exc))) from None
        except MirrorDeletionsError as exc:  # what the run did, then why it deleted nothing
            refused = ServiceFailed(in_cli_terms(str(exc)))
            return exc.result, out.error() if out is not None else None, refused
        finally:
            if out is not None:
                out.close()

    result, failed, refused = run(
        settings, main, lambda: "Interrupted; run the same command to finish."
    )
    where = redact(into)
    stderr.print(
        f"Mirrored {result.items:,} {collection} into {where}: {result.inserted:,} inserted, "
        f"{result.updated:,} updated, {result.deleted:,} deleted, "
        f"{result.unchanged:,} unchanged (run {result.run_id})"
    )
    # The changes file that cannot be written is a file of the command's, as the export's
    # output is: exit 1 (the table's "a file that cannot be written"), not the service's 5.
    unwritten = None if failed is None else CommandError(str(failed))
    if refused is not None:
        if unwritten is not None:
            unwritten.show()
        raise refused
    if not result.complete:
        stderr.print(
            "The service changed too much during the run to prove every deletion; "
            "run it again to finish."
        )
    if unwritten is not None:
        raise unwritten
