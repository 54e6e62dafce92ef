"""``payroll-async webhooks listen``: receive notifications locally and print them."""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import json
import logging
import signal
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from typing import TYPE_CHECKING, Any, TypeVar

import click
from aiohttp import web

from payroll_async import EventType, InvalidArgumentError, PayrollClient, to_dict
from payroll_async._core._env import INBOX_URL, WEBHOOK_SECRET
from payroll_async.emulator import Emulator, cannot_listen
from payroll_async.events import EventRouter, WebhookEvent

from ._app import Settings, emulator_network, execute, number_option
from ._console import visible
from ._demo import demo_emulator
from ._errors import BadInput, ExitCode, stderr

if TYPE_CHECKING:
    from payroll_async.inbox import Inbox

__all__ = [
    "build_router",
    "check_receiver_options",
    "listen",
    "open_inbox",
    "reach_inbox",
    "receiver_options",
    "serving",
    "show_event",
    "stop_on_signals",
]

READ_TIMEOUT = 10.0
"""Seconds a sender has for a request's headers, and again for its body."""


def _demo_event(n: int, employer_id: str) -> tuple[EventType, dict[str, Any]]:
    kinds = list(EventType)
    kind = kinds[n % len(kinds)]
    if kind is EventType.PAYROLL_PROCESSED:
        return kind, {"payrollId": str(uuid.uuid4()), "employerIdentifierId": employer_id}
    if kind is EventType.UPDATE_GROUP_PROCESSED:
        return kind, {"updateGroupId": str(uuid.uuid4()), "errorCount": n % 3}
    return kind, {"employeeId": str(uuid.uuid4()), "employerIdentifierId": employer_id}


def show_event(event: WebhookEvent, as_json: bool, stored: bool = False) -> None:
    """One line for ``event``; ``stored``: it was stored in an inbox, not handled (the
    line says so)."""
    # Everything here was written by the sender: JSON escapes control characters itself
    # (ensure_ascii), and the type and id are escaped, so nothing reaches the terminal as
    # a control code.
    if as_json:
        click.echo(json.dumps(to_dict(event)))
        return
    when = (event.occurred_at or datetime.datetime.now(datetime.timezone.utc)).strftime("%H:%M:%S")
    kind = visible(event.event_type)
    event_id = visible(event.event_id or "-")
    status = "stored  " if stored else ""
    click.echo(f"{when}  {status}{kind:<27} {event_id}  {json.dumps(dict(event.data))}")


F = TypeVar("F", bound=Callable[..., Any])


def receiver_options(command: F) -> F:
    """--port, --host, --path, --secret and --insecure: where and how notifications arrive."""
    for option in reversed(
        (
            click.option(
                "--port",
                type=click.IntRange(0, 65535),
                default=8787,
                show_default=True,
                help="Port to listen on (0 picks a free one).",
            ),
            click.option(
                "--host", default="127.0.0.1", show_default=True, help="Address to listen on."
            ),
            click.option(
                "--path",
                "hook_path",
                default="/hooks",
                show_default=True,
                help="The receiving path.",
            ),
            click.option(
                "--secret",
                envvar=WEBHOOK_SECRET,
                metavar="SECRET",
                help="The 'whsec_...' signing secret, or the 'whpk_...' public key of v1a "
                f"signatures: unsigned notifications get 401 [env: {WEBHOOK_SECRET}].",
            ),
            click.option(
                "--insecure",
                is_flag=True,
                help="Accept notifications without a signature (anyone who can reach the port).",
            ),
        )
    ):
        command = option(command)
    return command


def check_receiver_options(hook_path: str, secret: str | None, insecure: bool) -> None:
    if not hook_path.startswith("/"):
        raise click.BadParameter("must start with /", param_hint="--path")
    if secret and insecure:
        raise BadInput(
            f"--secret (or {WEBHOOK_SECRET}) and --insecure contradict each other: pass one"
        )


