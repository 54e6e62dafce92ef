"""Secrets taken out of what the SDK shows: a secret's text, however a URL or a JSON
encoder spells it, and the values of credential-like query parameters of every URL shown.

A server may echo the token it was sent (in an error body, in a Link header's next URL),
escaped as its JSON encoder escapes strings (PHP's ``\\/``, Gson's ``\\u003d``); a user may
put one in a query (``params={"access_token": ...}``). ``redact`` replaces a known secret
wherever it is spelled with any of its characters as itself, percent-encoded (its UTF-8
bytes, hex in either case; ``+`` for a space, as a query writes it) or JSON-escaped (any
``\\uXXXX``, either case, a surrogate pair beyond the BMP, and ``\\/``, ``\\"``, ``\\\\``,
``\\n`` and the like). A secret of fewer than 8 characters is replaced only where it stands
whole, not inside a longer run of letters and digits (so a one-character token never turns
``api.example.com`` into ``api.***xampl***.com``); a longer one wherever it is, since no
word holds it by chance. Every secret given is replaced, of any length, in one pass of one
compiled pattern. ``shown_url`` is the one form of a URL that an exception, a log line or a
repr shows: that, plus every value of a credential-like query or fragment parameter
(``access_token``, ``token``, ``api_key``, ``key``, ``password``, ``secret``,
``signature``, ``sig``) and a ``user:password@``'s password.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable

__all__ = ["CREDENTIAL_KEYS", "REDACTED", "pattern", "redact", "shown_url"]

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
# Standing whole: no letter or digit just before (unless that is the end of an escape,
# ``%3A`` or ``\u0022``, which spells some other character) and none just after.
_BEFORE = r"(?:(?<![^\W_])|(?<=%[0-9A-Fa-f]{2})|(?<=\\u[0-9A-Fa-f]{4})|(?<=\\[bfnrt]))"
_AFTER = r"(?![^\W_])"
_JSON_SHORT = {
    '"': r"\\\"",
    "\\": r"\\\\",
    "/": r"\\/",
    "\b": r"\\b",
    "\f": r"\\f",
    "\n": r"\\n",
    "\r": r"\\r",
    "\t": r"\\t",
}


def redact(text: str, *secrets: str | None) -> str:
    """``text`` with each of ``secrets`` replaced by ``REDACTED``, however a URL or a JSON
    encoder spells it (see the module's docstring)."""
    found = pattern(secrets)
    return text if found is None else found.sub(REDACTED, text)


def shown_url(url: object, *secrets: str | None) -> str:
    """``url`` (or a text quoting URLs, such as a Link header) as the SDK shows it:
    ``secrets`` redacted (as ``redact`` does), and the value of every credential-like
    query or fragment parameter and any ``user:password@``'s password too."""
    text = _CREDENTIAL.sub(rf"\1{REDACTED}", _PASSWORD.sub(rf"\1:{REDACTED}@", str(url)))
    return redact(text, *secrets)


def pattern(secrets: Iterable[str | None]) -> re.Pattern[str] | None:
    """One compiled pattern of every spelling of every secret (None: there is none)."""
    given = tuple(secret for secret in secrets if secret)
    return _compiled(given) if given else None


@functools.lru_cache(maxsize=64)
def _compiled(secrets: tuple[str, ...]) -> re.Pattern[str]:
    # Longest first: where a secret and a part of it both match, all of it is replaced.
    ordered = sorted(set(secrets), key=lambda secret: (-len(secret), secret))
    return re.compile("|".join(_spelling(secret) for secret in ordered))


def _spelling(secret: str) -> str:
    spelled = "".join(_character(char) for char in secret)
    return f"{_BEFORE}{spelled}{_AFTER}" if len(secret) < WHOLE_BELOW else spelled


@functools.lru_cache(maxsize=512)
def _character(char: str) -> str:
    """Every spelling of one character: itself, percent-encoded, JSON-escaped."""
    encoded = "".join(f"%{byte:02X}" for byte in char.encode("utf-8", "surrogatepass"))
    units = char.encode("utf-16-be", "surrogatepass")
    escaped = "".join(
        rf"\\u{int.from_bytes(units[i : i + 2], 'big'):04X}" for i in range(0, len(units), 2)
    )
    forms = [re.escape(char), f"(?i:{re.escape(encoded)})", f"(?i:{escaped})"]
    if char in _JSON_SHORT:
        forms.append(_JSON_SHORT[char])
    if char == " ":
        forms.append(r"\+")
    return f"(?:{'|'.join(forms)})"
