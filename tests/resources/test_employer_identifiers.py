import uuid

import pytest
from aioresponses import aioresponses

from payroll_async import InvalidArgumentError, InviteSession, PayrollClient, ResponseDecodeError
from tests import factories
from tests.conftest import BASE
from tests.resources.helpers import calls, only_call

EMPLOYERS = f"{BASE}/v1/employer-identifiers"


async def test_list_employer_identifiers(mock_api: aioresponses, client: PayrollClient) -> None:
    mock_api.get(
        f"{EMPLOYERS}?sort=displayName&limit=10&offset=0",
        payload=factories.envelope([factories.employer(1), factories.employer(2)], limit=10),
    )
    employers = await client.employer_identifiers.list(sort="display_name", page_size=10).collect()
    assert [e.display_name for e in employers] == ["Employer 1", "Employer 2"]
    assert employers[0].created_at.utcoffset() is not None


async def test_list_update_groups(mock_api: aioresponses, client: PayrollClient) -> None:
    eid = factories.uid(7, 2)
    mock_api.get(
        f"{EMPLOYERS}/{eid}/update-groups?limit=100&offset=0",
        payload=factories.envelope([factories.update_group(3)]),
    )
    groups = await client.employer_identifiers.update_groups.list(uuid.UUID(eid)).collect()
    assert groups[0].error_count == 3
    assert groups[0].update_group_id == uuid.UUID(factories.uid(3, 4))


def test_update_groups_refuse_a_bad_employer_id(
    mock_api: aioresponses, client: PayrollClient
) -> None:
    with pytest.raises(InvalidArgumentError, match="employer_identifier_id"):
        client.employer_identifiers.update_groups.list("../payroll-connections")
    assert calls(mock_api) == []


async def test_create_invite_session(mock_api: aioresponses, client: PayrollClient) -> None:
    eid, iid = factories.uid(1, 2), factories.uid(2, 8)
    link = "https://onboard.example.test/start?token=abc"
    mock_api.post(
        f"{EMPLOYERS}/{eid}/invites/{iid}/session", status=200, payload={"onboardingLink": link}
    )
    session = await client.employer_identifiers.invites.create_session(eid, iid)
    assert session == InviteSession(onboarding_link=link)
    method, _, kwargs = only_call(mock_api)
    assert method == "POST"
    assert kwargs["data"] is None
    assert "Content-Type" not in kwargs["headers"]


async def test_invite_session_with_an_unexpected_body(
    mock_api: aioresponses, client: PayrollClient
) -> None:
    eid, iid = factories.uid(1, 2), factories.uid(2, 8)
    mock_api.post(f"{EMPLOYERS}/{eid}/invites/{iid}/session", status=201, payload={"link": "x"})
    with pytest.raises(ResponseDecodeError, match="not a InviteSession") as info:
        await client.employer_identifiers.invites.create_session(eid, iid)
    assert info.value.status == 201
    assert '"link"' in info.value.body_excerpt


@pytest.mark.parametrize(
    ("eid", "iid", "name"),
    [("x", factories.uid(1), "employer_identifier_id"), (factories.uid(1), "1/../2", "invite_id")],
)
async def test_invite_session_validates_ids(
    mock_api: aioresponses, client: PayrollClient, eid: str, iid: str, name: str
) -> None:
    with pytest.raises(InvalidArgumentError, match=name):
        await client.employer_identifiers.invites.create_session(eid, iid)
    assert calls(mock_api) == []