def open_inbox(url: str, option: str, shown: Callable[[WebhookEvent], None] | None = None) -> Inbox:
    """The Inbox at ``url`` (given as ``option``): bad input before anything is served.

    ``shown`` is called with each notification once it is stored (not for a copy).
    """
    try:
        from payroll_async.inbox import Inbox, InboxError, InboxURLError
    except ImportError:
        needs = "--inbox" if option == "--inbox" else "the inbox"
        raise BadInput(
            f"{needs} needs the 'mirror' extra (SQLAlchemy with aiosqlite and asyncpg): "
            "python3 -m pip install 'payroll-async[mirror]'"
        ) from None

    class ShownInbox(Inbox):
        async def accept(self, event: WebhookEvent, body: bytes) -> bool:
            stored = await super().accept(event, body)
            if stored and shown is not None:
                shown(event)
            return stored

    try:
        return ShownInbox(url)
    except InboxURLError as exc:
        raise BadInput(str(exc).replace("inbox: ", f"{option}: ", 1)) from None
    except InboxError as exc:
        raise BadInput(f"{option}: {exc}") from None


async def reach_inbox(inbox: Inbox) -> None:
    """Connect to the inbox's database and make its table if it is new: before anything
    is served or claimed, a database that cannot be used (a wrong password, a refused
    connection, an unknown host) is an InboxError that says why (exit code 5)."""
    await inbox.open()


def build_router(secret: str | None, insecure: bool, inbox: Inbox | None = None) -> EventRouter:
    """The router of the options (bounded by READ_TIMEOUT); a bad secret is bad input. What
    it logs when built (--insecure's WARNING) is a line of the console, as later ones are."""
    try:
        with receiver_log_on_console(verbose=False):
            if insecure:
                return EventRouter(insecure=True, read_timeout=READ_TIMEOUT, inbox=inbox)
            return EventRouter(secret=secret, read_timeout=READ_TIMEOUT, inbox=inbox)
    except InvalidArgumentError as exc:
        raise BadInput(f"--secret: {exc}") from None


def stop_on_signals(stop: asyncio.Event, stopped_by: list[int]) -> None:
    """Ctrl-C and SIGTERM set ``stop``; their exit codes are kept in ``stopped_by``."""

    def on_signal(code: int) -> None:
        stopped_by.append(code)
        stop.set()

    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGINT, on_signal, ExitCode.INTERRUPTED)
    loop.add_signal_handler(signal.SIGTERM, on_signal, ExitCode.TERMINATED)


@contextlib.asynccontextmanager
async def serving(router: EventRouter, host: str, port: int, hook_path: str) -> AsyncIterator[str]:
    """``router.app()`` on ``host:port`` for the ``with`` block; the receiving URL."""
    # router.app() bounds the headers and the body by READ_TIMEOUT each
    runner = web.AppRunner(router.app(path=hook_path), access_log=None)
    await runner.setup()
    try:
        site = web.TCPSite(runner, host, port)
        try:
            await site.start()
        except OSError as exc:
            raise BadInput(cannot_listen(host, port, exc)) from None
        bound = runner.addresses[0][1]
        url = f"http://{'[' + host + ']' if ':' in host else host}:{bound}{hook_path}"
        stderr.print(f"Listening for webhook notifications on {url} (Ctrl-C to stop)")
        yield url
    finally:
        await runner.cleanup()


