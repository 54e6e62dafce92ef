import datetime
import uuid

from aioresponses import aioresponses

from payroll_async import PayrollClient, PayrollConnection
from tests import factories
from tests.conftest import BASE

CONNECTIONS = f"{BASE}/v1/payroll-connections"


async def test_list_payroll_connections(mock_api: aioresponses, client: PayrollClient) -> None:
    mock_api.get(
        f"{CONNECTIONS}?sort=-createdAt,status&limit=2&offset=0",
        payload=factories.envelope([factories.connection(0), factories.connection(1)], limit=2),
    )
    conns = await client.payroll_connections.list(
        sort=["-created_at", "status"], page_size=2
    ).collect()
    assert conns[0] == PayrollConnection(
        id=uuid.UUID(factories.uid(0, 1)),
        employer_identifier_id=uuid.UUID(factories.uid(0, 2)),
        payroll_platform_id=uuid.UUID(factories.uid(0, 3)),
        created_at=datetime.datetime(2024, 1, 1, tzinfo=datetime.timezone.utc),
        status="active",
        product="deductions",
    )
    assert len(conns) == 2
