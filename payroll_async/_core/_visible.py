"""Text from outside (a service, a sender) made safe to show on a terminal or in a log.

A terminal acts on what it is sent: ESC starts colour, cursor and OSC sequences (hidden
hyperlinks, window titles, clipboard writes), BEL rings, a bare CR overwrites the line, and
bidirectional overrides reorder what is read. Every character that Python does not call
printable is written as its escape instead (``\\x1b``, ``\\r``, ``\\u202e``), as ``repr``
would write it, so that the text is shown and never obeyed. Line breaks are among them
(``\\n``, ``\\r``, ``\\x85``, ``\\u2028``): a log line that quotes outside text stays one
line, and never starts a forged one.
"""

from __future__ import annotations

import logging
import re

from ._redact import REDACTED

__all__ = ["EscapingFilter", "VisibleFormatter", "redact_url", "visible"]


def visible(text: object, keep: str = "") -> str:
    """``text`` with every non-printable character escaped; printable text is unchanged.

    ``keep``: control characters to leave as they are (the command's own line breaks).

    >>> visible("evt_1\x1b]8;;https://evil\x07click\x1b]8;;\x07")
    'evt_1\\x1b]8;;https://evil\\x07click\\x1b]8;;\\x07'
    """
    value = text if isinstance(text, str) else str(text)
    if value.isprintable():
        return value
    return "".join(ch if ch.isprintable() or ch in keep else repr(ch)[1:-1] for ch in value)


class EscapingFilter(logging.Filter):
    """Escapes control characters in the arguments of every record of the logger it is added to.

    The arguments are what a server or a sender wrote (URLs, ids, types, exceptions quoting
    them): escaped once here, line breaks included, so that no log line can carry a
    terminal escape sequence or start a forged line, whoever adds the next handler. Strings
    are escaped at once; other objects but numbers when the record is formatted, as ``%s``
    or ``%r`` shows them.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.args, tuple):
            record.args = tuple(_escaped(a) for a in record.args)
        return True


def _escaped(value: object) -> object:
    if isinstance(value, str):
        return visible(value)
    if value is None or isinstance(value, (int, float)):
        return value  # bool is an int: as %d, %g and %s format them
    return _Shown(value)


class _Shown:
    """An argument of a log record, shown escaped by ``%s`` and ``%r``."""

    __slots__ = ("_value",)

    def __init__(self, value: object) -> None:
        self._value = value

    def __str__(self) -> str:
        return visible(str(self._value))

    def __repr__(self) -> str:
        return visible(repr(self._value))


class VisibleFormatter(logging.Formatter):
    """Log lines with every control character escaped, line breaks included.

    A record's message is one line whatever its arguments hold (a server's URL with a
    ``%0A``, a sender's id). A traceback or stack keeps its own line breaks, but each of
    its lines is indented, so that only the first line of a record starts at the margin:
    no text quoted in an exception can pass for a record of its own.
    """

    def format(self, record: logging.LogRecord) -> str:
        record.message = record.getMessage()
        if self.usesTime():
            record.asctime = self.formatTime(record, self.datefmt)
        text = visible(self.formatMessage(record))
        if record.exc_info:
            # not record.exc_text: another handler's formatter may have cached it unescaped
            text += _continued(self.formatException(record.exc_info))
        elif record.exc_text:
            text += _continued(record.exc_text)
        if record.stack_info:
            text += _continued(self.formatStack(record.stack_info))
        return text


def _continued(text: str) -> str:
    """``text`` as the continuation of a log line: escaped, each line indented."""
    return "".join(f"\n  {line}" for line in visible(text, keep="\n").split("\n"))


# Up to the last "@": a password a user did not percent-encode may hold "/", "?", "#", "@".
_USERINFO_RE = re.compile(r"(//).*@")
_FRAGMENT_RE = re.compile(r"#.*", re.S)


def redact_url(value: str) -> str:
    """``value`` fit to appear in an error message: any ``user:password@`` and every value
    of its query and fragment (which may hold a token or a key) replaced by ``REDACTED``."""
    hidden = f"#{REDACTED}"
    value = _FRAGMENT_RE.sub(hidden, _USERINFO_RE.sub(rf"\1{REDACTED}@", value))
    head, mark, query = value.partition("?")
    if not mark:
        return value
    fragment = hidden if query.endswith(hidden) else ""
    query = query.removesuffix(hidden)
    parts = [
        f"{name}={REDACTED}" if sep else REDACTED
        for name, sep, _ in (part.partition("=") for part in query.split("&"))
    ]
    return f"{head}?{'&'.join(parts)}{fragment}"


_FRAGMENT_RE = re.compile(r"#.*", re.S)