@click.command("listen")
@receiver_options
@click.option("--json", "as_json", is_flag=True, help="Print each event as a JSON line.")
@click.option(
    "--interval",
    type=click.FloatRange(min=0.01),
    default=2.0,
    show_default=True,
    help="With --emulator: seconds between the demo events it emits.",
)
@number_option("--count", 1, None, None, "Stop after this many events.")
@click.option(
    "--inbox",
    "inbox_url",
    envvar=INBOX_URL,
    metavar="URL",
    help="Store each notification in this inbox (sqlite:///PATH or postgresql://...) and "
    "answer; `payroll-async inbox run` handles them [env: " + INBOX_URL + "].",
)
@click.pass_obj
def listen(
    settings: Settings,
    port: int,
    host: str,
    hook_path: str,
    as_json: bool,
    interval: float,
    count: int | None,
    secret: str | None,
    insecure: bool,
    inbox_url: str | None,
) -> None:
    """Receive webhook notifications locally and print each one as it arrives.

    Every notification must be signed with --secret (Standard Webhooks), unless --insecure.
    With --emulator, it subscribes itself to every event type on an in-process emulator,
    which signs with its own secret (or --secret) and emits a demo event every --interval
    seconds. With --inbox, each notification is committed to the inbox before it is
    answered and printed once stored (a copy already stored is not printed again). Ctrl-C
    stops it.
    """
    check_receiver_options(hook_path, secret, insecure)
    if not secret and not insecure and not settings.emulator:
        raise BadInput(
            f"pass --secret (or set {WEBHOOK_SECRET}) with the subscription's 'whsec_...' "
            "signing secret, or --insecure to accept unsigned notifications"
        )
    try:
        emulator = (
            demo_emulator(
                webhook_secret=secret or None, tls=settings.proxy is not None, option="--proxy"
            )
            if settings.emulator
            else None
        )
    except ValueError as exc:
        raise BadInput(f"--secret: {exc}") from None
    stop = asyncio.Event()
    received = 0

    def show(event: WebhookEvent) -> None:
        nonlocal received
        show_event(event, as_json, stored=inbox is not None)
        received += 1
        if count is not None and received >= count:
            stop.set()

    inbox = None if inbox_url is None else open_inbox(inbox_url, "--inbox", show)
    router = build_router(
        (emulator.webhook_public_key or emulator.webhook_secret) if emulator else secret,
        insecure,
        inbox,
    )
    if inbox is None:

        @router.on()
        async def show_now(event: WebhookEvent) -> None:
            show(event)

    stopped_by: list[int] = []

    async def listen() -> int:
        stop_on_signals(stop, stopped_by)
        try:
            if inbox is not None:
                await reach_inbox(inbox)
            async with serving(router, host, port, hook_path) as url:
                if inbox is not None:
                    stderr.print(
                        f"Each notification is stored in the inbox {inbox.url} before it is "
                        "answered, and not handled here: `payroll-async inbox run --into "
                        "URL` (the same URL) handles them."
                    )
                if emulator is not None:
                    await _listen_on_emulator(emulator, url, interval, stop, settings)
                else:
                    stderr.print(
                        "Point a subscription at this receiver's public URL (through a tunnel, "
                        "say): payroll-async webhooks create --event TYPE --path https://..."
                    )
                    await stop.wait()
        finally:
            if inbox is not None:
                await inbox.close()
        return received

    with receiver_log_on_console(settings.verbose):
        received = execute(settings, listen())
    stderr.print(f"Stopped after {received} event{'s' if received != 1 else ''}.")
    if stopped_by:  # Ctrl-C (130) or SIGTERM (143), as the exit-code table says
        raise SystemExit(stopped_by[0])


class _ConsoleHandler(logging.Handler):
    """Records as lines of the command's stderr console, which escapes control characters
    (a record may quote a sender); a refusal for the signature says which option to check."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            line = self.format(record)
            cause = getattr(record, "refusal", None)
            if isinstance(cause, str) and cause.startswith("no ") and "signature" in cause:
                line += f"; check --secret (or {WEBHOOK_SECRET}): the subscription's signing secret"
            stderr.print(line, markup=False, highlight=False)
        except Exception:
            self.handleError(record)


@contextlib.contextmanager
def receiver_log_on_console(verbose: bool) -> Iterator[None]:
    """The receiver's log lines on stderr, each once: a rejected notification is one
    WARNING line by default (why, from which address; never the secret), and with -v the
    receiver's DEBUG and INFO lines too, in the same format, not again through -v's or
    PAYROLL_LOG's handlers."""
    handler = _ConsoleHandler()
    handler.setFormatter(logging.Formatter("%(asctime)s  %(levelname)s %(message)s", "%H:%M:%S"))
    handler.setLevel(logging.DEBUG if verbose else logging.WARNING)
    # The inbox's too: an outage of its database is one ERROR line that says why.
    loggers = [logging.getLogger(f"payroll_async.{name}") for name in ("events", "inbox")]
    propagate = [logger.propagate for logger in loggers]
    for logger in loggers:
        logger.addHandler(handler)
        logger.propagate = False
    try:
        yield
    finally:
        for logger, was in zip(loggers, propagate, strict=True):
            logger.propagate = was
            logger.removeHandler(handler)


async def _listen_on_emulator(
    emulator: Emulator, url: str, interval: float, stop: asyncio.Event, settings: Settings
) -> None:
    async with (
        emulator as emu,
        PayrollClient(emu.base_url, emu.token, **emulator_network(settings, emu)) as client,
    ):
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
