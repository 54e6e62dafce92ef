"""``payroll-async inbox run|list|retry|purge``: work and inspect the inbox of notifications."""

from __future__ import annotations

import asyncio
import datetime
import json
import re
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeVar

import click
import rich.box
from rich.table import Table

from payroll_async._core._env import INBOX_URL
from payroll_async.events import EventRouter, WebhookEvent

from ._app import Settings, execute, number_option, stdout
from ._errors import BadInput, ParamType, stderr
from ._listen import (
    build_router,
    check_receiver_options,
    open_inbox,
    reach_inbox,
    receiver_log_on_console,
    receiver_options,
    serving,
    show_event,
    stop_on_signals,
)

if TYPE_CHECKING:
    from payroll_async.inbox import Inbox, InboxEntry, InboxStats

__all__ = ["inbox"]

DEFAULT_INTO = "sqlite:///inbox.db"
STATUSES = ("pending", "done", "dead")
F = TypeVar("F", bound=Callable[..., Any])
T = TypeVar("T")


def into_option(command: F) -> F:
    return click.option(
        "--into",
        envvar=INBOX_URL,
        default=DEFAULT_INTO,
        show_default=True,
        metavar="URL",
        help=f"The inbox: sqlite:///PATH or postgresql://USER:PASSWORD@HOST/DB [env: {INBOX_URL}].",
    )(command)


_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days", "w": "weeks"}


class Duration(ParamType[datetime.timedelta]):
    """``7d``, ``12h``, ``30m``, ``45s`` or ``2w``: a timedelta."""

    name = "duration"
    _FORM = re.compile(r"(\d{1,6})([smhdw])")

    def convert(
        self, value: Any, param: click.Parameter | None, ctx: click.Context | None
    ) -> datetime.timedelta:
        if isinstance(value, datetime.timedelta):
            return value
        found = self._FORM.fullmatch(str(value).strip())
        if found is None:
            self.fail(f"{value!r} is not a duration such as 7d, 12h, 30m or 45s", param, ctx)
        return datetime.timedelta(**{_UNITS[found[2]]: int(found[1])})


@click.group()
def inbox() -> None:
    """Handle the notifications kept in an inbox, and inspect, replay or purge them.

    Notifications arrive in the inbox through `payroll-async webhooks listen --inbox URL`
    (or an EventRouter(inbox=...) of your own); `inbox run` handles them.
    """


async def _closing(kept: Inbox, work: Awaitable[T]) -> T:
    """``work``, then the inbox's connections closed (in the same event loop)."""
    try:
        return await work
    finally:
        await kept.close()


@inbox.command("run")
@into_option
@receiver_options
@number_option("--concurrency", 1, 1024, 8, "Events handled at once.")
@number_option("--max-attempts", 1, 1000, 8, "Attempts before an event is dead.")
@click.option("--json", "as_json", is_flag=True, help="Print each event as a JSON line.")
@number_option("--count", 1, None, None, "Stop after this many events.")
@click.option(
    "--drain",
    is_flag=True,
    help="Stop once no event is ready (what came is handled; for a cron job or a script).",
)
@click.pass_obj
def inbox_run(
    settings: Settings,
    into: str,
    port: int,
    host: str,
    hook_path: str,
    secret: str | None,
    insecure: bool,
    concurrency: int,
    max_attempts: int,
    as_json: bool,
    count: int | None,
    drain: bool,
) -> None:
    """Handle the inbox's events: print each one, mark it done.

    Any number of `inbox run` may work one PostgreSQL inbox. With --secret (or --insecure)
    it also receives notifications on --port into the inbox, so that one process both
    receives and handles. Ctrl-C stops it after the events in hand; --drain stops it
    once no event is ready.
    """
    check_receiver_options(hook_path, secret, insecure)
    if drain and (secret or insecure):
        raise BadInput(
            "--drain stops once no event is ready, and a receiver with it: leave out "
            "--secret/--insecure (receive with `webhooks listen --inbox`)"
        )
    kept = open_inbox(into, "--into")
    receiving = bool(secret) or insecure
    # A worker's router only dispatches; without --secret/--insecure nothing is served, and
    # a router that refuses every notification says so.
    router = build_router(secret, insecure, kept) if receiving else EventRouter(verify=_refuse_all)
    stop = asyncio.Event()
    handled = 0

    @router.on()
    async def show(event: WebhookEvent) -> None:
        nonlocal handled
        show_event(event, as_json)
        handled += 1
        if count is not None and handled >= count:
            stop.set()

    stopped_by: list[int] = []

    async def work() -> None:
        stop_on_signals(stop, stopped_by)
        await reach_inbox(kept)
        stderr.print(f"Handling the events of {kept.url} (Ctrl-C to stop)")
        if receiving:
            async with serving(router, host, port, hook_path):
                await kept.run(
                    router, concurrency=concurrency, max_attempts=max_attempts, stop=stop
                )
        else:
            await kept.run(
                router,
                concurrency=concurrency,
                max_attempts=max_attempts,
                stop=stop,
                drain=drain,
            )

    with receiver_log_on_console(settings.verbose):
        execute(settings, _closing(kept, work()))
    stderr.print(f"Stopped after {handled} event{'s' if handled != 1 else ''}.")
    if stopped_by:
        raise SystemExit(stopped_by[0])


