"""The msgspec decode path gives exactly what the converter's path gives, or defers to it."""

from __future__ import annotations

import datetime
import json
import uuid
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from payroll_async import (
    EmployerIdentifier,
    InviteSession,
    PayrollClient,
    PayrollConnection,
    ResponseDecodeError,
    UpdateGroup,
    WebhookSubscription,
    to_dict,
)
from payroll_async._http._seam import Response
from payroll_async._paging import _decode
from payroll_async._paging._decode import PageDecoder, structure_body, structure_body_slow
from tests import factories
from tests.conftest import StartEmulator

pytest.importorskip("msgspec")

MODELS: list[type[Any]] = [
    PayrollConnection,
    WebhookSubscription,
    EmployerIdentifier,
    UpdateGroup,
]
SAMPLES = {
    PayrollConnection: factories.connection,
    WebhookSubscription: factories.subscription,
    EmployerIdentifier: factories.employer,
    UpdateGroup: factories.update_group,
}


def response(body: bytes) -> Response:
    return Response(method="GET", status=200, url="http://127.0.0.1/x", headers={}, body=body)


uuids = st.uuids().flatmap(
    lambda u: st.sampled_from(
        [str(u), str(u).upper(), u.hex, f"{{{u}}}", f"urn:uuid:{u}", str(u)[:-1], str(u) + " "]
    )
)
offsets = st.sampled_from(
    [datetime.timezone.utc, datetime.timezone(datetime.timedelta(hours=5, minutes=30))]
)
aware = st.datetimes(
    min_value=datetime.datetime(1, 1, 2),
    max_value=datetime.datetime(9999, 12, 30),
    timezones=st.one_of(offsets, offsets, st.timezones()),
)


@st.composite
def timestamps(draw: st.DrawFn) -> object:
    when = draw(st.one_of(aware, st.datetimes()))
    text = when.isoformat(sep=draw(st.sampled_from(["T", " ", "t"])))
    if draw(st.booleans()):
        text = text.replace("+00:00", draw(st.sampled_from(["Z", "z", "-00:00", "+0000"])))
    if draw(st.booleans()):
        digits = draw(st.sampled_from([1, 3, 6, 7, 9, 9]))
        fraction = draw(st.text("0123456789", min_size=digits, max_size=digits))
        end = 26 if text[19:20] == "." else 19
        text = text[:19] + "." + fraction + text[end:]
    return draw(st.one_of(st.just(text), st.just(text[:16] + text[19:]), st.just(when.year)))


# Where JSON libraries part ways: orjson reads integers past these as floats.
BOUNDS = [2**63 - 1, 2**63, 2**64 - 1, 2**64, -(2**63), -(2**63) - 1, 2**70]

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False),
    st.text(max_size=12),
)


def mutation(key: str, value: object) -> st.SearchStrategy[object]:
    """What a hostile or sloppy server might send instead of a field's value."""
    options: list[st.SearchStrategy[object]] = [scalars]
    if isinstance(value, str) and len(value) == 36:
        options += [uuids, uuids]
    if key in ("createdAt", "uploadDate"):
        options += [timestamps(), timestamps(), timestamps()]
    if isinstance(value, list):
        options.append(st.lists(st.one_of(st.text(max_size=8), scalars), max_size=3))
    if isinstance(value, int):
        options.append(st.integers(min_value=-(2**70), max_value=2**70))
        options.append(st.sampled_from(BOUNDS))
    return st.one_of(options)


@st.composite
def items(draw: st.DrawFn, model: type[Any], changes: int = 1) -> dict[str, Any]:
    """A valid item, with up to ``changes`` fields replaced, deleted or added."""
    raw: dict[str, Any] = SAMPLES[model](draw(st.integers(0, 10**6)))
    for _ in range(draw(st.integers(0, changes))):
        key = draw(st.sampled_from(sorted(raw)))
        action = draw(st.integers(0, 5))
        if action == 0:
            del raw[key]
        elif action == 1:
            raw[draw(st.text(max_size=6))] = draw(scalars)
        else:
            raw[key] = draw(mutation(key, raw[key]))
        if not raw:
            break
    return raw


@st.composite
def pages(draw: st.DrawFn) -> tuple[type[Any], bytes]:
    model = draw(st.sampled_from(MODELS))
    meta: dict[str, Any] = factories.envelope([], total=draw(st.integers(0, 10**6)))["meta"]
    if draw(st.integers(0, 4)) == 0:
        key = draw(st.sampled_from(list(meta)))
        meta[key] = draw(mutation(key, meta[key]))
    valid = draw(st.lists(items(model, changes=0), max_size=3))
    changed = draw(st.lists(items(model), max_size=1))
    data = valid[:1] + changed + valid[1:]
    body: Any = {"data": data, "meta": meta}
    if draw(st.integers(0, 19)) == 0:
        body = draw(st.one_of(scalars, st.lists(scalars)))
    text = json.dumps(body, ensure_ascii=draw(st.booleans()))
    return model, text.encode("utf-8", "surrogatepass")


