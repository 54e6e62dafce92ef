"""The mirror's errors: database failures, typed, with the URL's credentials never in them."""

from __future__ import annotations

from .._core._exceptions import InvalidArgumentError, PayrollError

__all__ = ["MirrorBusyError", "MirrorError", "MirrorURLError"]


class MirrorError(PayrollError):
    """The mirror's database failed: cannot connect, a statement failed, a newer schema.

    The message never carries a credential of the database URL (its password, or a secret
    of its query such as ``?password=``: shown as ``***``); the driver's exception is not
    chained (its text, with the credentials removed, is in the message).
    """


class MirrorURLError(MirrorError, InvalidArgumentError):
    """``into`` is not a database URL the mirror can write to (bad input).

    An `InvalidArgumentError` too, as all bad input is: raised before any request.
    """


class MirrorBusyError(MirrorError):
    """Another run mirrors this collection into this database now (``wait=False``)."""
