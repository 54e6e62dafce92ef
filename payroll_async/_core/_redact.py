"""Secrets taken out of what the SDK shows: a secret's text, however a URL or a JSON
encoder spells it, and the values of credential-like query parameters of every URL shown.

A server may echo the token it was sent (in an error body, in a Link header's next URL),
escaped as its JSON encoder escapes strings (PHP's ``\\/``, Gson's ``\\u003d``); a user may
put one in a query (``params={"access_token": ...}``). ``redact`` replaces a known secret
as written, and as the text reads with its escapes undone: percent-encoded bytes (hex in
either case), JSON's ``\\uXXXX`` (either case; a surrogate pair for a character beyond the
BMP) and short escapes (``\\/``, ``\\"``, ``\\\\``, ``\\n``...), any character either way;
the escapes a match spans are replaced with it. A space may be ``+`` throughout, as a query
writes it. A secret of fewer than 8 characters is replaced only where it stands whole, not
inside a longer run of letters and digits (so a one-character token never turns
``api.example.com`` into ``api.***xampl***.com``); a longer one wherever it is, since no
word holds it by chance. Every secret given is replaced, of any length, with one compiled
pattern of them all. ``shown_url`` is the one form of a URL that an exception, a log line
or a repr shows: that, plus every value of a credential-like query or fragment parameter
(``access_token``, ``token``, ``api_key``, ``key``, ``password``, ``secret``,
``signature``, ``sig``) and a ``user:password@``'s password.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable

__all__ = ["CREDENTIAL_KEYS", "REDACTED", "pattern", "redact", "replace", "shown_url"]

REDACTED = "***"
"""What a secret becomes in any text the SDK shows or keeps: exceptions, reprs, logs,
spans, the command's lines, an inbox's ``last_error`` (the one marker of the package, as
SQLAlchemy shows a URL's password)."""

CREDENTIAL_KEYS = frozenset(
    {"access_token", "token", "api_key", "key", "password", "secret", "signature", "sig"}
)
"""Query parameters whose values are never shown (in any case, ``-`` for ``_`` too)."""

_PASSWORD = re.compile(r"(://[^/?#@:\s]*):[^/?#@\s]*@")
_NAMES = "|".join(sorted(re.escape(name).replace("_", "[-_]") for name in CREDENTIAL_KEYS))
_CREDENTIAL = re.compile(rf"([?&#](?:{_NAMES})=)[^&#\s<>\"]+", re.IGNORECASE)

WHOLE_BELOW = 8
"""A secret shorter than this is replaced only where it stands whole."""
# Standing whole: no letter or digit just before it, and none just after.
_BEFORE = r"(?<![^\W_])"
_AFTER = r"(?![^\W_])"
# What a URL or a JSON encoder writes for a character: a run of percent-encoded bytes, a
# JSON \uXXXX (a surrogate pair for one character beyond the BMP), a short JSON escape.
_ESCAPE = re.compile(
    r"(?:%[0-9A-Fa-f]{2})+"
    r"|\\u[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2}"
    r"|\\u[0-9a-fA-F]{4}"
    r'|\\[/"\\bfnrt]'
)
_JSON_SHORT = {
    "/": "/",
    '"': '"',
    "\\": "\\",
    "b": "\b",
    "f": "\f",
    "n": "\n",
    "r": "\r",
    "t": "\t",
}


def redact(text: str, *secrets: str | None) -> str:
    """``text`` with each of ``secrets`` replaced by ``REDACTED``, however a URL or a JSON
    encoder spells it (see the module's docstring)."""
    found = pattern(secrets)
    return text if found is None else replace(found, text)


def shown_url(url: object, *secrets: str | None) -> str:
    """``url`` (or a text quoting URLs, such as a Link header) as the SDK shows it:
    ``secrets`` redacted (as ``redact`` does), and the value of every credential-like
    query or fragment parameter and any ``user:password@``'s password too."""
    text = _CREDENTIAL.sub(rf"\1{REDACTED}", _PASSWORD.sub(rf"\1:{REDACTED}@", str(url)))
    return redact(text, *secrets)


def pattern(secrets: Iterable[str | None]) -> re.Pattern[str] | None:
    """One compiled pattern of every secret (None: there is none), for ``replace``."""
    given = tuple(secret for secret in secrets if secret)
    return _compiled(given) if given else None


def replace(found: re.Pattern[str], text: str) -> str:
    """``text`` with every secret of ``found`` (a ``pattern``) replaced by ``REDACTED``:
    where the text holds one once its escapes are undone (percent-encoding, JSON's
    escapes: each escape a match spans replaced with it), then where it is as written."""
    if ("%" in text or "\\" in text) and found.search(_ESCAPE.sub(_plain, text)):
        text = _unescaped_replaced(found, text)
    return found.sub(REDACTED, text)


def _unescaped_replaced(found: re.Pattern[str], text: str) -> str:
    plain, spans = _unescaped(text)
    shown: list[str] = []
    position = 0
    for match in found.finditer(plain):
        start, end = spans[match.start()][0], spans[match.end() - 1][1]
        shown += (text[position:start], REDACTED)
        position = end
    return "".join((*shown, text[position:]))


def _unescaped(text: str) -> tuple[str, list[tuple[int, int]]]:
    """``text`` with its escapes undone, and where in ``text`` each character of it was."""
    plain: list[str] = []
    spans: list[tuple[int, int]] = []
    position = 0
    for escape in _ESCAPE.finditer(text):
        plain.append(text[position : escape.start()])
        spans += ((i, i + 1) for i in range(position, escape.start()))
        position = escape.end()
        chars = _undone(escape[0])
        if chars is None:  # not UTF-8: kept as written
            plain.append(escape[0])
            spans += ((i, i + 1) for i in range(escape.start(), escape.end()))
            continue
        at = escape.start()
        for char, width in chars:
            plain.append(char)
            spans.append((at, at + width))
            at += width
    plain.append(text[position:])
    spans += ((i, i + 1) for i in range(position, len(text)))
    return "".join(plain), spans


def _plain(escape: re.Match[str]) -> str:
    chars = _undone(escape[0])
    return escape[0] if chars is None else "".join(char for char, _ in chars)


@functools.lru_cache(maxsize=1024)
def _undone(escape: str) -> list[tuple[str, int]] | None:
    """The characters an escape spells, each with the width it has in the text."""
    if escape[0] == "%":
        try:
            chars = bytes.fromhex(escape.replace("%", "")).decode("utf-8")
        except UnicodeDecodeError:
            return None
        return [(char, 3 * len(char.encode("utf-8"))) for char in chars]
    if escape[1] == "u":
        units = bytes.fromhex(escape.replace("\\u", ""))
        return [(units.decode("utf-16-be", "surrogatepass"), len(escape))]
    return [(_JSON_SHORT[escape[1]], 2)]


@functools.lru_cache(maxsize=64)
def _compiled(secrets: tuple[str, ...]) -> re.Pattern[str]:
    forms = {form for secret in secrets for form in (secret, secret.replace(" ", "+"))}
    # Longest first: where a secret and a part of it both match, all of it is replaced.
    ordered = sorted(forms, key=lambda form: (-len(form), form))
    return re.compile("|".join(_spelling(form) for form in ordered))


def _spelling(secret: str) -> str:
    spelled = re.escape(secret)
    return f"{_BEFORE}{spelled}{_AFTER}" if len(secret) < WHOLE_BELOW else spelled
