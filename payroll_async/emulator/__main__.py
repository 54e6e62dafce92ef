"""``python -m payroll_async.emulator``: serve the emulator until Ctrl-C."""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import sys
from collections.abc import Sequence

from ._emulator import Emulator

__all__ = ["main", "parser"]


def _port(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = -1
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"must be a port from 0 to 65535, got {text!r}")
    return value


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m payroll_async.emulator",
        description="Serve a local emulator of the Payroll Onboarding and Webhook Service.",
    )
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default %(default)s)")
    p.add_argument(
        "--port", type=_port, default=8080, help="port; 0 picks a free one (default %(default)s)"
    )
    p.add_argument("--token", help="the bearer token with every role (default: a random one)")
    p.add_argument(
        "--seed", type=int, default=1, help="seed of the data and the faults (default %(default)s)"
    )
    p.add_argument("--payroll-connections", type=int, default=1000, metavar="N")
    p.add_argument("--employer-identifiers", type=int, default=50, metavar="N")
    p.add_argument("--update-groups", type=int, default=5, metavar="N", help="per employer")
    p.add_argument("--webhook-subscriptions", type=int, default=3, metavar="N")
    p.add_argument(
        "--latency", type=float, default=0.0, metavar="SECONDS", help="added to each request"
    )
    p.add_argument(
        "--rate-limit",
        type=float,
        default=None,
        metavar="RPS",
        help="requests per second before 429 with Retry-After",
    )
    p.add_argument(
        "--error-rate",
        type=float,
        default=0.0,
        metavar="SHARE",
        help="share of requests answered 500/503",
    )
    p.add_argument(
        "--drop-rate",
        type=float,
        default=0.0,
        metavar="SHARE",
        help="share of requests whose connection is closed without an answer",
    )
    p.add_argument(
        "--max-page-size",
        type=int,
        default=None,
        metavar="N",
        help="cap on limit for every listing (webhooks are capped at 100 regardless)",
    )
    p.add_argument(
        "--no-link-headers",
        dest="link_headers",
        action="store_false",
        help="omit Link headers from list responses",
    )
    p.add_argument(
        "--delivery-header",
        action="append",
        default=[],
        metavar="NAME:VALUE",
        help="a header sent with every notification delivery (repeatable)",
    )
    return p


def _headers(values: Sequence[str]) -> dict[str, str]:
    headers = {}
    for value in values:
        name, sep, content = value.partition(":")
        if not sep or not name.strip():
            raise ValueError(f"--delivery-header takes NAME:VALUE, got {value!r}")
        headers[name.strip()] = content.strip()
    return headers


def emulator_from(args: argparse.Namespace) -> Emulator:
    return Emulator(
        seed=args.seed,
        payroll_connections=args.payroll_connections,
        employer_identifiers=args.employer_identifiers,
        update_groups=args.update_groups,
        webhook_subscriptions=args.webhook_subscriptions,
        latency=args.latency,
        rate_limit=args.rate_limit,
        error_rate=args.error_rate,
        drop_rate=args.drop_rate,
        link_headers=args.link_headers,
        max_page_size=args.max_page_size,
        host=args.host,
        port=args.port,
        token=args.token,
        delivery_headers=_headers(args.delivery_header),
    )


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
            print(
                f"  token without the webhook role: {emulator.token_without_webhook_role}",
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
