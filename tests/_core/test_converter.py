import datetime
import json
import uuid

import pytest
from hypothesis import given
from hypothesis import strategies as st

from payroll_async import (
    EmployerIdentifier,
    EventType,
    InvalidArgumentError,
    InviteSession,
    ListMeta,
    PayrollConnection,
    UpdateGroup,
    WebhookSubscription,
    from_dict,
    to_dict,
    to_json,
)
from payroll_async._core._converter import converter, parse_datetime, parse_uuid
from payroll_async.events import WebhookEvent
from tests import factories


def test_subscription_from_camel_case_with_unknown_fields_and_event_types() -> None:
    raw = factories.subscription(1, event_types=["PAYROLL_PROCESSED", "SOMETHING_NEW"])
    raw["addedLater"] = {"x": 1}
    sub = from_dict(WebhookSubscription, raw)
    assert sub.webhook_subscription_id == uuid.UUID(raw["webhookSubscriptionId"])
    assert sub.webhook_event_types == (EventType.PAYROLL_PROCESSED, "SOMETHING_NEW")
    assert type(sub.webhook_event_types[1]) is str
    assert sub.created_at == datetime.datetime(2024, 3, 4, 5, 6, 7, tzinfo=datetime.timezone.utc)
    assert sub.active is True


def test_round_trip_to_the_wire_shape() -> None:
    raw = factories.connection(3)
    conn = from_dict(PayrollConnection, raw)
    assert to_dict(conn) == raw


def test_meta_keeps_filters() -> None:
    raw = {
        "currentCount": 1,
        "filters": {"active": {"eq": "true"}},
        "limit": 20,
        "offset": 0,
        "sort": "createdAt",
        "totalCount": 1,
    }
    assert from_dict(ListMeta, raw).filters == {"active": {"eq": "true"}}


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("active", "false"),
        ("active", 1),
        ("path", None),
        ("createdAt", "2024-03-04T05:06:07"),
        ("webhookSubscriptionId", "not-a-uuid"),
        ("webhookEventTypes", "PAYROLL_PROCESSED"),
    ],
)
def test_wrong_types_are_rejected_not_coerced(field: str, value: object) -> None:
    raw = {**factories.subscription(1), field: value}
    with pytest.raises(Exception):  # noqa: B017,PT011 - wrapped by the caller into ResponseDecodeError
        converter.structure(raw, WebhookSubscription)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "2024-01-02T03:04:05Z",
            datetime.datetime(2024, 1, 2, 3, 4, 5, tzinfo=datetime.timezone.utc),
        ),
        (
            "2024-01-02T03:04:05.5+02:00",
            datetime.datetime(
                2024, 1, 2, 3, 4, 5, 500000, tzinfo=datetime.timezone(datetime.timedelta(hours=2))
            ),
        ),
        (
            "2024-01-02T03:04:05.123456789-05:30",
            datetime.datetime(
                2024,
                1,
                2,
                3,
                4,
                5,
                123456,
                tzinfo=datetime.timezone(-datetime.timedelta(hours=5, minutes=30)),
            ),
        ),
    ],
)
def test_timestamps_are_timezone_aware(text: str, expected: datetime.datetime) -> None:
    assert parse_datetime(text) == expected


