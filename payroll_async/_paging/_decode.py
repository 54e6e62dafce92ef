"""The one place where response bytes become models: a single object, or a page of a listing.

Both paths raise ``ResponseDecodeError`` (with the status, URL, method and an excerpt
of the body) for a body that is not JSON or not of the model's shape.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final, Generic, Protocol, TypeVar

import attrs

from .._core._converter import converter, structure_hook, to_dict
from .._core._exceptions import InvalidArgumentError, ResponseDecodeError
from .._core._json import dumps, loads
from .._core._redact import redact, shown_url
from .._http._seam import Response
from .._http._status import excerpt, request_id
from ..models import ListMeta

__all__ = [
    "CASTS",
    "Decodes",
    "PageDecoder",
    "RawPageDecoder",
    "cast_body",
    "check_cast",
    "decode_error",
    "fast_decoder",
    "structure_body",
]

T = TypeVar("T")

_structure_meta = structure_hook(ListMeta)

try:
    from . import _fastdecode as _FAST
except ImportError:  # pragma: no cover - exercised when msgspec is not installed
    _FAST = None  # type: ignore[assignment]
_fast_decoders: dict[type[Any], Any] = {}


def decode_error(message: str, response: Response) -> ResponseDecodeError:
    """The error for a 2xx body that is not what was expected, with an excerpt of it.

    A token that the body echoes is redacted, in the excerpt and in the message.
    """
    return ResponseDecodeError(
        redact(message, response.secret),
        status=response.status,
        url=shown_url(response.url, response.secret),
        body_excerpt=excerpt(response.body, response.secret),
        method=response.method,
        request_id=request_id(response.headers),
    )


def _json(response: Response) -> Any:
    try:
        return loads(response.body)
    except ValueError as exc:
        reason = str(exc)
    # Raised outside the except block: the parser's exception, which may quote the body,
    # is neither the cause nor the context.
    raise decode_error(f"response is not valid JSON ({reason})", response)


def structure_body(model: type[T], response: Response) -> T:
    """The body of a single-object response as ``model``."""
    fast = fast_decoder(model)
    if fast is not None:
        result: T | None = fast.decode_body(response.body)
        if result is not None:
            return result
    return structure_body_slow(model, response)


def structure_body_slow(model: type[T], response: Response) -> T:
    """The converter's path of ``structure_body()``, the definition of both."""
    data = _json(response)
    try:
        return converter.structure(data, model)
    except Exception as exc:
        reason = f"{type(exc).__name__}: {exc}"
    raise decode_error(f"response is not a {model.__name__} ({reason})", response)


CASTS: Final = (dict, list, str, bytes, None)
"""What ``cast_to`` takes besides an attrs class."""


def check_cast(cast_to: object, name: str = "cast_to") -> Any:
    """``cast_to`` if a generic call can give it (InvalidArgumentError before any request)."""
    if any(cast_to is cast for cast in CASTS) or (isinstance(cast_to, type) and attrs.has(cast_to)):
        return cast_to
    raise InvalidArgumentError(
        f"{name} must be an attrs class, dict, list, str, bytes or None, got {cast_to!r}"
    )


def cast_body(cast_to: Any, response: Response) -> Any:
    """The body of a generic call's 2xx as ``cast_to`` (checked by ``check_cast``).

    None ignores the body; bytes are the body as read; str is the body decoded by its
    charset (UTF-8 when none is given); dict and list are its JSON, which must be an object
    or an array; an attrs class is structured as every model is.
    """
    if cast_to is None:
        return None
    if cast_to is bytes:
        return response.body
    if cast_to is str:
        return _text(response)
    if cast_to is dict or cast_to is list:
        data = _json(response)
        if type(data) is not cast_to:
            raise decode_error(
                f"response is not a JSON {'object' if cast_to is dict else 'array'} "
                f"(got {type(data).__name__})",
                response,
            )
        return data
    return structure_body(cast_to, response)


