"""The click commands of ``payroll-async``."""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import json
import logging
import os
import signal
import sys
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from contextlib import asynccontextmanager
from typing import Any, NoReturn, TypeVar

import attrs
import click
import rich.box
from aiohttp import web
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskProgressColumn,
    TextColumn,
    TimeRemainingColumn,
)
from rich.table import Table

from payroll_async import (
    AsyncPaginator,
    AuthenticationError,
    EmployerIdentifier,
    EventType,
    InvalidArgumentError,
    Page,
    PayrollClient,
    PayrollConnection,
    PayrollError,
    PermissionDeniedError,
    RateLimitError,
    ReplaceIncompleteError,
    UpdateGroup,
    WebhookSubscription,
    __version__,
    to_dict,
)
from payroll_async.emulator import Emulator
from payroll_async.events import EventRouter, WebhookEvent

from ._export import FORMATS, Exporter, ExportError, open_target, run_export

__all__ = ["cli"]

T = TypeVar("T")
F = TypeVar("F", bound=Callable[..., Any])

# Exit codes, one per kind of failure, so that scripts can tell them apart.
EXIT_UNEXPECTED = 1
EXIT_BAD_INPUT = 2
EXIT_AUTH = 3
EXIT_RATE_LIMITED = 4
EXIT_SERVICE = 5
EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE, what a tool killed by the closed pipe reports
EXIT_INTERRUPTED = 130
EXIT_TERMINATED = 143


def demo_emulator() -> Emulator:
    """The in-process service of --emulator: enough data to watch the progress bar work."""
    return Emulator(seed=1, payroll_connections=25_000, employer_identifiers=200, latency=0.01)


COLLECTIONS: dict[str, type[Any]] = {
    "payroll-connections": PayrollConnection,
    "employer-identifiers": EmployerIdentifier,
    "webhooks": WebhookSubscription,
    "update-groups": UpdateGroup,
}

stderr = Console(stderr=True, highlight=False, soft_wrap=True)  # one message, one line
stdout = Console(highlight=False)
if not stdout.is_terminal:  # piped: no screen to fit, so never wrap the table's cells
    stdout = Console(highlight=False, width=240)


@attrs.define
class Settings:
    base_url: str | None
    token: str | None
    emulator: bool
    verbose: bool
    concurrency: int | None = None


def _fail(message: str, code: int) -> NoReturn:
    stderr.print(f"[bold red]error:[/] {message}", markup=True, soft_wrap=True)
    raise SystemExit(code)


def _exit_code(exc: BaseException) -> int:
    if isinstance(exc, (InvalidArgumentError, ExportError)):
        return EXIT_BAD_INPUT
    if isinstance(exc, (AuthenticationError, PermissionDeniedError)):
        return EXIT_AUTH
    if isinstance(exc, RateLimitError):
        return EXIT_RATE_LIMITED
    if isinstance(exc, PayrollError):
        return EXIT_SERVICE
    return EXIT_UNEXPECTED


def run(
    settings: Settings,
    main: Callable[[PayrollClient], Awaitable[T]],
    interrupted: Callable[[], str] = lambda: "Interrupted.",
) -> T:
    """Run one command with a client of the service (or of the --emulator)."""

    async def go() -> T:
        async with _client(settings) as client:
            return await main(client)

    return execute(settings, go(), interrupted)


def execute(
    settings: Settings,
    coroutine: Coroutine[Any, Any, T],
    interrupted: Callable[[], str] = lambda: "Interrupted.",
) -> T:
    """Run a coroutine; map every failure to one line on stderr and its exit code.

    SIGTERM (docker stop, systemd) is handled like Ctrl-C: the work is cancelled, so that
    an export checkpoints what it wrote, one line is printed, and the exit code is 143.
    """
    terminated = False

    async def main() -> T:
        nonlocal terminated
        task = asyncio.current_task()
        assert task is not None

        def on_term() -> None:
            nonlocal terminated
            terminated = True
            task.cancel()

        with contextlib.suppress(NotImplementedError, RuntimeError):
            asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, on_term)
        return await coroutine

    try:
        return asyncio.run(main())
    except asyncio.CancelledError:
        if not terminated:
            raise
        stderr.print(interrupted().replace("Interrupted", "Terminated", 1))
        raise SystemExit(EXIT_TERMINATED) from None
    except KeyboardInterrupt:
        stderr.print(interrupted())
        raise SystemExit(EXIT_INTERRUPTED) from None
    except BrokenPipeError:
        # The reader went away (`| head`): stop quietly, as Unix tools do.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        raise SystemExit(EXIT_BROKEN_PIPE) from None
    except (PayrollError, ExportError) as exc:
        if settings.verbose:
            stderr.print_exception()
        message = str(exc)
        if isinstance(exc, ReplaceIncompleteError):
            message += f" (new subscription: {exc.new_subscription.webhook_subscription_id})"
        _fail(message, _exit_code(exc))
    except OSError as exc:
        if settings.verbose:
            stderr.print_exception()
        _fail(f"{exc.strerror or exc}: {exc.filename or ''}".rstrip(": "), EXIT_UNEXPECTED)


