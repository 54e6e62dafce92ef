"""JSON the service sends, built for tests."""

from __future__ import annotations

import uuid
from typing import Any


def uid(i: int, salt: int = 0) -> str:
    return str(uuid.UUID(int=(salt << 64) | i, version=4))


def connection(i: int) -> dict[str, Any]:
    return {
        "id": uid(i, 1),
        "employerIdentifierId": uid(i % 7, 2),
        "payrollPlatformId": uid(i % 3, 3),
        "createdAt": f"2024-01-01T00:00:{i % 60:02d}Z",
        "status": "active",
        "product": "deductions",
    }


def employer(i: int) -> dict[str, Any]:
    return {
        "id": uid(i, 2),
        "displayName": f"Employer {i}",
        "identifier": f"EIN-{i:06d}",
        "createdAt": "2023-05-06T07:08:09+02:00",
    }


def update_group(i: int) -> dict[str, Any]:
    return {"updateGroupId": uid(i, 4), "uploadDate": "2024-02-03T04:05:06Z", "errorCount": i}


def subscription(
    i: int,
    *,
    path: str = "https://hooks.example.test/in",
    active: bool = True,
    event_types: list[str] | None = None,
) -> dict[str, Any]:
    return {
        "webhookSubscriptionId": uid(i, 5),
        "webhookEventTypes": event_types or ["PAYROLL_PROCESSED"],
        "path": path,
        "createdAt": "2024-03-04T05:06:07Z",
        "active": active,
    }


def envelope(
    items: list[dict[str, Any]],
    *,
    offset: int = 0,
    limit: int = 100,
    total: int | None = None,
    sort: str = "createdAt",
) -> dict[str, Any]:
    return {
        "data": items,
        "meta": {
            "currentCount": len(items),
            "filters": {},
            "limit": limit,
            "offset": offset,
            "sort": sort,
            "totalCount": len(items) if total is None else total,
        },
    }


def error_body(message: str, *errors: str) -> dict[str, Any]:
    return {"message": message, "errors": list(errors)}