def _refuse_all(request: object, body: bytes) -> bool:
    return False


def _when(value: datetime.datetime | None) -> str:
    return "" if value is None else value.strftime("%Y-%m-%d %H:%M:%S")


def _print_entries(entries: list[InboxEntry], as_json: bool) -> None:
    if as_json:
        for entry in entries:
            click.echo(
                json.dumps(
                    {
                        "eventId": entry.event_id,
                        "eventType": entry.event_type,
                        "status": entry.status,
                        "attempts": entry.attempts,
                        "receivedAt": entry.received_at.isoformat(),
                        "nextAttemptAt": None
                        if entry.next_attempt_at is None
                        else entry.next_attempt_at.isoformat(),
                        "handledAt": None
                        if entry.handled_at is None
                        else entry.handled_at.isoformat(),
                        "lastError": entry.last_error,
                    }
                )
            )
        return
    table = Table(box=rich.box.HEAVY_HEAD if stdout.width >= 100 else None)
    table.add_column("Event ID", no_wrap=True)
    table.add_column("Type", no_wrap=True)
    table.add_column("Status", no_wrap=True)
    table.add_column("Attempts", justify="right", no_wrap=True)
    table.add_column("Received (UTC)", no_wrap=True)
    table.add_column("Next / handled (UTC)", no_wrap=True)
    table.add_column("Last error", overflow="fold")
    for entry in entries:
        # ids, types and errors are outside text: SafeConsole escapes control codes
        table.add_row(
            entry.event_id,
            entry.event_type or "",
            entry.status,
            str(entry.attempts),
            _when(entry.received_at),
            _when(entry.handled_at or entry.next_attempt_at),
            entry.last_error or "",
        )
    stdout.print(table)


@inbox.command("list")
@into_option
@click.option("--status", type=click.Choice(STATUSES), help="Only events of this status.")
@number_option("--limit", 1, 100_000, 100, "At most this many (the latest received first).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON lines instead of a table.")
@click.pass_obj
def inbox_list(
    settings: Settings, into: str, status: str | None, limit: int, as_json: bool
) -> None:
    """List the inbox's events, the latest received first, with the counts of each status."""
    kept = open_inbox(into, "--into")

    async def main() -> tuple[list[InboxEntry], InboxStats]:
        return await kept.list(status, limit=limit), await kept.stats()

    entries, stats = execute(settings, _closing(kept, main()))
    _print_entries(entries, as_json)
    stderr.print(
        f"{stats.pending:,} pending ({stats.retrying:,} retrying), {stats.done:,} done, "
        f"{stats.dead:,} dead"
        + (f"; oldest pending received {_when(stats.oldest_pending)} UTC" if stats.pending else "")
    )


@inbox.command("retry")
@into_option
@click.argument("event_id", required=False)
@click.option("--dead", is_flag=True, help="Every dead event.")
@click.pass_obj
def inbox_retry(settings: Settings, into: str, event_id: str | None, dead: bool) -> None:
    """Put EVENT_ID (done or dead), or every --dead event, back to pending.

    A done event is handled again (a replay). `inbox run` picks them up at once.
    """
    if (event_id is None) == (not dead):
        raise BadInput("give EVENT_ID or --dead (one of them)")
    kept = open_inbox(into, "--into")
    n = execute(settings, _closing(kept, kept.retry(event_id, dead=dead)))
    if event_id is not None and n == 0:  # the error alone: nothing was put back
        raise BadInput(f"no done or dead event {event_id} in {kept.url}")
    stderr.print(f"{n:,} event{'s' if n != 1 else ''} back to pending in {kept.url}")


@inbox.command("purge")
@into_option
@click.option(
    "--done-before",
    type=Duration(),
    required=True,
    metavar="AGE",
    help="Delete events handled more than AGE ago (7d, 12h, 30m). Dead events are kept.",
)
@click.pass_obj
def inbox_purge(settings: Settings, into: str, done_before: datetime.timedelta) -> None:
    """Delete done events handled more than --done-before ago.

    A purged event id is forgotten: a copy delivered later is handled again, so keep more
    than the sender's redelivery schedule.
    """
    kept = open_inbox(into, "--into")
    n = execute(settings, _closing(kept, kept.purge(done_before)))
    stderr.print(f"Purged {n:,} done event{'s' if n != 1 else ''} from {kept.url}")