@asynccontextmanager
async def _client(settings: Settings) -> AsyncIterator[PayrollClient]:
    concurrency = settings.concurrency or 8
    if settings.emulator:
        async with (
            demo_emulator() as emu,
            PayrollClient(emu.base_url, emu.token, concurrency=concurrency) as client,
        ):
            yield client
        return
    if not settings.base_url:
        raise InvalidArgumentError(
            "no service: pass --base-url (or set PAYROLL_BASE_URL), or --emulator"
        )
    if not settings.token:
        raise InvalidArgumentError("no token: pass --token (or set PAYROLL_TOKEN)")
    async with PayrollClient(settings.base_url, settings.token, concurrency=concurrency) as client:
        yield client


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--base-url",
    envvar="PAYROLL_BASE_URL",
    metavar="URL",
    help="The service's base URL [env: PAYROLL_BASE_URL].",
)
@click.option(
    "--token", envvar="PAYROLL_TOKEN", metavar="TOKEN", help="Bearer token [env: PAYROLL_TOKEN]."
)
@click.option(
    "--emulator",
    is_flag=True,
    help="Run against an in-process emulator with seeded demo data (no account needed).",
)
@click.option("-v", "--verbose", is_flag=True, help="Debug logging, and tracebacks on errors.")
@click.version_option(__version__, prog_name="payroll-async")
@click.pass_context
def cli(
    ctx: click.Context, base_url: str | None, token: str | None, emulator: bool, verbose: bool
) -> None:
    """Bulk export and webhook management for the Payroll Onboarding and Webhook Service.

    \b
    Exit codes: 0 success, 2 bad input, 3 authentication or permission,
    4 rate limited, 5 other service errors, 130 interrupted (Ctrl-C),
    141 output closed (| head), 143 terminated (SIGTERM).
    """
    if verbose:
        logging.basicConfig(
            level=logging.DEBUG,
            stream=sys.stderr,
            format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        )
    ctx.obj = Settings(base_url=base_url, token=token, emulator=emulator, verbose=verbose)


# -- export -----------------------------------------------------------------------------