def outcome(decode: Any, *args: Any) -> tuple[str, Any]:
    try:
        result = decode(*args)
    except ResponseDecodeError as exc:
        return "error", (str(exc), exc.body_excerpt, exc.status, exc.url, exc.method)
    return "ok", result


def as_data(value: Any) -> Any:
    if isinstance(value, tuple) and len(value) == 2 and isinstance(value[0], list):
        items, meta = value
        return [(type(i), to_dict(i)) for i in items], to_dict(meta)
    return (type(value), to_dict(value))


@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow])
@given(pages())
def test_both_paths_accept_and_reject_the_same_pages(page: tuple[type[Any], bytes]) -> None:
    model, body = page
    decoder = PageDecoder(model)
    assert decoder._fast is not None  # the fast path is on when msgspec is installed
    fast = outcome(decoder.decode, response(body))
    slow = outcome(decoder.decode_slow, response(body))
    assert fast[0] == slow[0]
    if fast[0] == "ok":
        assert fast[1] == slow[1]
        assert as_data(fast[1]) == as_data(slow[1])
    else:
        assert fast[1] == slow[1]


@settings(max_examples=200)
@given(st.sampled_from(MODELS).flatmap(lambda m: st.tuples(st.just(m), items(m))))
def test_both_paths_agree_on_single_bodies(case: tuple[type[Any], dict[str, Any]]) -> None:
    model, raw = case
    body = json.dumps(raw).encode()
    fast = outcome(structure_body, model, response(body))
    slow = outcome(structure_body_slow, model, response(body))
    assert fast[0] == slow[0]
    if fast[0] == "ok":
        assert as_data(fast[1]) == as_data(slow[1])
    assert fast[1] == slow[1]


def test_the_fast_path_builds_the_public_attrs_models() -> None:
    raw = factories.envelope([factories.connection(1), factories.connection(2)], total=2)
    items, meta = PageDecoder(PayrollConnection).decode(response(json.dumps(raw).encode()))
    assert [type(i) for i in items] == [PayrollConnection, PayrollConnection]
    assert isinstance(items[0].id, uuid.UUID)
    assert meta.total_count == 2
    invite = structure_body(InviteSession, response(b'{"onboardingLink": "https://x.test/a"}'))
    assert invite == InviteSession(onboarding_link="https://x.test/a")


def test_unknown_event_types_stay_strings_on_the_fast_path() -> None:
    raw = factories.envelope(
        [factories.subscription(1, event_types=["PAYROLL_PROCESSED", "SOMETHING_NEW"])]
    )
    items, _ = PageDecoder(WebhookSubscription).decode(response(json.dumps(raw).encode()))
    assert items[0].webhook_event_types == ("PAYROLL_PROCESSED", "SOMETHING_NEW")
    assert type(items[0].webhook_event_types[1]) is str


@settings(max_examples=500)
@given(
    st.sampled_from(MODELS).flatmap(
        lambda m: st.sampled_from(sorted(SAMPLES[m](0))).flatmap(
            lambda key: st.tuples(st.just(m), st.just(key), mutation(key, SAMPLES[m](0)[key]))
        )
    )
)
def test_both_paths_agree_field_by_field(case: tuple[type[Any], str, object]) -> None:
    model, key, value = case
    item = SAMPLES[model](1)
    item[key] = value
    body = json.dumps(factories.envelope([SAMPLES[model](2), item])).encode()
    decoder = PageDecoder(model)
    fast = outcome(decoder.decode, response(body))
    slow = outcome(decoder.decode_slow, response(body))
    assert fast[0] == slow[0]
    if fast[0] == "ok":
        assert as_data(fast[1]) == as_data(slow[1])
    assert fast[1] == slow[1]


@settings(max_examples=300)
@given(timestamps())
def test_both_paths_read_timestamps_alike(value: object) -> None:
    test_both_paths_agree_field_by_field.hypothesis.inner_test(  # type: ignore[attr-defined]
        (PayrollConnection, "createdAt", value)
    )


async def test_without_msgspec_the_converter_decodes_everything(
    monkeypatch: pytest.MonkeyPatch, start_emulator: StartEmulator
) -> None:
    monkeypatch.setattr(_decode, "_FAST", None)
    monkeypatch.setattr(_decode, "_fast_decoders", {})
    emu = await start_emulator(payroll_connections=250, seed=9)
    async with PayrollClient(emu.base_url, emu.token) as client:
        slow = [to_dict(c) async for c in client.payroll_connections.list(page_size=40)]
    monkeypatch.undo()
    async with PayrollClient(emu.base_url, emu.token) as client:
        fast = [to_dict(c) async for c in client.payroll_connections.list(page_size=40)]
    assert len(slow) == 250
    assert slow == fast
