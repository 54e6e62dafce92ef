import re
import uuid

import pytest
from aioresponses import aioresponses

from payroll_async import (
    EventType,
    InvalidArgumentError,
    NotFoundError,
    PayrollClient,
    PermissionDeniedError,
    ReplaceIncompleteError,
    WebhookSubscription,
)
from tests import factories
from tests.conftest import SUBS, TOKEN
from tests.resources.helpers import body_of, calls, only_call

NEW_PATH = "https://hooks.example.test/new"


async def test_list_sends_filter_sort_and_page_size(
    mock_api: aioresponses, client: PayrollClient
) -> None:
    mock_api.get(
        f"{SUBS}?filter[active][eq]=true&sort=-createdAt&limit=50&offset=0",
        payload=factories.envelope([factories.subscription(1)], limit=50),
    )
    subs = await client.webhooks.list(active=True, sort="-created_at", page_size=50).collect()
    assert [s.webhook_subscription_id for s in subs] == [uuid.UUID(factories.uid(1, 5))]
    _method, _url, kwargs = only_call(mock_api)
    assert kwargs["headers"]["Authorization"] == f"Bearer {TOKEN}"
    assert kwargs["headers"]["Accept"] == "application/json"


async def test_list_defaults_to_the_services_maximum_page(
    mock_api: aioresponses, client: PayrollClient
) -> None:
    mock_api.get(f"{SUBS}?limit=100&offset=0", payload=factories.envelope([]))
    assert await client.webhooks.list().collect() == []


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"page_size": 101}, "page_size"),
        ({"sort": "path"}, "cannot sort"),
        ({"active": "yes"}, "active"),
        ({"sort": "a,b,c,d"}, "1 to 3"),
    ],
)
def test_list_validates_before_sending(
    mock_api: aioresponses, client: PayrollClient, kwargs: dict[str, object], match: str
) -> None:
    with pytest.raises(InvalidArgumentError, match=match):
        client.webhooks.list(**kwargs)  # type: ignore[arg-type]
    assert calls(mock_api) == []


async def test_create_posts_the_documented_body(
    mock_api: aioresponses, client: PayrollClient
) -> None:
    created = factories.subscription(
        9, path=NEW_PATH, event_types=["PAYROLL_PROCESSED", "EMPLOYEE_CENSUS_HIRED"]
    )
    mock_api.post(SUBS, status=201, payload=created)
    sub = await client.webhooks.create(
        event_types=[EventType.PAYROLL_PROCESSED, "EMPLOYEE_CENSUS_HIRED"], path=NEW_PATH
    )
    assert isinstance(sub, WebhookSubscription)
    assert sub.path == NEW_PATH
    method, _url, kwargs = only_call(mock_api)
    assert method == "POST"
    assert body_of(kwargs) == {
        "event_types": ["PAYROLL_PROCESSED", "EMPLOYEE_CENSUS_HIRED"],
        "path": NEW_PATH,
    }
    assert kwargs["headers"]["Content-Type"] == "application/json"


async def test_create_with_an_empty_body_finds_the_new_subscription(
    mock_api: aioresponses, client: PayrollClient
) -> None:
    mock_api.post(SUBS, status=201, body=b"")
    older = factories.subscription(1, path=NEW_PATH, event_types=["UPDATE_GROUP_PROCESSED"])
    new = factories.subscription(2, path=NEW_PATH)
    mock_api.get(
        f"{SUBS}?sort=-createdAt&limit=100&offset=0", payload=factories.envelope([older, new])
    )
    sub = await client.webhooks.create(event_types=["PAYROLL_PROCESSED"], path=NEW_PATH)
    assert str(sub.webhook_subscription_id) == new["webhookSubscriptionId"]


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"event_types": [], "path": NEW_PATH}, "at least one"),
        ({"event_types": ["PAYROLL_DONE"], "path": NEW_PATH}, "unknown event type"),
        ({"event_types": ["PAYROLL_PROCESSED"], "path": "http://hooks.example.test/x"}, "https"),
        ({"event_types": ["PAYROLL_PROCESSED"], "path": "not a url"}, "path"),
    ],
)
async def test_create_validates_before_sending(
    mock_api: aioresponses, client: PayrollClient, kwargs: dict[str, object], match: str
) -> None:
    with pytest.raises(InvalidArgumentError, match=match):
        await client.webhooks.create(**kwargs)  # type: ignore[arg-type]
    assert calls(mock_api) == []


async def test_delete(mock_api: aioresponses, client: PayrollClient) -> None:
    sid = factories.uid(3, 5)
    mock_api.delete(f"{SUBS}/{sid}", status=204, body=b"")
    assert await client.webhooks.delete(uuid.UUID(sid)) is None
    method, url, _ = only_call(mock_api)
    assert (method, str(url)) == ("DELETE", f"{SUBS}/{sid}")


@pytest.mark.parametrize("bad", ["../../employer-identifiers", "x/y", "%2e%2e", "?", "#"])
async def test_delete_never_puts_a_non_uuid_in_the_path(
    mock_api: aioresponses, client: PayrollClient, bad: str
) -> None:
    with pytest.raises(InvalidArgumentError):
        await client.webhooks.delete(bad)
    assert calls(mock_api) == []


LISTING = f"{SUBS}?limit=100&offset=0"


