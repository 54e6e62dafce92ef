"""``python -m payroll_async.emulator``: serve the emulator until Ctrl-C."""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from collections.abc import Sequence

from ._emulator import Emulator
from ._shell import (
    LINK_HEADERS_HELP,
    OPTIONS,
    TLS_HELP,
    cannot_listen,
    emulator_from_options,
    serve,
)

__all__ = ["main", "parser"]


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m payroll_async.emulator",
        description="Serve a local emulator of the Payroll Onboarding and Webhook Service.",
    )
    for option in OPTIONS:
        default = "" if option.default is None else " (default %(default)s)"
        p.add_argument(
            option.flag,
            type=option.type,
            default=[] if option.repeat else option.default,
            action="append" if option.repeat else "store",
            metavar=option.metavar,
            help=option.help + ("" if option.repeat else default),
        )
    p.add_argument(
        "--no-link-headers", dest="link_headers", action="store_false", help=LINK_HEADERS_HELP
    )
    p.add_argument("--tls", action="store_true", help=TLS_HELP)
    return p


def emulator_from(args: argparse.Namespace) -> Emulator:
    return emulator_from_options(vars(args))


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        emulator = emulator_from(args)
        if args.churn_every is not None and not args.churn_every > 0:
            raise ValueError(f"--churn-every must be > 0 seconds, got {args.churn_every!r}")
    except ValueError as exc:
        print(f"error: {str(exc).replace('tls=True', '--tls')}", file=sys.stderr)
        return 2
    try:
        asyncio.run(serve(emulator, churn_every=args.churn_every))
    except BrokenPipeError:
        # The banner's reader went away (`| head`): stop quietly, as Unix tools do.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 141
    except OSError as exc:
        print(f"error: {cannot_listen(args.host, args.port, exc)}", file=sys.stderr)
        return 2  # as payroll-async emulator: --host or --port is bad input
    return 0


if __name__ == "__main__":
    sys.exit(main())
