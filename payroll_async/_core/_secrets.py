"""The secrets this process gave the SDK, kept out of what it stores or shows of outside text.

A handler's exception may quote anything it had in hand: the client's token, the router's
signing secret. Where the SDK keeps or shows such text (an inbox's ``last_error``), it
takes out every secret it was given: the tokens of the clients (a fixed one when the client
is made, a provider's as it hands them out), the routers' and ``verify``'s ``whsec_``
secrets, and those of the environment (``PAYROLL_TOKEN``, ``PAYROLL_WEBHOOK_SECRET``);
each of at least 8 characters (a shorter one would take words out of every error), as
written and as a URL writes it (percent-encoded, a space as ``+``).
"""

from __future__ import annotations

from . import _env
from ._redact import redact

__all__ = ["remember", "scrub"]

_KEEP = 64  # the latest secrets remembered (a provider's tokens come and go)
_SHORTEST = 8  # shorter is no real secret, and would take words out of every error
_known: dict[str, None] = {}  # an ordered set: the oldest go first


def remember(*secrets: str) -> None:
    """Keep ``secrets`` out of what the SDK stores or shows from now on."""
    for secret in secrets:
        if len(secret) < _SHORTEST or secret in _known:
            continue
        _known[secret] = None
        while len(_known) > _KEEP:
            del _known[next(iter(_known))]


def scrub(text: str, also: tuple[str, ...] = ()) -> str:
    """``text`` with every secret known (and ``also``) replaced by ``REDACTED``, longest first."""
    from_env = (_env.read(_env.TOKEN), _env.read(_env.WEBHOOK_SECRET))
    secrets = {*_known, *also, *(s for s in from_env if s and len(s) >= _SHORTEST)}
    # redact: also a URL's spelling of one (``%2F`` for "/", "+" for " ")
    return redact(text, *sorted(secrets, key=len, reverse=True))