async def test_replace_looks_up_creates_first_then_deletes(
    mock_api: aioresponses, client: PayrollClient
) -> None:
    old = factories.uid(1, 5)
    mock_api.get(LISTING, payload=factories.envelope([factories.subscription(1)]))
    mock_api.post(SUBS, status=201, payload=factories.subscription(2, path=NEW_PATH))
    mock_api.delete(f"{SUBS}/{old}", status=204)
    new = await client.webhooks.replace(old, event_types=["PAYROLL_PROCESSED"], path=NEW_PATH)
    assert str(new.webhook_subscription_id) == factories.uid(2, 5)
    assert [m for m, _, _ in calls(mock_api)] == ["GET", "POST", "DELETE"]


async def test_replace_of_a_missing_subscription_creates_nothing(
    mock_api: aioresponses, client: PayrollClient
) -> None:
    mock_api.get(LISTING, payload=factories.envelope([factories.subscription(7)]))
    with pytest.raises(NotFoundError, match="nothing was created") as caught:
        await client.webhooks.replace(
            factories.uid(1, 5), event_types=["PAYROLL_PROCESSED"], path=NEW_PATH
        )
    assert [m for m, _, _ in calls(mock_api)] == ["GET"]
    # The listing answered 200: no request answered 404, so none is named as if it had.
    assert str(caught.value) == (
        f"webhook subscription {factories.uid(1, 5)} does not exist; nothing was created"
    )
    assert (caught.value.method, caught.value.url) == ("", "")


async def test_replace_takes_a_404_on_the_delete_as_already_deleted(
    mock_api: aioresponses, client: PayrollClient
) -> None:
    old = factories.uid(1, 5)
    mock_api.get(LISTING, payload=factories.envelope([factories.subscription(1)]))
    mock_api.post(SUBS, status=201, payload=factories.subscription(2, path=NEW_PATH))
    mock_api.delete(
        f"{SUBS}/{old}", status=404, payload=factories.error_body("no such subscription")
    )
    new = await client.webhooks.replace(old, event_types=["PAYROLL_PROCESSED"], path=NEW_PATH)
    assert str(new.webhook_subscription_id) == factories.uid(2, 5)


async def test_replace_reports_the_new_subscription_when_the_delete_fails(
    mock_api: aioresponses, client: PayrollClient
) -> None:
    old = factories.uid(1, 5)
    mock_api.get(LISTING, payload=factories.envelope([factories.subscription(1)]))
    mock_api.post(SUBS, status=201, payload=factories.subscription(2, path=NEW_PATH))
    mock_api.delete(f"{SUBS}/{old}", status=403, payload=factories.error_body("no role"))
    with pytest.raises(ReplaceIncompleteError) as info:
        await client.webhooks.replace(old, event_types=["PAYROLL_PROCESSED"], path=NEW_PATH)
    assert str(info.value.new_subscription.webhook_subscription_id) == factories.uid(2, 5)
    assert info.value.old_subscription_id == old
    assert isinstance(info.value.__cause__, PermissionDeniedError)


async def test_replace_validates_everything_before_creating(
    mock_api: aioresponses, client: PayrollClient
) -> None:
    with pytest.raises(InvalidArgumentError):
        await client.webhooks.replace("nope", event_types=["PAYROLL_PROCESSED"], path=NEW_PATH)
    with pytest.raises(InvalidArgumentError):
        await client.webhooks.replace(
            factories.uid(1),
            event_types=["PAYROLL_PROCESSED"],
            path=NEW_PATH,
            extra_headers={"Authorization": "x"},
        )
    assert calls(mock_api) == []


async def test_ensure_returns_the_existing_subscription(
    mock_api: aioresponses, client: PayrollClient
) -> None:
    types = ["PAYROLL_PROCESSED", "EMPLOYEE_CENSUS_HIRED"]
    same = factories.subscription(4, path=NEW_PATH, event_types=list(reversed(types)))
    other = factories.subscription(5, path=NEW_PATH, event_types=["PAYROLL_PROCESSED"])
    mock_api.get(
        f"{SUBS}?filter[active][eq]=true&limit=100&offset=0",
        payload=factories.envelope([other, same]),
    )
    sub = await client.webhooks.ensure(event_types=types, path=NEW_PATH)
    assert str(sub.webhook_subscription_id) == same["webhookSubscriptionId"]
    assert [m for m, _, _ in calls(mock_api)] == ["GET"]


async def test_ensure_creates_when_missing(mock_api: aioresponses, client: PayrollClient) -> None:
    inactive = factories.subscription(4, path=NEW_PATH, active=False)
    mock_api.get(
        f"{SUBS}?filter[active][eq]=true&limit=100&offset=0", payload=factories.envelope([inactive])
    )
    mock_api.post(SUBS, status=201, payload=factories.subscription(6, path=NEW_PATH))
    sub = await client.webhooks.ensure(event_types=["PAYROLL_PROCESSED"], path=NEW_PATH)
    assert str(sub.webhook_subscription_id) == factories.uid(6, 5)


async def test_extra_query_and_headers_reach_the_wire(
    mock_api: aioresponses, client: PayrollClient
) -> None:
    sid = factories.uid(3, 5)
    mock_api.delete(re.compile(rf"{re.escape(SUBS)}/{sid}\?dry_run=true"), status=204)
    await client.webhooks.delete(
        sid, extra_query={"dry_run": True}, extra_headers={"X-Request-Id": "r1"}
    )
    _, url, kwargs = only_call(mock_api)
    assert url.query["dry_run"] == "true"
    assert kwargs["headers"]["X-Request-Id"] == "r1"