OFFSETS = st.builds(
    datetime.timezone,
    st.timedeltas(
        min_value=datetime.timedelta(hours=-23, minutes=-59),
        max_value=datetime.timedelta(hours=23, minutes=59),
    ).map(lambda d: datetime.timedelta(minutes=d // datetime.timedelta(minutes=1))),
)


@given(st.datetimes(timezones=OFFSETS))
def test_any_aware_timestamp_round_trips(value: datetime.datetime) -> None:
    # The wire carries fixed offsets (Z or +hh:mm), so that is what is generated.
    parsed = parse_datetime(value.isoformat())
    assert parsed == value
    assert parsed.utcoffset() == value.utcoffset()


@given(st.datetimes())
def test_naive_timestamps_are_rejected(value: datetime.datetime) -> None:
    with pytest.raises(ValueError, match="time zone"):
        parse_datetime(value.isoformat())


@given(st.uuids())
def test_uuid_fast_path_equals_uuid_module(value: uuid.UUID) -> None:
    for text in (str(value), str(value).upper()):
        parsed = parse_uuid(text)
        assert parsed == value
        assert hash(parsed) == hash(value)
        assert parsed.version == value.version


@given(st.text(max_size=40))
def test_uuid_parser_accepts_only_the_canonical_form(text: str) -> None:
    try:
        expected = uuid.UUID(text)
    except ValueError:
        expected = None
    try:
        parsed = parse_uuid(text)
    except ValueError:
        parsed = None
    if parsed is not None:
        assert expected == parsed
        assert len(text) == 36


@pytest.mark.parametrize(
    "text",
    [
        "{12345678-1234-4234-8234-123456789abc}",
        "12345678123442348234123456789abc",
        "+2345678-1234-4234-8234-123456789abc",
        "1234_678-1234-4234-8234-123456789abc",
        "12345678-1234-4234-8234-123456789abg",
    ],
)
def test_uuid_parser_rejects_lookalikes(text: str) -> None:
    with pytest.raises(ValueError, match="UUID"):
        parse_uuid(text)


def test_to_dict_is_the_wire_shape_and_round_trips() -> None:
    raw = factories.subscription(2, event_types=["PAYROLL_PROCESSED", "NEW_KIND"])
    sub = from_dict(WebhookSubscription, raw)
    assert to_dict(sub) == raw
    assert from_dict(WebhookSubscription, to_dict(sub)) == sub
    with pytest.raises(TypeError, match="model"):
        to_dict({"id": 1})


def test_to_json_is_the_wire_json_and_round_trips() -> None:
    raw = factories.subscription(2, event_types=["PAYROLL_PROCESSED", "NEW_KIND"])
    sub = from_dict(WebhookSubscription, raw)
    text = to_json(sub)
    assert isinstance(text, str)
    assert json.loads(text) == raw
    assert " " not in text  # compact, as a JSONL export line
    assert from_dict(WebhookSubscription, json.loads(text)) == sub
    with pytest.raises(TypeError, match="model"):
        to_json({"id": 1})


@pytest.mark.parametrize(
    ("model", "raw"),
    [
        (PayrollConnection, factories.connection(3)),
        (WebhookSubscription, factories.subscription(4)),
        (EmployerIdentifier, factories.employer(5)),
        (UpdateGroup, factories.update_group(6)),
        (InviteSession, {"onboardingLink": "https://onboard.example.test/x"}),
    ],
)
def test_from_dict_is_the_inverse_of_to_dict(model: type[object], raw: dict[str, object]) -> None:
    value = from_dict(model, raw)
    assert isinstance(value, model)
    assert from_dict(model, to_dict(value)) == value


@pytest.mark.parametrize("data", [None, [], {"id": "not-a-uuid"}, "text"])
def test_from_dict_rejects_other_shapes_with_a_typed_error(data: object) -> None:
    with pytest.raises(InvalidArgumentError, match="not a PayrollConnection"):
        from_dict(PayrollConnection, data)


def test_from_dict_takes_only_model_classes() -> None:
    with pytest.raises(InvalidArgumentError, match="model class"):
        from_dict(dict, {})  # type: ignore[type-var]


def test_a_webhook_event_goes_through_the_converter_both_ways() -> None:
    body = {
        "eventId": "e-1",
        "eventType": "PAYROLL_PROCESSED",
        "occurredAt": "2024-05-01T10:00:00Z",
        "data": {"payrollId": "p1"},
        "extra": 1,
    }
    event = from_dict(WebhookEvent, body)
    assert event.event_type is EventType.PAYROLL_PROCESSED
    assert event.data == {"payrollId": "p1", "extra": 1}
    assert to_dict(event) == {
        "eventId": "e-1",
        "eventType": "PAYROLL_PROCESSED",
        "occurredAt": "2024-05-01T10:00:00Z",
        "data": {"payrollId": "p1", "extra": 1},
    }
    assert from_dict(WebhookEvent, to_dict(event)) == event
