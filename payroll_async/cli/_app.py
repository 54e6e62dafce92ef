"""The root command: global options, the one client factory, and how a command is run."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import importlib
import logging
import os
import signal
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any, TypeVar

import attrs
import click
from click.core import ParameterSource
from click.decorators import FC
from yarl import URL

from payroll_async import (
    Gate,
    InvalidArgumentError,
    LocalGate,
    PayrollClient,
    PayrollError,
    ReplaceIncompleteError,
    __version__,
)
from payroll_async._core._env import BASE_URL, REDIS_URL, TOKEN
from payroll_async._core._net import check_ca_bundle
from payroll_async._core._visible import VisibleFormatter
from payroll_async.export import ExportError

from ._console import SafeConsole
from ._demo import demo_emulator
from ._errors import (
    BadInput,
    CommandError,
    ExitCode,
    advice_in_cli_terms,
    error_for,
    exit_codes_help,
    in_cli_terms,
    said_once,
    stderr,
)

__all__ = [
    "LazyGroup",
    "Settings",
    "cli",
    "emulator_network",
    "execute",
    "open_client",
    "number_option",
    "run",
    "stdout",
]

if TYPE_CHECKING:
    from payroll_async.emulator import Emulator

T = TypeVar("T")


def number_option(
    flag: str, low: int, high: int | None, default: int | None, help: str
) -> Callable[[FC], FC]:
    """An option of a whole number from ``low`` to ``high`` (None: no upper bound)."""
    return click.option(
        flag, type=click.IntRange(low, high), default=default, show_default=True, help=help
    )


stdout = SafeConsole()
if not stdout.is_terminal:  # piped: no screen to fit, so never wrap the table's cells
    stdout = SafeConsole(width=240)


@attrs.frozen
class Settings:
    """The global options, passed to every command."""

    base_url: str | None
    token: str | None
    emulator: bool
    verbose: bool
    redis_url: str | None = None
    gate_key: str | None = None
    rate: float | None = None
    proxy: str | None = attrs.field(default=None, repr=False)  # may hold its password
    ca_bundle: str | None = None


def _network(settings: Settings) -> dict[str, Any]:
    """The client's proxy and TLS from --proxy and --ca-bundle (else the environment's)."""
    options: dict[str, Any] = {}
    if settings.proxy is not None:
        options["proxy"] = settings.proxy
    if settings.ca_bundle is not None:
        options["ssl"] = settings.ca_bundle
    return options


def emulator_network(settings: Settings, emu: Emulator) -> dict[str, Any]:
    """--proxy with --emulator: the proxy to the emulator, which then serves TLS (a proxy
    carries https:// only) with a certificate authority of its own, trusted for it alone."""
    if settings.proxy is None:
        return {}
    return {"proxy": settings.proxy, "ssl": emu.ca_file}


def _redis_tls(settings: Settings, redis_url: str) -> dict[str, Any]:
    """--ca-bundle for a rediss:// URL (redis-py's ``ssl_ca_certs``/``ssl_ca_path``; a CA
    named in the URL's query wins: redis-py lays the URL's options over these)."""
    if settings.ca_bundle is None:
        return {}
    try:
        url = URL(redis_url)
    except ValueError:
        return {}
    if url.scheme != "rediss":
        return {}
    key = "ssl_ca_path" if os.path.isdir(settings.ca_bundle) else "ssl_ca_certs"
    return {key: settings.ca_bundle}


@asynccontextmanager
async def _gate(settings: Settings, base_url: str) -> AsyncIterator[Gate | None]:
    """The gate the options ask for: shared on Redis, a local budget, or the client's own."""
    if settings.redis_url is None:
        yield LocalGate(rate=settings.rate) if settings.rate is not None else None
        return
    try:
        from redis.asyncio import Redis

        from payroll_async.fleet import RedisGate, default_key
    except ImportError:
        raise BadInput(
            "--redis-url needs the 'redis' extra: python3 -m pip install 'payroll-async[redis]'"
        ) from None
    try:
        redis = Redis.from_url(settings.redis_url, **_redis_tls(settings, settings.redis_url))
    except ValueError:
        raise BadInput("--redis-url is not a redis:// URL") from None
    async with redis:
        yield RedisGate(redis, key=settings.gate_key or default_key(base_url), rate=settings.rate)


@asynccontextmanager
async def open_client(settings: Settings, **options: Any) -> AsyncIterator[PayrollClient]:
    """A client of the service, or of an in-process emulator with --emulator."""
    if settings.emulator:
        # --proxy carries https:// only: the emulator then serves TLS
        served = (
            demo_emulator() if settings.proxy is None else demo_emulator(tls=True, option="--proxy")
        )
        async with (
            served as emu,
            _gate(settings, emu.base_url) as gate,
            PayrollClient(
                emu.base_url, emu.token, gate=gate, **emulator_network(settings, emu), **options
            ) as client,
        ):
            yield client
        return
    if not settings.base_url:
        raise BadInput(f"no service: pass --base-url (or set {BASE_URL}), or --emulator")
    if not settings.token:
        raise BadInput(f"no token: pass --token (or set {TOKEN})")
    _hint_about(settings.base_url)
    async with (
        _gate(settings, settings.base_url) as gate,
        PayrollClient(
            settings.base_url, settings.token, gate=gate, **_network(settings), **options
        ) as client,
    ):
        yield client


def _hint_about(base_url: str) -> None:
    """A hint for a base URL that ends in /v1, which every request's path adds again."""
    try:
        url = URL(base_url)
    except ValueError:
        return  # the client says what is wrong with it
    path = url.path.rstrip("/")
    if path.endswith("/v1"):
        suggested = str(url.with_path(path.removesuffix("/v1") or "/")).rstrip("/")
        stderr.print(
            f"hint: --base-url ends in /v1, which every request adds itself "
            f"(/v1/payroll-connections, ...): did you mean --base-url {suggested}?",
            markup=False,
        )


def run(
    settings: Settings,
    main: Callable[[PayrollClient], Awaitable[T]],
    interrupted: Callable[[], str] = lambda: "Interrupted.",
    **options: Any,
) -> T:
    """Run one command with a client (``options`` go to PayrollClient)."""

    async def go() -> T:
        async with open_client(settings, **options) as client:
            return await main(client)

    return execute(settings, go(), interrupted)


def execute(
    settings: Settings,
    coroutine: Coroutine[Any, Any, T],
    interrupted: Callable[[], str] = lambda: "Interrupted.",
) -> T:
    """Run a coroutine; turn every failure into one line on stderr and its exit code.

    SIGTERM (docker stop, systemd) is handled like Ctrl-C: the work is cancelled, so that
    an export checkpoints what it wrote, one line is printed, and the exit code is 143.
    """
    terminated = False

    async def main() -> T:
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
        raise SystemExit(ExitCode.TERMINATED) from None
    except KeyboardInterrupt:
        stderr.print(interrupted())
        raise SystemExit(ExitCode.INTERRUPTED) from None
    except BrokenPipeError:
        # The reader went away (`| head`): stop quietly, as Unix tools do.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        raise SystemExit(ExitCode.BROKEN_PIPE) from None
    except CommandError:
        if settings.verbose:
            stderr.print_exception()
        raise
    except (PayrollError, ExportError) as exc:
        if settings.verbose:
            stderr.print_exception()
        message = said_once(exc)
        if isinstance(exc, (InvalidArgumentError, ExportError)):
            message = in_cli_terms(message)
        else:  # a service's text is kept as it is; only the SDK's own advice is translated
            message = advice_in_cli_terms(message)
        if isinstance(exc, ReplaceIncompleteError):
            message += f" (new subscription: {exc.new_subscription.webhook_subscription_id})"
        raise error_for(exc, message) from None
    except OSError as exc:
        if settings.verbose:
            stderr.print_exception()
        text = f"{exc.strerror or exc}: {exc.filename or ''}".rstrip(": ")
        raise CommandError(text) from None


class LazyGroup(click.Group):
    """A group whose commands are imported when one is named (or a help lists them).

    A command starts without importing every other one: ``mirror`` never loads the
    webhook receiver or the emulator, ``webhooks list`` never loads the mirror's.
    ``lazy`` maps each command's name to ``"module:attribute"``.
    """

    def __init__(self, *args: Any, lazy: dict[str, str] | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.lazy = dict(lazy or {})

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*self.commands, *self.lazy})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in self.lazy:
            module, _, attribute = self.lazy[cmd_name].partition(":")
            command = getattr(importlib.import_module(module), attribute)
            assert isinstance(command, click.Command)
            self.add_command(command, cmd_name)
        return super().get_command(ctx, cmd_name)


