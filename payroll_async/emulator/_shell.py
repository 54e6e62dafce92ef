"""The emulator served from a shell: its options (one table for ``python -m
payroll_async.emulator`` and ``payroll-async emulator``), the serving loop and its messages."""

from __future__ import annotations

import argparse
import asyncio
import errno
import os
import signal
import sys
from collections.abc import Callable, Mapping
from typing import Any

import attrs

from .._core._assumed import EMULATOR_MAX_PAGE_SIZE
from ._emulator import EMIT_PATH, Emulator

__all__ = [
    "LINK_HEADERS_HELP",
    "LINK_HEADERS_SWITCH_HELP",
    "OPTIONS",
    "TLS_HELP",
    "BadValue",
    "Option",
    "cannot_listen",
    "emulator_from_options",
    "serve",
]


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
        "share of requests whose connection is closed without an answer "
        "(half of them after the request was carried out)",
        "SHARE",
    ),
    Option(
        "--max-page-size",
        int,
        EMULATOR_MAX_PAGE_SIZE,
        "cap on limit for every listing (webhooks are capped at 100 regardless)",
        "N",
    ),
    Option(
        "--webhook-secret",
        str,
        None,
        "the 'whsec_...' secret (v1) or 'whsk_...' Ed25519 private key (v1a) deliveries "
        "are signed with (default: a random 'whsec_')",
        "SECRET",
    ),
    Option(
        "--churn-every",
        float,
        None,
        "change about 1% of the payroll connections every SECONDS (new, updated and "
        "deleted ones; for demos of the mirror)",
        "SECONDS",
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
TLS_HELP = (
    "serve https:// with a certificate of a certificate authority it makes for itself, "
    "whose CA file it prints: to rehearse a private CA and a proxy (--proxy, proxy=, which "
    "carry https:// only) on this machine; needs the 'emulator-tls' extra"
)
LINK_HEADERS_SWITCH_HELP = (
    "Send Link headers (rel=next, ...) with list responses, as the service does "
    "(--link-headers, the default), or omit them (--no-link-headers)."
)


def emulator_from_options(options: Mapping[str, Any]) -> Emulator:
    """The Emulator the options (by ``Option.dest``, plus ``link_headers``) describe."""
    settings = dict(options)
    settings.pop("churn_every", None)  # serve()'s, not the Emulator's
    settings["delivery_headers"] = dict(settings.pop("delivery_header", ()))
    return Emulator(**settings)


async def churn_forever(emulator: Emulator, every: float, announce: bool) -> None:
    """Every ``every`` seconds, insert, update and delete ~1/300 of the connections each."""
    while True:
        await asyncio.sleep(every)
        size = emulator.data.payroll_connections.size
        step = max(1, size // 300)
        churn = emulator.churn(
            "payroll-connections",
            inserted=step,
            updated=min(step, size),
            deleted=min(step, max(0, size - step)),
        )
        if announce:
            print(
                f"churn: {len(churn.inserted)} payroll connections new, "
                f"{len(churn.updated)} updated, {len(churn.deleted)} deleted",
                flush=True,
            )


async def serve(
    emulator: Emulator, announce: bool = True, churn_every: float | None = None
) -> None:
    """Run until SIGINT or SIGTERM, then close cleanly; churn every ``churn_every`` s."""
    if churn_every is not None and not churn_every > 0:
        raise ValueError(f"--churn-every must be > 0 seconds, got {churn_every!r}")
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    async with emulator:
        churning = (
            asyncio.create_task(churn_forever(emulator, churn_every, announce))
            if churn_every is not None
            else None
        )
        exposed = emulator.exposed()
        if announce and exposed:
            # Say where it really listens, not the loopback URL it is called by from here.
            print(f"Payroll emulator listening on {', '.join(exposed)}", flush=True)
            print(
                "warning: the emulator is reachable from the network, not only from this "
                "machine: anyone who can reach this machine can call it with the token "
                "below (--host 127.0.0.1 keeps it local)",
                file=sys.stderr,
                flush=True,
            )
        elif announce:
            print(f"Payroll emulator listening on {emulator.base_url}", flush=True)
        if announce:
            print(f"  PAYROLL_BASE_URL={emulator.base_url}", flush=True)
            print(f"  PAYROLL_TOKEN={emulator.token}", flush=True)
            if emulator.ca_file:
                print(
                    f"  CA file: {emulator.ca_file} (trust it with --ca-bundle, ssl= or "
                    "SSL_CERT_FILE; deleted when the emulator stops)",
                    flush=True,
                )
            # what a receiver verifies with: the whsec_ itself, or the whpk_ of a whsk_
            verify_with = emulator.webhook_public_key or emulator.webhook_secret
            print(f"  PAYROLL_WEBHOOK_SECRET={verify_with}", flush=True)
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
        try:
            await stop.wait()
        finally:
            if churning is not None:
                churning.cancel()
    print("Emulator stopped.", flush=True)


def cannot_listen(host: str, port: int, exc: OSError) -> str:
    """Why the emulator or a receiver cannot listen on ``host:port``, and what to do: one
    message for ``emulator`` and ``webhooks listen`` alike (both exit 2, as bad input)."""
    where = f"cannot listen on {'[' + host + ']' if ':' in host else host}:{port}"
    if exc.errno == errno.EADDRINUSE:
        return f"{where}: the port is in use: pick another --port, or --port 0 for a free one"
    # aiohttp's text repeats the address ("error while attempting to bind on address ...")
    said = os.strerror(exc.errno) if exc.errno else str(exc)
    return f"{where}: {said} (check --host and --port)"