def _progress(enabled: bool) -> Progress:
    return Progress(
        TextColumn("[progress.description]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TaskProgressColumn(),
        TextColumn("{task.fields[rate]}"),
        TimeRemainingColumn(),
        console=stderr,
        disable=not enabled,
        transient=False,
    )


@cli.command()
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
@click.option("--resume", is_flag=True, help="Continue an interrupted export of -o FILE.")
@click.option(
    "--concurrency",
    type=click.IntRange(1, 1024),
    default=None,
    help="Pages fetched at once (default: the client's, 8).",
)
@click.option(
    "--page-size",
    type=click.IntRange(1, 4_294_967_295),
    default=None,
    help="Items per request (default 100).",
)
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
    if collection == "update-groups" and not employer:
        raise click.UsageError("export update-groups needs --employer ID")
    if collection != "update-groups" and employer:
        raise click.UsageError("--employer applies to update-groups only")
    model = COLLECTIONS[collection]
    columns = [_camel(field.name) for field in attrs.fields(model)]
    if sort is not None:
        _check_sort(sort, columns)
    job = {"collection": collection, "format": fmt, "sort": sort, "employer": employer}
    try:
        target, stream = open_target(output if output is not None else "-")
    except ExportError as exc:
        _fail(str(exc), EXIT_BAD_INPUT)
    settings = attrs.evolve(settings, concurrency=concurrency)
    exporter = Exporter(
        target=target,
        fmt=FORMATS[fmt],
        columns=columns,
        job=job,
        stream=stream or (None if target is not None else sys.stdout.buffer),
    )

    def listing(client: PayrollClient) -> Callable[[int], AsyncPaginator[Any]]:
        options: dict[str, Any] = {"sort": sort, "page_size": page_size, "concurrency": concurrency}
        if collection == "payroll-connections":
            return lambda start: client.payroll_connections.list(start_offset=start, **options)
        if collection == "employer-identifiers":
            return lambda start: client.employer_identifiers.list(start_offset=start, **options)
        if collection == "webhooks":
            if page_size is None:
                options["page_size"] = 100
            return lambda start: client.webhooks.list(start_offset=start, **options)
        assert employer is not None
        return lambda start: client.employer_identifiers.update_groups.list(
            employer, start_offset=start, **options
        )

    async def main(client: PayrollClient) -> int:
        paginator_for = listing(client)  # validates every option before anything is written
        with _progress(stderr.is_terminal) as progress:
            task = progress.add_task(f"Exporting {collection}", total=None, rate="")

            def on_page(page: Page[Any], start: int) -> None:
                total = max(0, page.meta.total_count - start)
                done = exporter.written - start
                elapsed = progress.tasks[task].elapsed or 0.0
                rate = f"{done / elapsed:,.0f} items/s" if elapsed > 0 else ""
                progress.update(task, total=total, completed=done, rate=rate)

            return await run_export(exporter, paginator_for, resume=resume, on_page=on_page)

    def interrupted() -> str:
        done = f"Interrupted after {exporter.committed_items:,} items"
        resumable = target is not None and exporter.committed_items > 0
        return (
            f"{done}; run the same command with --resume to continue." if resumable else f"{done}."
        )

    try:
        count = run(settings, main, interrupted)
    finally:
        if stream is not None:
            with contextlib.suppress(OSError):
                stream.close()
    if target is not None:
        stderr.print(f"Exported {count:,} {collection} to {output}")


def _check_sort(sort: str, columns: list[str]) -> None:
    """Sort fields must be fields of the model: bad input, before anything is sent."""
    for part in sort.split(","):
        name = part.strip().removeprefix("-")
        if _camel(name) not in columns:
            _fail(f"--sort: cannot sort by {name!r}; fields: {', '.join(columns)}", EXIT_BAD_INPUT)


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.capitalize() for part in rest)


# -- webhooks ----------------------------------------------------------------------------


@cli.group()
def webhooks() -> None:
    """List, create, delete and replace webhook subscriptions."""


def _event_types(values: tuple[str, ...]) -> list[str]:
    return [value.upper() for value in values]


