"""``payroll-async emulator``: serve the emulator, with the options of its own command line."""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Callable
from typing import Any, TypeVar

import click

from payroll_async.emulator import (
    LINK_HEADERS_SWITCH_HELP,
    OPTIONS,
    TLS_HELP,
    BadValue,
    Option,
    cannot_listen,
    emulator_from_options,
    serve,
)

from ._errors import BadInput, ExitCode, ParamType

__all__ = ["emulator"]

F = TypeVar("F", bound=Callable[..., Any])


class _Checked(ParamType[Any]):
    """An option's own type, whose error message is kept."""

    def __init__(self, option: Option) -> None:
        self.option = option
        self.name = option.metavar or option.dest

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if not isinstance(value, str):
            return value
        try:
            return self.option.type(value)
        except ValueError as exc:
            self.fail(
                str(exc) if isinstance(exc, BadValue) else f"not valid: {value!r}", param, ctx
            )


def _options(command: F) -> F:
    """The click options of the emulator's own command line (one table, OPTIONS)."""
    command = click.option("--tls", is_flag=True, help=TLS_HELP[:1].upper() + TLS_HELP[1:] + ".")(
        command
    )
    command = click.option(
        "--link-headers/--no-link-headers", default=True, help=LINK_HEADERS_SWITCH_HELP
    )(command)
    for option in reversed(OPTIONS):
        command = click.option(
            option.flag,
            type=_Checked(option),
            default=option.default,
            multiple=option.repeat,
            show_default=option.default not in (None, ()),
            help=option.help[:1].upper() + option.help[1:] + ".",
        )(command)
    return command


@click.command()
@_options
def emulator(**options: Any) -> None:
    """Serve a local emulator of the service until Ctrl-C (or SIGTERM)."""
    churn_every = options.get("churn_every")
    try:
        emu = emulator_from_options(options)
        if churn_every is not None and not churn_every > 0:
            raise ValueError(f"--churn-every must be > 0 seconds, got {churn_every!r}")
    except ValueError as exc:
        raise BadInput(str(exc).replace("tls=True", "--tls")) from None
    host, port = emu.host, emu.port
    try:
        asyncio.run(serve(emu, churn_every=churn_every))
    except BrokenPipeError:
        # The banner's reader went away (`| head`): stop quietly, as Unix tools do.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        raise SystemExit(ExitCode.BROKEN_PIPE) from None
    except OSError as exc:
        # as webhooks listen and inbox run say it: --host or --port is bad input (exit 2)
        raise BadInput(cannot_listen(host, port, exc)) from None