def _check_ca_bundle(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """--ca-bundle read now: a file that is no CA bundle is a usage error (exit 2)."""
    if value is not None:
        try:
            check_ca_bundle(value, "--ca-bundle")
        except InvalidArgumentError as exc:
            raise click.BadParameter(str(exc).removeprefix("--ca-bundle: ")) from None
    return value


_HELP = f"""Bulk export and webhook management for the Payroll Onboarding and Webhook Service.

\b
{exit_codes_help()}
"""


@click.group(cls=LazyGroup, help=_HELP, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--base-url", envvar=BASE_URL, metavar="URL", help=f"The service's base URL [env: {BASE_URL}]."
)
@click.option("--token", envvar=TOKEN, metavar="TOKEN", help=f"Bearer token [env: {TOKEN}].")
@click.option(
    "--emulator",
    is_flag=True,
    help="Run against an in-process emulator with seeded demo data (no account needed).",
)
@click.option(
    "--redis-url",
    envvar=REDIS_URL,
    metavar="URL",
    help=f"Share one 429 pause (and --rate) with every process on this Redis [env: {REDIS_URL}].",
)
@click.option(
    "--gate-key",
    metavar="KEY",
    help="The shared gate's Redis key (default: derived from the base URL).",
)
@click.option(
    "--rate",
    type=click.FloatRange(min=0, min_open=True),
    metavar="N",
    help="At most N requests per second (for the whole fleet with --redis-url).",
)
@click.option(
    "--proxy",
    metavar="URL",
    help="The HTTP proxy to the service, http://user:password@proxy:3128 "
    "[default: HTTPS_PROXY, ALL_PROXY, unless NO_PROXY names the host].",
)
@click.option(
    "--ca-bundle",
    metavar="PATH",
    callback=_check_ca_bundle,
    help="Trust the certificate authorities of this PEM file (or directory) for the service "
    "and a rediss:// --redis-url [default: the system's, or SSL_CERT_FILE].",
)
@click.option("-v", "--verbose", is_flag=True, help="Debug logging, and tracebacks on errors.")
@click.version_option(__version__, prog_name="payroll-async")
@click.pass_context
def cli(
    ctx: click.Context,
    base_url: str | None,
    token: str | None,
    emulator: bool,
    redis_url: str | None,
    gate_key: str | None,
    rate: float | None,
    proxy: str | None,
    ca_bundle: str | None,
    verbose: bool,
) -> None:
    # main() starts without the cyclic garbage collector (see there); the command's own
    # work runs with it. A no-op where the command runs in another program (CliRunner).
    gc.enable()
    if verbose:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(VisibleFormatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
        logging.basicConfig(level=logging.DEBUG, handlers=[handler])
    if gate_key is not None and redis_url is None:
        raise click.UsageError("--gate-key needs --redis-url")
    if emulator:
        # Given on the command line, a service and --emulator contradict each other; from
        # the environment they are only a default, which --emulator overrides.
        given = [
            f"--{name.replace('_', '-')}"
            for name in ("base_url", "token")
            if ctx.get_parameter_source(name) is ParameterSource.COMMANDLINE
        ]
        if given:
            raise click.UsageError(
                f"--emulator runs against an in-process emulator: leave out {' and '.join(given)}"
            )
    ctx.obj = Settings(
        base_url=base_url,
        token=token,
        emulator=emulator,
        verbose=verbose,
        redis_url=redis_url,
        gate_key=gate_key,
        rate=rate,
        proxy=proxy,
        ca_bundle=ca_bundle,
    )