class _EventTypeChoice(click.Choice[str]):
    """Event types as the service spells them in --help, accepted in any case."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        return super().convert(value.upper() if isinstance(value, str) else value, param, ctx)


EVENT_CHOICE = _EventTypeChoice([member.value for member in EventType])


def _print_subscriptions(subs: list[WebhookSubscription], as_json: bool) -> None:
    if as_json:
        click.echo(json.dumps([to_dict(s) for s in subs], indent=2))
        return
    # Fit the terminal: the ID is never cut (it is copied into other commands); below
    # 120 columns the creation time goes, below 100 the table is drawn without borders.
    width = stdout.width
    table = Table(box=None if width < 100 else rich.box.HEAVY_HEAD, pad_edge=width >= 100)
    table.add_column("ID", no_wrap=True, min_width=36)
    table.add_column("Event types", overflow="fold")
    table.add_column("Path", overflow="fold", min_width=12)
    table.add_column("Active", no_wrap=True)
    show_created = width >= 120
    if show_created:
        table.add_column("Created", no_wrap=True)
    for sub in subs:
        row = [
            str(sub.webhook_subscription_id),
            "\n".join(str(t) for t in sub.webhook_event_types),
            sub.path,
            "yes" if sub.active else "no",
        ]
        if show_created:
            row.append(sub.created_at.strftime("%Y-%m-%d %H:%M %Z"))
        table.add_row(*row)
    stdout.print(table)


def _print_subscription(sub: WebhookSubscription, as_json: bool) -> None:
    if as_json:
        click.echo(json.dumps(to_dict(sub), indent=2))
    else:
        _print_subscriptions([sub], as_json=False)


def subscription_options(command: F) -> F:
    """--event (repeatable), --path and --json, shared by create and replace."""
    command = click.option(
        "--json", "as_json", is_flag=True, help="Print JSON instead of a table."
    )(command)
    command = click.option(
        "--path", required=True, metavar="URL", help="The https URL notifications go to."
    )(command)
    return click.option(
        "--event",
        "events",
        multiple=True,
        required=True,
        type=EVENT_CHOICE,
        help="An event type to subscribe to (repeat for several).",
    )(command)


@webhooks.command("list")
@click.option("--active", is_flag=True, help="Only active subscriptions.")
@click.option("--inactive", is_flag=True, help="Only inactive subscriptions.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
@click.pass_obj
def webhooks_list(settings: Settings, active: bool, inactive: bool, as_json: bool) -> None:
    """List webhook subscriptions."""
    if active and inactive:
        raise click.UsageError("--active and --inactive exclude each other")
    only: bool | None = True if active else False if inactive else None

    async def main(client: PayrollClient) -> list[WebhookSubscription]:
        return await client.webhooks.list(active=only).collect()

    _print_subscriptions(run(settings, main), as_json)


@webhooks.command("create")
@subscription_options
@click.pass_obj
def webhooks_create(settings: Settings, events: tuple[str, ...], path: str, as_json: bool) -> None:
    """Subscribe a URL to event types."""

    async def main(client: PayrollClient) -> WebhookSubscription:
        return await client.webhooks.create(event_types=_event_types(events), path=path)

    _print_subscription(run(settings, main), as_json)


@webhooks.command("delete")
@click.argument("subscription_id")
@click.pass_obj
def webhooks_delete(settings: Settings, subscription_id: str) -> None:
    """Delete a subscription (to change one, use replace: it leaves no gap)."""

    async def main(client: PayrollClient) -> None:
        await client.webhooks.delete(subscription_id)

    run(settings, main)
    stderr.print(f"Deleted webhook subscription {subscription_id}")


@webhooks.command("replace")
@click.argument("subscription_id")
@subscription_options
@click.pass_obj
def webhooks_replace(
    settings: Settings, subscription_id: str, events: tuple[str, ...], path: str, as_json: bool
) -> None:
    """Replace a subscription without a gap: create the new one, then delete the old."""

    async def main(client: PayrollClient) -> WebhookSubscription:
        return await client.webhooks.replace(
            subscription_id, event_types=_event_types(events), path=path
        )

    _print_subscription(run(settings, main), as_json)


def _demo_event(n: int, employer_id: str) -> tuple[EventType, dict[str, Any]]:
    kinds = list(EventType)
    kind = kinds[n % len(kinds)]
    if kind is EventType.PAYROLL_PROCESSED:
        return kind, {"payrollId": str(uuid.uuid4()), "employerIdentifierId": employer_id}
    if kind is EventType.UPDATE_GROUP_PROCESSED:
        return kind, {"updateGroupId": str(uuid.uuid4()), "errorCount": n % 3}
    return kind, {"employeeId": str(uuid.uuid4()), "employerIdentifierId": employer_id}


def _show_event(event: WebhookEvent, as_json: bool) -> None:
    if as_json:
        click.echo(
            json.dumps(
                {
                    "eventId": event.event_id,
                    "eventType": str(event.event_type),
                    "occurredAt": event.occurred_at.isoformat() if event.occurred_at else None,
                    "data": dict(event.data),
                }
            )
        )
        return
    when = (event.occurred_at or datetime.datetime.now(datetime.timezone.utc)).strftime("%H:%M:%S")
    kind = str(event.event_type)
    click.echo(f"{when}  {kind:<27} {event.event_id or '-'}  {json.dumps(dict(event.data))}")


@webhooks.command("listen")
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=8787,
    show_default=True,
    help="Port to listen on (0 picks a free one).",
)
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option(
    "--path", "hook_path", default="/hooks", show_default=True, help="The receiving path."
)
@click.option("--json", "as_json", is_flag=True, help="Print each event as a JSON line.")
@click.option(
    "--interval",
    type=click.FloatRange(min=0.01),
    default=2.0,
    show_default=True,
    help="With --emulator: seconds between the demo events it emits.",
)
@click.option(
    "--count", type=click.IntRange(min=1), default=None, help="Stop after this many events."
)
@click.pass_obj
def webhooks_listen(
    settings: Settings,
    port: int,
    host: str,
    hook_path: str,
    as_json: bool,
    interval: float,
    count: int | None,
) -> None:
    """Receive webhook notifications locally and print each one as it arrives.

    With --emulator, it subscribes itself to every event type on an in-process emulator,
    which then emits a demo event every --interval seconds. Ctrl-C stops it.
    """
    if not hook_path.startswith("/"):
        raise click.BadParameter("must start with /", param_hint="--path")

    stopped_by: list[int] = []

    async def listen() -> int:
        router = EventRouter()
        stop = asyncio.Event()
        received = 0

        @router.on()
        async def show(event: WebhookEvent) -> None:
            nonlocal received
            _show_event(event, as_json)
            received += 1
            if count is not None and received >= count:
                stop.set()

        def on_signal(code: int) -> None:
            stopped_by.append(code)
            stop.set()

        loop = asyncio.get_running_loop()
        loop.add_signal_handler(signal.SIGINT, on_signal, EXIT_INTERRUPTED)
        loop.add_signal_handler(signal.SIGTERM, on_signal, EXIT_TERMINATED)
        runner = web.AppRunner(router.app(path=hook_path), access_log=None)
        await runner.setup()
        try:
            site = web.TCPSite(runner, host, port)
            await site.start()
            bound = runner.addresses[0][1]
            url = f"http://{'[' + host + ']' if ':' in host else host}:{bound}{hook_path}"
            stderr.print(f"Listening for webhook notifications on {url} (Ctrl-C to stop)")
            if settings.emulator:
                await _listen_on_emulator(url, interval, stop)
            else:
                stderr.print(
                    "Point a subscription at this receiver's public URL (through a tunnel, say): "
                    "payroll-async webhooks create --event TYPE --path https://..."
                )
                await stop.wait()
        finally:
            await runner.cleanup()
        return received

    received = execute(settings, listen())
    stderr.print(f"Stopped after {received} event{'s' if received != 1 else ''}.")
    if stopped_by:  # Ctrl-C (130) or SIGTERM (143), as the exit-code table says
        raise SystemExit(stopped_by[0])


async def _listen_on_emulator(url: str, interval: float, stop: asyncio.Event) -> None:
    async with demo_emulator() as emu, PayrollClient(emu.base_url, emu.token) as client:
        sub = await client.webhooks.ensure(event_types=list(EventType), path=url)
        stderr.print(
            f"Subscribed {sub.webhook_subscription_id} to every event type on the emulator; "
            f"it emits a demo event every {interval:g}s."
        )
        employer_id = emu.sample_ids().get("employer_identifier_id", "")

        async def emit_demo_events() -> None:
            n = 0
            while True:
                kind, data = _demo_event(n, employer_id)
                await emu.emit(kind, data=data)
                n += 1
                await asyncio.sleep(interval)

        emitter = asyncio.create_task(emit_demo_events())
        try:
            await stop.wait()
        finally:
            emitter.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await emitter
            await client.webhooks.delete(sub.webhook_subscription_id)


# -- invite links and the emulator ----------------------------------------------------------------


@cli.command("invite-link")
@click.argument("employer_id")
@click.argument("invite_id")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_obj
def invite_link(settings: Settings, employer_id: str, invite_id: str, as_json: bool) -> None:
    """Generate a fresh onboarding link for an employer's invite (valid 30 minutes, single use)."""

    async def main(client: PayrollClient) -> str:
        session = await client.employer_identifiers.invites.create_session(employer_id, invite_id)
        return session.onboarding_link

    link = run(settings, main)
    expires = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(minutes=30)
    if as_json:
        click.echo(
            json.dumps({"onboardingLink": link, "expiresAt": expires.isoformat(timespec="seconds")})
        )
        return
    click.echo(link)
    stderr.print(
        f"Valid for 30 minutes (until {expires:%H:%M} UTC) and for one use; "
        "open it in the employer's browser."
    )


@cli.command(
    context_settings={"ignore_unknown_options": True, "help_option_names": []},
    add_help_option=False,
)
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
def emulator(args: tuple[str, ...]) -> None:
    """Serve the emulator (the options of python -m payroll_async.emulator; --help lists them)."""
    from payroll_async.emulator.__main__ import main as emulator_main

    raise SystemExit(emulator_main(list(args)))
