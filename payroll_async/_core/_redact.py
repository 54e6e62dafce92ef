"""Secrets taken out of what the SDK shows: a secret's text, however a URL spells it, and
the values of credential-like query parameters of every URL shown.

A server may echo the token it was sent (in an error body, in a Link header's next URL);
a user may put one in a query (``params={"access_token": ...}``). ``redact`` replaces a
known secret's text, also where it is percent-encoded (``%2B`` for ``+``, in either case,
or ``+`` for a space, as a query writes it); ``shown_url`` is the one form of a URL that
an exception, a log line or a repr shows: that, plus every value of a credential-like
query or fragment parameter (``access_token``, ``token``, ``api_key``, ``key``,
``password``, ``secret``, ``signature``, ``sig``) and a ``user:password@``'s password.
"""

from __future__ import annotations

import functools
import re

__all__ = ["CREDENTIAL_KEYS", "REDACTED", "redact", "shown_url"]

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


def redact(text: str, *secrets: str | None) -> str:
    """``text`` with each of ``secrets`` replaced by ``REDACTED``, in any percent-encoding."""
    for secret in secrets:
        if secret:
            text = _spelling(secret).sub(REDACTED, text)
    return text


def shown_url(url: object, *secrets: str | None) -> str:
    """``url`` (or a text quoting URLs, such as a Link header) as the SDK shows it:
    ``secrets`` redacted (as ``redact`` does), and the value of every credential-like
    query or fragment parameter and any ``user:password@``'s password too."""
    text = _CREDENTIAL.sub(rf"\1{REDACTED}", _PASSWORD.sub(rf"\1:{REDACTED}@", str(url)))
    return redact(text, *secrets)


@functools.lru_cache(maxsize=8)
def _spelling(secret: str) -> re.Pattern[str]:
    """Every spelling of ``secret`` in text or a URL: each character as itself or
    percent-encoded (its UTF-8 bytes, hex in either case), a space also as ``+``."""
    alternatives = []
    for char in secret:
        encoded = "".join(f"%{byte:02X}" for byte in char.encode("utf-8", "surrogatepass"))
        forms = [re.escape(char), f"(?i:{re.escape(encoded)})"]
        if char == " ":
            forms.append(r"\+")
        alternatives.append(f"(?:{'|'.join(forms)})")
    return re.compile("".join(alternatives))