def _text(response: Response) -> str:
    charset = "utf-8"
    content_type = response.headers.get("Content-Type", "")
    for part in content_type.split(";")[1:]:
        key, _, value = part.strip().partition("=")
        if key.lower() == "charset" and value:
            charset = value.strip('"')
    try:
        return response.body.decode(charset)
    except (LookupError, ValueError) as exc:  # ValueError: any UnicodeError (undefined, punycode)
        reason = f"{type(exc).__name__}: {str(exc)[:100]}"
    raise decode_error(f"response is not text in {charset[:40]!r} ({reason})", response)


def _plain_dict(data: Any, model: Any) -> dict[str, Any]:
    """An item of a listing of ``dict``: a JSON object as it came (no conversion)."""
    if type(data) is not dict:
        raise TypeError(f"an item is a {type(data).__name__}, not an object")
    return data


def fast_decoder(model: type[Any]) -> Any:
    """The msgspec decoder of ``model`` when msgspec is installed (else None), made once."""
    if _FAST is None:
        return None
    decoder = _fast_decoders.get(model)
    if decoder is None and model not in _fast_decoders:
        decoder = _fast_decoders[model] = (
            _FAST.FastDecoder(model) if _FAST.FastDecoder.supports(model) else None
        )
    return decoder


class Decodes(Protocol):
    """What ``AsyncPaginator.with_decoder`` takes: ``decode(response) -> (items, meta)``,
    the page's items in whatever form the caller wants them (the export: each item's
    bytes; the mirror: ids and bytes), refusing a page that is not a listing's with a
    ``ResponseDecodeError`` as `PageDecoder` does."""

    def decode(self, response: Response) -> tuple[Any, ListMeta]:
        """The page's items and its ``meta``."""


class PageDecoder(Generic[T]):
    """Pages of one listing's ``model``: ``decode(response) -> (items, meta)``.

    With msgspec installed, a page goes through its decoder first; the converter decodes
    what it declines (and so gives every error). The generated cattrs function is looked
    up once per listing and called directly for every item of every page.
    """

    def __init__(self, model: type[T]) -> None:
        self._model = model
        self._structure: Callable[[Any, type[T]], T] | None = (
            _plain_dict if model is dict else None  # type: ignore[assignment]
        )
        """The converter's function, generated when the converter first decodes a page
        (with msgspec, most listings never need it)."""
        self._fast = fast_decoder(model)

    def decode(self, response: Response) -> tuple[list[T], ListMeta]:
        if self._fast is not None:
            result: tuple[list[T], ListMeta] | None = self._fast.decode_page(response.body)
            if result is not None:
                return result
        return self.decode_slow(response)

    def decode_slow(self, response: Response) -> tuple[list[T], ListMeta]:
        """The converter's path, the definition of both."""
        data = _json(response)
        structure, model = self._structure, self._model
        if structure is None:
            structure = self._structure = structure_hook(model)
        try:
            raw_items = data["data"]
            if type(raw_items) is not list:
                raise TypeError(f"'data' is a {type(raw_items).__name__}, not a list")
            meta = _structure_meta(data["meta"], ListMeta)
            items = [structure(raw, model) for raw in raw_items]
        except Exception as exc:
            reason = f"{type(exc).__name__}: {exc}"
        else:
            return items, meta
        raise decode_error(f"list response is not of the expected shape ({reason})", response)


class RawPageDecoder(Generic[T]):
    """Pages of one listing as each item's JSON bytes, as the service sent them.

    The items are checked against ``model`` exactly as ``PageDecoder`` checks them
    (same errors), but no model is kept: an export writes the bytes it read. With msgspec,
    the check builds no model either; without it, the items are models encoded again.
    """

    def __init__(self, model: type[T]) -> None:
        self._models = PageDecoder(model)
        self._fast = fast_decoder(model)
        self._plain = model is dict  # a listing of dict (get_api_list): items as they came

    def decode(self, response: Response) -> tuple[list[Any], ListMeta]:
        fast = self._fast
        if fast is not None:
            result: tuple[list[Any], ListMeta] | None = fast.decode_raw_page(response.body)
            if result is not None:
                return result
        items, meta = self._models.decode_slow(response)  # the errors, as for models
        raw = None if fast is None else fast.raw_items(response.body)
        if raw is None or len(raw) != len(items):
            encode = dumps if self._plain else lambda item: dumps(to_dict(item))
            raw = [encode(item) for item in items]
        return raw, meta
