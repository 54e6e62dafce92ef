"""schemathesis checks the emulator against the project's OpenAPI document.

schemathesis sends its requests synchronously (requests), so the emulator runs on an event
loop in a thread of its own for the module.
"""

from __future__ import annotations

from collections.abc import Iterator
from importlib.resources import files

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.checks import (
    content_type_conformance,
    not_a_server_error,
    response_schema_conformance,
)

from payroll_async.emulator import Emulator
from payroll_async.testing import EmulatorThread

OPENAPI = files("payroll_async.emulator").joinpath("openapi.yaml")
schema = schemathesis.openapi.from_path(str(OPENAPI))


@pytest.fixture(scope="module")
def live() -> Iterator[Emulator]:
    with EmulatorThread(seed=9, payroll_connections=500, employer_identifiers=5) as emulator:
        yield emulator


def test_the_document_describes_every_operation() -> None:
    labels = {result.ok().label for result in schema.get_all_operations()}
    assert labels == {
        "GET /v1/webhooks/subscriptions",
        "POST /v1/webhooks/subscriptions",
        "DELETE /v1/webhooks/subscriptions/{subscription_id}",
        "POST /v1/employer-identifiers/{employer_identifier}/invites/{invite}/session",
        "GET /v1/employer-identifiers/{employer_identifier}/update-groups",
        "GET /v1/payroll-connections",
        "GET /v1/employer-identifiers",
        "GET /v1/payroll-platforms",
        "GET /v1/payroll-platforms/{payroll_platform}",
    }


@schema.parametrize()
@settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck))
def test_emulator_conforms_to_the_document(case: schemathesis.Case, live: Emulator) -> None:
    case.call_and_validate(
        base_url=live.base_url,
        headers={"Authorization": f"Bearer {live.token}"},
        checks=[not_a_server_error, response_schema_conformance, content_type_conformance],
    )
