"""The emulator's data: deterministic, derived from the seed on demand.

Item ``i`` of a collection is computed from ``(seed, i)`` when a page asks for it, so a
collection of a million payroll connections costs nothing to create and a page costs the
same whatever the collection's size. Items are numbered in creation order, so the default
sort (``createdAt``) and its reverse are plain index arithmetic; any other sort order is
computed once, on first use, and cached.

The JSON shapes here are written from the interface document, not from the SDK's models,
so that the emulator and the client cannot agree by accident.
"""

from __future__ import annotations

import datetime
import hashlib
from array import array
from collections.abc import Callable
from typing import Any

__all__ = ["Collection", "Dataset", "SortSpec", "derived_uuid", "uuid4_text"]

SortSpec = tuple[tuple[str, bool], ...]
"""(field, descending) pairs, most significant first."""

EPOCH = datetime.datetime(2024, 1, 1, tzinfo=datetime.timezone.utc)
# ASSUMED: the allowed values of a payroll connection's status and product are not shown.
STATUSES = ("active", "pending", "disconnected", "error")
PRODUCTS = ("deductions", "loans", "earned_wage_access")
_COMPANIES = (
    "Acme",
    "Globex",
    "Initech",
    "Umbrella",
    "Hooli",
    "Vandelay",
    "Stark",
    "Wayne",
    "Wonka",
    "Cyberdyne",
    "Soylent",
    "Tyrell",
    "Gringotts",
    "Oceanic",
    "Duff",
)
_SUFFIXES = ("Inc.", "LLC", "Corp.", "Group", "Holdings", "& Co.")
_PLATFORMS = 7


def uuid4_text(hexdigits: str) -> str:
    """32 hex digits as a version-4 UUID string (version and variant bits set)."""
    h = hexdigits
    variant = "89ab"[int(h[16], 16) & 3]
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-{variant}{h[17:20]}-{h[20:32]}"


def derived_uuid(seed: int, kind: str, index: int) -> str:
    """A version-4 UUID string fixed by (seed, kind, index)."""
    return uuid4_text(
        hashlib.blake2b(f"{seed}:{kind}:{index}".encode(), digest_size=16).hexdigest()
    )


def timestamp(seconds: int) -> str:
    return (EPOCH + datetime.timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%SZ")


class Collection:
    """``size`` items, rendered on demand; sortable by the fields in ``keys``."""

    def __init__(
        self,
        size: int,
        render: Callable[[int], dict[str, Any]],
        keys: dict[str, Callable[[int], Any]],
        default_sort: str,
    ) -> None:
        self.size = size
        self.render = render
        self.keys = keys
        self.default_sort = default_sort
        self._orders: dict[SortSpec, array[int]] = {}

    def page(self, offset: int, limit: int, sort: SortSpec) -> list[dict[str, Any]]:
        stop = min(self.size, offset + limit)
        if offset >= stop:
            return []
        render = self.render
        if sort == ((self.default_sort, False),):
            return [render(i) for i in range(offset, stop)]
        if sort == ((self.default_sort, True),):
            last = self.size - 1
            return [render(last - i) for i in range(offset, stop)]
        order = self._order(sort)
        return [render(order[i]) for i in range(offset, stop)]

    def _order(self, sort: SortSpec) -> array[int]:
        order = self._orders.get(sort)
        if order is None:
            indices: list[int] = list(range(self.size))
            for field, descending in reversed(sort):  # stable sorts, least significant first
                indices.sort(key=self.keys[field], reverse=descending)
            order = self._orders[sort] = array("I" if self.size < 2**32 else "Q", indices)
        return order


class Dataset:
    """Every collection of the emulator, for one seed and set of sizes."""

    def __init__(
        self,
        *,
        seed: int,
        payroll_connections: int,
        employer_identifiers: int,
        update_groups: int,
    ) -> None:
        self.seed = seed
        self.employers = employer_identifiers
        self.groups_per_employer = update_groups
        self._employer_index: dict[str, int] | None = None
        self.payroll_connections: Collection = Collection(
            payroll_connections,
            self.payroll_connection,
            {
                "createdAt": lambda i: i,
                "id": lambda i: derived_uuid(seed, "pc", i),
                "status": lambda i: STATUSES[(i * 7 + seed) % len(STATUSES)],
                "product": lambda i: PRODUCTS[(i * 3 + seed) % len(PRODUCTS)],
                "employerIdentifierId": lambda i: self.employer_id(i % max(1, self.employers)),
                "payrollPlatformId": lambda i: derived_uuid(seed, "pp", i % _PLATFORMS),
            },
            "createdAt",
        )
        self.employer_identifiers: Collection = Collection(
            employer_identifiers,
            self.employer,
            {
                "createdAt": lambda j: j,
                "id": self.employer_id,
                "displayName": lambda j: self.employer(j)["displayName"],
                "identifier": lambda j: self.employer(j)["identifier"],
            },
            "createdAt",
        )

    # -- payroll connections ------------------------------------------------------------

    def payroll_connection(self, i: int) -> dict[str, Any]:
        seed = self.seed
        return {
            "id": derived_uuid(seed, "pc", i),
            "employerIdentifierId": self.employer_id(i % max(1, self.employers)),
            "payrollPlatformId": derived_uuid(seed, "pp", i % _PLATFORMS),
            "createdAt": timestamp(i * 37),
            "status": STATUSES[(i * 7 + seed) % len(STATUSES)],
            "product": PRODUCTS[(i * 3 + seed) % len(PRODUCTS)],
        }

    # -- employer identifiers -------------------------------------------------------------

    def employer_id(self, j: int) -> str:
        return derived_uuid(self.seed, "ei", j)

    def employer(self, j: int) -> dict[str, Any]:
        n = (j * 2654435761 + self.seed) % 10**9
        company = _COMPANIES[n % len(_COMPANIES)]
        suffix = _SUFFIXES[(n // 7) % len(_SUFFIXES)]
        return {
            "id": self.employer_id(j),
            "displayName": f"{company} {suffix} #{j}",
            "identifier": f"{n % 90 + 10:02d}-{n % 9_000_000 + 1_000_000:07d}",
            "createdAt": timestamp(j * 3_600 - 10_000_000),
        }

    def employer_index(self, employer_id: str) -> int | None:
        if self._employer_index is None:
            self._employer_index = {self.employer_id(j): j for j in range(self.employers)}
        return self._employer_index.get(employer_id)

    # -- update groups ----------------------------------------------------------------------

    def update_groups(self, j: int) -> Collection:
        seed = self.seed

        def render(k: int) -> dict[str, Any]:
            n = (j * 31 + k * 17 + seed) % 101
            return {
                "updateGroupId": derived_uuid(seed, f"ug{j}", k),
                "uploadDate": timestamp(j * 600 + k * 86_400),
                "errorCount": n % 13 if n % 4 == 0 else 0,
            }

        return Collection(
            self.groups_per_employer,
            render,
            {
                "uploadDate": lambda k: k,
                "updateGroupId": lambda k: render(k)["updateGroupId"],
                "errorCount": lambda k: render(k)["errorCount"],
            },
            "uploadDate",
        )

    # -- invites ------------------------------------------------------------------------------

    def invite_id(self, j: int) -> str:
        """The one onboarding invite seeded for employer ``j``."""
        return derived_uuid(self.seed, "inv", j)
