"""``payroll-async export``: every item of a collection to a file, resumably."""

from __future__ import annotations

import sys
from typing import Any

import click
from rich.progress import Progress

from payroll_async import NOT_GIVEN, Page, PayrollClient
from payroll_async._core._converter import to_camel
from payroll_async.export import (
    FORMATS,
    ExportProgress,
    ExportResult,
    OutputWriteError,
    ResumeMismatchError,
    export_to_file,
    is_streamed,
)

from .._collections import COLLECTIONS, Collection
from ._app import Settings, number_option, run
from ._demo import DEMO_SERVICE
from ._errors import BadInput, CommandError, in_cli_terms, stderr
from ._progress import progress_bar, show_progress

__all__ = ["export"]


def _check_sort(sort: str, collection: Collection) -> None:
    """Sort fields must be fields of the model: bad input, before anything is sent."""
    columns = collection.columns
    for part in sort.split(","):
        name = part.strip().removeprefix("-")
        if to_camel(name) not in columns:
            raise BadInput(f"--sort: cannot sort by {name!r}; fields: {', '.join(columns)}")


@click.command()
@click.argument("collection", type=click.Choice(list(COLLECTIONS)))
@click.option(
    "-o",
    "--output",
    metavar="FILE",
    help="Write to FILE (atomically, resumable); - or a pipe or device: streamed. "
    "Default: standard output.",
)
@click.option(
    "--format", "fmt", type=click.Choice(list(FORMATS)), default="jsonl", show_default=True
)
@click.option(
    "--resume",
    is_flag=True,
    help="Continue an interrupted export of -o FILE (from the same service and token); "
    "with nothing to resume it says so and starts from the first item.",
)
@click.option(
    "--csv-raw",
    is_flag=True,
    help="CSV: write values exactly as sent. By default a value starting with = + - @, "
    "tab or CR gets a ' in front, so that a spreadsheet shows it as text, not a formula.",
)
@number_option("--concurrency", 1, 1024, None, "Pages fetched at once (default: the client's, 8).")
@number_option("--page-size", 1, 4_294_967_295, None, "Items per request (default 100).")
@click.option("--employer", metavar="ID", help="The employer identifier (update-groups only).")
@click.option(
    "--sort", metavar="FIELDS", help="Sort order, e.g. -createdAt (default: the service's)."
)
@click.pass_obj
def export(
    settings: Settings,
    collection: str,
    output: str | None,
    fmt: str,
    resume: bool,
    csv_raw: bool,
    concurrency: int | None,
    page_size: int | None,
    employer: str | None,
    sort: str | None,
) -> None:
    """Export every item of COLLECTION to JSON Lines, CSV or JSON.

    \b
    payroll-async export payroll-connections -o connections.jsonl
    payroll-async export update-groups --employer ID --format csv -o groups.csv
    """
    kind = COLLECTIONS[collection]
    if kind.needs_employer and not employer:
        raise click.UsageError(f"export {collection} needs --employer ID")
    if not kind.needs_employer and employer:
        raise click.UsageError("--employer applies to update-groups only")
    if (too_many := kind.page_size_error(page_size)) is not None:
        raise BadInput(f"--page-size: {too_many}")
    if sort is not None:
        _check_sort(sort, kind)
    if csv_raw and fmt != "csv":
        raise click.UsageError("--csv-raw applies to --format csv only")
    job: dict[str, Any] = {
        "collection": collection,
        "format": fmt,
        "sort": sort,
        "employer": employer,
    }
    if csv_raw:
        job["csvRaw"] = True
    if output == "":
        raise BadInput("-o needs a file name (or - for standard output)")
    to_stdout = output is None or output == "-"
    if resume and (to_stdout or (output is not None and is_streamed(output))):
        raise BadInput(
            "--resume needs a regular file to resume (-o FILE); standard output, "
            "pipes and devices are written straight through and cannot be resumed"
        )
    progress = ExportProgress()

    async def main(client: PayrollClient) -> ExportResult:
        listing = kind.listing(
            client,
            employer,
            sort=sort,
            page_size=NOT_GIVEN if page_size is None else page_size,
            concurrency=NOT_GIVEN if concurrency is None else concurrency,
        )
        told = False
        with progress_bar() as bar:
            task = bar.add_task(f"Exporting {collection}", total=None, rate="")

            def on_page(page: Page[Any], state: ExportProgress) -> None:
                nonlocal told
                if not told:
                    told = True
                    _say_where(bar, state, page, collection, output)
                total = max(0, page.meta.total_count - state.resumed_from)
                done = state.written - state.resumed_from
                show_progress(bar, task, done, total)

            try:
                return await export_to_file(
                    listing,
                    None if to_stdout else output,
                    format=fmt,
                    resume=resume,
                    stream=sys.stdout.buffer if to_stdout else None,
                    job=job,
                    progress=progress,
                    on_page=on_page,
                    csv_raw=csv_raw,
                    # the emulator's data is the same on every run: so is its export's
                    service=DEMO_SERVICE if settings.emulator else None,
                )
            except ResumeMismatchError as exc:
                # --emulator's export is resumed by --emulator, whatever its port
                named = f"with service={DEMO_SERVICE!r}"
                message = in_cli_terms(str(exc)).replace(f"{named} and --resume", named)
                raise BadInput(message.replace(named, "with --emulator and --resume")) from None
            except OutputWriteError as exc:
                if to_stdout or not exc.saved:
                    raise CommandError(exc.reason) from None
                raise CommandError(
                    f"{exc.reason}; {exc.saved:,} items are saved: make room and run the "
                    f"same command with --resume to continue"
                ) from None

    def interrupted() -> str:
        done = f"Interrupted after {progress.committed:,} items"
        resumable = not to_stdout and progress.committed > 0
        return (
            f"{done}; run the same command with --resume to continue." if resumable else f"{done}."
        )

    client_options = {} if concurrency is None else {"concurrency": concurrency}
    result = run(settings, main, interrupted, **client_options)
    if result.path is not None:
        resumed = f" (resumed at {result.resumed_from:,})" if result.resumed_from else ""
        stderr.print(f"Exported {result.items:,} {collection} to {output}{resumed}", markup=False)


def _say_where(
    bar: Progress, state: ExportProgress, page: Page[Any], collection: str, output: str | None
) -> None:
    """Where this run starts: resumed at N of the total, or nothing there to resume."""
    if state.resumed_from:
        total = page.meta.total_count
        of = f" of {total:,}" if type(total) is int and total >= state.resumed_from else ""
        bar.console.print(f"Resumed at {state.resumed_from:,}{of} {collection}", markup=False)
    elif state.nothing_to_resume:
        bar.console.print(
            f"Nothing to resume for {output}: starting from the first item", markup=False
        )
