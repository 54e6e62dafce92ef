"""``python -m payroll_async.emulator``: serve the emulator until Ctrl-C."""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs

from ._emulator import EMIT_PATH, Emulator

__all__ = ["OPTIONS", "Option", "emulator_from_options", "main", "parser", "serve"]


class BadValue(argparse.ArgumentTypeError, ValueError):
    """An option value that is not what the option takes (the message says why)."""


def port(text: str) -> int:
    """A TCP port from 0 to 65535 (0 picks a free one)."""
    if not text.isascii() or not text.isdigit() or not 0 <= int(text) <= 65535:
        raise BadValue(f"must be a port from 0 to 65535, got {text!r}")
    return int(text)


def header(text: str) -> tuple[str, str]:
    """A ``NAME:VALUE`` header."""
    name, sep, content = text.partition(":")
    if not sep or not name.strip():
        raise BadValue(f"takes NAME:VALUE, got {text!r}")
    return name.strip(), content.strip()


@attrs.frozen
class Option:
    """One option of the emulator's command line, as argparse and click both build it."""

    flag: str
    type: Callable[[str], Any]
    default: Any
    help: str
    metavar: str | None = None
    repeat: bool = False

    @property
    def dest(self) -> str:
        return self.flag.removeprefix("--").replace("-", "_")


OPTIONS: tuple[Option, ...] = (
    Option("--host", str, "127.0.0.1", "address to listen on"),
    Option("--port", port, 8080, "port; 0 picks a free one"),
    Option("--token", str, None, "the bearer token with every role (default: a random one)"),
    Option("--seed", int, 1, "seed of the data and the faults"),
    Option("--payroll-connections", int, 1000, "payroll connections", "N"),
    Option("--employer-identifiers", int, 50, "employer identifiers", "N"),
    Option("--update-groups", int, 5, "update groups per employer", "N"),
    Option("--webhook-subscriptions", int, 3, "webhook subscriptions at start", "N"),
    Option("--latency", float, 0.0, "seconds added to each request", "SECONDS"),
    Option("--rate-limit", float, None, "requests per second before 429 with Retry-After", "RPS"),
    Option("--error-rate", float, 0.0, "share of requests answered 500/503", "SHARE"),
    Option(
        "--drop-rate",
        float,
        0.0,
        "share of requests whose connection is closed without an answer",
        "SHARE",
    ),
    Option(
        "--max-page-size",
        int,
        None,
        "cap on limit for every listing (webhooks are capped at 100 regardless)",
        "N",
    ),
    Option(
        "--webhook-secret",
        str,
        None,
        "the 'whsec_...' secret deliveries are signed with (default: a random one)",
        "SECRET",
    ),
    Option(
        "--delivery-header",
        header,
        (),
        "a header sent with every notification delivery (repeatable)",
        "NAME:VALUE",
        repeat=True,
    ),
)
"""Every option but ``--no-link-headers``, which is a switch."""
LINK_HEADERS_HELP = "omit Link headers from list responses"


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
    return p


def emulator_from_options(options: Mapping[str, Any]) -> Emulator:
    """The Emulator the options (by ``Option.dest``, plus ``link_headers``) describe."""
    settings = dict(options)
    settings["delivery_headers"] = dict(settings.pop("delivery_header", ()))
    return Emulator(**settings)


def emulator_from(args: argparse.Namespace) -> Emulator:
    return emulator_from_options(vars(args))


async def serve(emulator: Emulator, announce: bool = True) -> None:
    """Run until SIGINT or SIGTERM, then close cleanly."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    async with emulator:
        if announce:
            print(f"Payroll emulator listening on {emulator.base_url}", flush=True)
            print(f"  PAYROLL_BASE_URL={emulator.base_url}", flush=True)
            print(f"  PAYROLL_TOKEN={emulator.token}", flush=True)
            print(f"  PAYROLL_WEBHOOK_SECRET={emulator.webhook_secret}", flush=True)
            print(
                f"  token without the webhook role: {emulator.token_without_webhook_role}",
                flush=True,
            )
            print(
                f"  emit an event: POST {emulator.base_url}{EMIT_PATH} with the token and "
                '{"eventType": "PAYROLL_PROCESSED", "data": {...}}',
                flush=True,
            )
            samples = emulator.sample_ids()
            if samples:
                print(
                    f"  employer identifier {samples['employer_identifier_id']} "
                    f"has invite {samples['invite_id']}",
                    flush=True,
                )
            print("Press Ctrl-C to stop.", flush=True)
        await stop.wait()
    print("Emulator stopped.", flush=True)


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        emulator = emulator_from(args)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    try:
        asyncio.run(serve(emulator))
    except BrokenPipeError:
        # The banner's reader went away (`| head`): stop quietly, as Unix tools do.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 141
    except OSError as exc:
        print(
            f"error: cannot listen on {args.host}:{args.port}: {exc.strerror or exc}",
            file=sys.stderr,
        )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
