"""The secrets this process gave the SDK, kept out of what it stores or shows of outside
text for as long as something holding them lives.

A handler's exception may quote anything it had in hand: a client's token, a router's
signing secret, a database's password. Where the SDK keeps or shows such text (an inbox's
``last_error``, the receiver's log records, tracebacks included), it takes out every secret
held: a client's fixed token and a provider's current and previous tokens (held by the
client's ``Auth``), a router's ``whsec_`` secrets (its ``Signer``), a database's
credentials (its ``Database``), and those of the environment (``PAYROLL_TOKEN``,
``PAYROLL_WEBHOOK_SECRET``). Each holder pins its own for as long as it lives and no longer
(a weak reference lets go of a collected holder's), so a provider that mints a token per
request, or seventy tenants' clients, can never push out another's secret, and nothing
grows for ever. They are replaced as ``_redact`` replaces them (in any spelling of a URL or
a JSON encoder; a short one where it stands whole), all with one compiled pattern, built
again only when the set changes.
"""

from __future__ import annotations

import logging
import weakref
from collections.abc import Iterable

from . import _env
from ._redact import pattern, replace

__all__ = ["ScrubbingFilter", "held", "hold", "remember", "scrub"]

# holder's id -> its secrets; an entry leaves once its holder is collected
_held: dict[int, frozenset[str]] = {}
# The ids of holders collected: a finalizer (which may run in the middle of any code, at a
# garbage collection) only notes its holder's here, and the entry leaves before the next
# use; its holder died before any other object could get its id.
_gone: list[int] = []
_kept: set[str] = set()  # given without a holder: for the life of the process


def _let_go() -> None:
    while _gone:
        _held.pop(_gone.pop(), None)


def hold(holder: object, *secrets: str) -> None:
    """``holder``'s secrets are now ``secrets`` (those it held before are let go, as a
    provider's older tokens), kept out of what is shown while ``holder`` lives."""
    _let_go()
    key = id(holder)
    if key not in _held:
        weakref.finalize(holder, _gone.append, key)
    _held[key] = frozenset(secret for secret in secrets if secret)


def remember(*secrets: str, holder: object | None = None) -> None:
    """Keep ``secrets`` out of what the SDK stores or shows: for as long as ``holder``
    lives (added to what it holds), or, without one, for the life of the process (for a
    secret given once, never for one made per request)."""
    _let_go()
    given = [secret for secret in secrets if secret]
    if holder is None:
        _kept.update(given)
    else:
        hold(holder, *_held.get(id(holder), ()), *given)


def held(also: Iterable[str] = ()) -> frozenset[str]:
    """Every secret held now, the environment's and ``also``."""
    _let_go()
    from_env = (_env.read(_env.TOKEN), _env.read(_env.WEBHOOK_SECRET))
    return frozenset().union(*_held.values(), _kept, also, (s for s in from_env if s))


def scrub(text: str, also: Iterable[str] = ()) -> str:
    """``text`` with every secret held (and ``also``) replaced by ``REDACTED``
    (``_redact.REDACTED``)."""
    found = pattern(sorted(held(also)))
    return text if found is None else replace(found, text)


class ScrubbingFilter(logging.Filter):
    """Takes every secret held out of the records of the logger it is added to: the
    message with its arguments, the traceback and the stack (added after the logger's
    ``EscapingFilter``, so that it reads the arguments as they are shown).

    A record whose traceback held a secret keeps the traceback's text only, not the
    exception itself (which a handler could format again)."""

    def filter(self, record: logging.LogRecord) -> bool:
        found = pattern(sorted(held()))
        if found is None:
            return True
        try:
            message = record.getMessage()
        except Exception:  # the record's own formatting error is the handler's to report
            return True
        shown = replace(found, message)
        if shown != message:
            record.msg, record.args = shown, ()
        if record.exc_info and record.exc_info[0] is not None:
            text = record.exc_text or logging.Formatter().formatException(record.exc_info)
            record.exc_text = replace(found, text)
            if record.exc_text != text:
                record.exc_info = None
        if record.stack_info:
            record.stack_info = replace(found, record.stack_info)
        return True
