"""Exit codes (one table drives the codes and the help text) and the command's errors."""

from __future__ import annotations

import enum
import re
import textwrap
from typing import IO, TYPE_CHECKING, Any

import click
from rich.text import Text
from yarl import URL

from payroll_async import (
    APIStatusError,
    AuthenticationError,
    InvalidArgumentError,
    PayrollError,
    PermissionDeniedError,
    RateLimitError,
)

__all__ = [
    "CommandError",
    "ExitCode",
    "ParamType",
    "advice_in_cli_terms",
    "error_for",
    "exit_codes_help",
    "in_cli_terms",
    "said_once",
]

from payroll_async._http._failures import TRUST_ADVICE
from payroll_async._http._network import NO_ENVIRONMENT, SOCKS_ADVICE
from payroll_async.export import SERVICE_ADVICE, ExportError

from ._console import SafeConsole, visible

stderr = SafeConsole(stderr=True, soft_wrap=True)  # one message, one line

if TYPE_CHECKING or hasattr(click.ParamType, "__class_getitem__"):
    ParamType = click.ParamType
else:

    class ParamType(click.ParamType):
        """An option's own type, ``ParamType[T]`` as click 8.4 spells it: click 8.2 (the
        floor) does not subscript its ParamType, which is generic only for checkers."""

        def __class_getitem__(cls, _item: object) -> type[click.ParamType]:
            return cls


class ExitCode(enum.IntEnum):
    """What the exit status of ``payroll-async`` says, for scripts to tell failures apart."""

    description: str

    def __new__(cls, code: int, description: str) -> ExitCode:
        member = int.__new__(cls, code)
        member._value_ = code
        member.description = description
        return member

    OK = (0, "success")
    UNEXPECTED = (1, "unexpected failure")
    BAD_INPUT = (2, "bad input")
    AUTH = (3, "authentication or permission")
    RATE_LIMITED = (4, "rate limited")
    SERVICE = (5, "other service errors")
    INTERRUPTED = (130, "interrupted (Ctrl-C)")
    BROKEN_PIPE = (141, "output closed (| head)")
    TERMINATED = (143, "terminated (SIGTERM)")


def exit_codes_help() -> str:
    """The exit-code paragraph of ``--help``, from the table."""
    text = "Exit codes: " + ", ".join(f"{c.value} {c.description}" for c in ExitCode) + "."
    return "\n".join(textwrap.wrap(text, width=76))


class CommandError(click.ClickException):
    """A failure the command reports in one line on stderr, with its exit code."""

    exit_code = ExitCode.UNEXPECTED

    def show(self, file: IO[Any] | None = None) -> None:
        # the message may quote the service: plain text after a styled prefix, never markup
        message = visible(self.format_message())
        stderr.print(Text.assemble(("error:", "bold red"), " ", message), soft_wrap=True)


class BadInput(CommandError):
    """Options, identifiers, sort fields, an export that cannot resume."""

    exit_code = ExitCode.BAD_INPUT


class AuthFailed(CommandError):
    """The service refused the token (401) or the role (403)."""

    exit_code = ExitCode.AUTH


class RateLimited(CommandError):
    """Rate limited beyond what the retry policy waits for (429)."""

    exit_code = ExitCode.RATE_LIMITED


class ServiceFailed(CommandError):
    """Any other failure of the service: 4xx/5xx, no connection, an unreadable answer."""

    exit_code = ExitCode.SERVICE


# The SDK's errors by the exit code they give; the first match wins.
_ERRORS: tuple[
    tuple[type[BaseException] | tuple[type[BaseException], ...], type[CommandError]], ...
] = (
    ((InvalidArgumentError, ExportError), BadInput),
    ((AuthenticationError, PermissionDeniedError), AuthFailed),
    (RateLimitError, RateLimited),
    (PayrollError, ServiceFailed),
)


# The SDK's parameters as the command's options and arguments, so that a message about
# bad input names what the user typed (--employer), not what the SDK calls it.
_CLI_NAMES = {
    "employer_identifier_id": "--employer",
    "subscription_id": "SUBSCRIPTION_ID",
    "event_types": "--event",
    "path": "--path",
    "page_size": "--page-size",
    "sort": "--sort",
    "concurrency": "--concurrency",
    "base_url": "--base-url",
    "token": "--token",
    "rate": "--rate",
}
_SDK_NAME = re.compile(rf"\b({'|'.join(_CLI_NAMES)})\b(?= must| is| needs|:|\[)")
# The library's keyword arguments that its messages suggest, as the command's flags.
_CLI_FLAGS = {"resume=True": "--resume", "wait=True": "--wait", "proxy=": "--proxy"}
_SDK_FLAG = re.compile("|".join(re.escape(flag) for flag in _CLI_FLAGS))
# The library's advice that names what only a program can pass, as what the command can do.
_CLI_ADVICE = {
    SOCKS_ADVICE: "the command speaks HTTP proxies only: give an http:// or https:// one, or "
    "an HTTP proxy in front of the SOCKS one",
    NO_ENVIRONMENT: "unset the variable",
    TRUST_ADVICE: "pass --ca-bundle with its PEM file",
    SERVICE_ADVICE: "",  # --emulator's exports are known by their data already
}
_ADVICE = re.compile("|".join(re.escape(advice) for advice in _CLI_ADVICE))
# The mirror's bound on deletions: max_deletions=N, or None for no bound.
_MAX_DELETIONS = re.compile(r"\bmax_deletions(?:=(None|\d+))?\b")


def _max_deletions(match: re.Match[str]) -> str:
    value = match[1]
    return "--max-deletions" + ("" if value is None else " all" if value == "None" else f" {value}")


def advice_in_cli_terms(message: str) -> str:
    """A library message's advice that names what only a program can pass (``ssl=``,
    ``session=``), as what the command can do (``--ca-bundle``)."""
    return _ADVICE.sub(lambda m: _CLI_ADVICE[m[0]], message)


def in_cli_terms(message: str) -> str:
    """A library message in the command's words: its parameter names and the keyword
    arguments it suggests as the command's options."""
    message = advice_in_cli_terms(message)
    message = _SDK_FLAG.sub(lambda m: _CLI_FLAGS[m[0]], message)
    message = _MAX_DELETIONS.sub(_max_deletions, message)
    return _SDK_NAME.sub(lambda m: _CLI_NAMES[m[1]], message)


def said_once(exc: BaseException) -> str:
    """The error's text, without what the service's errors only repeat of the request.

    A service (the emulator too) may answer an unknown path with the request itself as the
    error (``404: Not Found (GET /v1/v1/webhooks)``), which the line already names.
    """
    text = str(exc)
    if not isinstance(exc, APIStatusError) or not exc.method or not exc.errors:
        return text
    try:
        url = URL(exc.url)
    except ValueError:
        return text
    echoes = {f"{exc.method} {url.path}", f"{exc.method} {url.raw_path}"}
    kept = [error for error in exc.errors if error.strip() not in echoes]
    if len(kept) == len(exc.errors):
        return text
    said = f"{exc.message} ({'; '.join(exc.errors)})"
    return text.replace(said, f"{exc.message} ({'; '.join(kept)})" if kept else exc.message, 1)


def error_for(exc: BaseException, message: str | None = None) -> CommandError:
    """The command's error for a failure of the SDK (or anything else)."""
    cls = next((cls for kinds, cls in _ERRORS if isinstance(exc, kinds)), CommandError)
    return cls(str(exc) if message is None else message)
