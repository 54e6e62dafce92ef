"""The emulator's data: deterministic, derived from the seed on demand.

Item ``i`` of a collection is computed from ``(seed, i)`` when a page asks for it, so a
collection of a million payroll connections costs nothing to create and a page costs the
same whatever the collection's size. Items are numbered in creation order, so the default
sort (``createdAt``) and its reverse are plain index arithmetic; any other sort order is
computed once, on first use, and cached.

:meth:`Collection.churn` lays a mutable overlay on the seeded items, as a real database
changes under its users: new items get the next indices (so they are the newest), deleted
ones leave the listing (every later item moves up one offset, as in a database), and
updated ones carry their changed fields. Each page is computed from the overlay as it is
at that moment, so pagination stays as consistent as a real database's.

The JSON shapes here are written from the interface document, not from the SDK's models,
so that the emulator and the client cannot agree by accident.
"""

from __future__ import annotations

import bisect
import datetime
import hashlib
import random
from array import array
from collections.abc import Callable
from typing import Any

__all__ = ["Collection", "Dataset", "SortSpec", "derived_uuid", "uuid4_text"]

Updater = Callable[[dict[str, Any]], dict[str, Any]]
"""The fields an update changes, given the item as it is."""

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
# ASSUMED (operation group payroll-platforms, not shown): the platforms' names.
_PLATFORM_NAMES = (
    "Ledgerly",
    "PayPoint",
    "Wagewise",
    "Crewpay",
    "Stubhouse",
    "Salaria",
    "Tallyroll",
)


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
    """``size`` items, rendered on demand; sortable by the fields in ``keys``.

    ``churn`` changes it: ``count`` grows with inserts, ``_deleted`` (sorted indices) and
    ``_changed`` (index -> changed fields) are the overlay on the seeded items.
    """

    def __init__(
        self,
        size: int,
        render: Callable[[int], dict[str, Any]],
        keys: dict[str, Callable[[int], Any]],
        default_sort: str,
        id_field: str = "id",
    ) -> None:
        self.count: int = size
        self._render = render
        self.keys = keys
        self.default_sort = default_sort
        self.id_field = id_field
        self._orders: dict[SortSpec, array[int]] = {}
        self._deleted: list[int] = []
        self._shift: list[int] = []  # _deleted[j] - j: live offset -> index in O(log n)
        self._changed: dict[int, dict[str, Any]] = {}

    @property
    def size(self) -> int:
        """How many items exist now."""
        return self.count - len(self._deleted)

    def deleted_indices(self) -> set[int]:
        return set(self._deleted)

    def render(self, i: int) -> dict[str, Any]:
        item = self._render(i)
        changed = self._changed.get(i)
        if changed is not None:
            item.update(changed)
        return item

    def index_at(self, offset: int) -> int:
        """The index of the item at ``offset`` in creation order."""
        return offset + bisect.bisect_right(self._shift, offset)

    def page(self, offset: int, limit: int, sort: SortSpec) -> list[dict[str, Any]]:
        size = self.size
        stop = min(size, offset + limit)
        if offset >= stop:
            return []
        render = self.render
        if sort == ((self.default_sort, False),):
            if not self._deleted:
                return [render(i) for i in range(offset, stop)]
            return [render(self.index_at(k)) for k in range(offset, stop)]
        if sort == ((self.default_sort, True),):
            last = size - 1
            return [render(self.index_at(last - k)) for k in range(offset, stop)]
        order = self._order(sort)
        return [render(order[i]) for i in range(offset, stop)]

    def _order(self, sort: SortSpec) -> array[int]:
        order = self._orders.get(sort)
        if order is None:
            gone = set(self._deleted)
            indices: list[int] = [i for i in range(self.count) if i not in gone]
            for field, descending in reversed(sort):  # stable sorts, least significant first
                key = self.keys[field]
                if self._changed:  # an updated field sorts by its new value
                    key = self._current_key(field, key)
                indices.sort(key=key, reverse=descending)
            order = self._orders[sort] = array("I" if self.count < 2**32 else "Q", indices)
        return order

    def _current_key(self, field: str, key: Callable[[int], Any]) -> Callable[[int], Any]:
        changed = self._changed

        def current(i: int) -> Any:
            fields = changed.get(i)
            return fields[field] if fields is not None and field in fields else key(i)

        return current

    def churn(
        self, rng: random.Random, inserted: int, updated: int, deleted: int, update: Updater
    ) -> tuple[list[str], list[str], list[str]]:
        """Insert, update and delete that many items (picked by ``rng``); their ids."""
        live = self.size
        if updated + deleted > live:
            raise ValueError(
                f"cannot update {updated} and delete {deleted} of {live} items: too few"
            )
        picked = [self.index_at(k) for k in rng.sample(range(live), updated + deleted)]
        to_update, to_delete = picked[:updated], picked[updated:]
        updated_ids = []
        for i in to_update:
            fields = update(self.render(i))
            self._changed.setdefault(i, {}).update(fields)
            updated_ids.append(str(self.render(i)[self.id_field]))
        deleted_ids = [str(self.render(i)[self.id_field]) for i in to_delete]
        for i in to_delete:
            bisect.insort(self._deleted, i)
        self._shift = [d - j for j, d in enumerate(self._deleted)]
        first_new = self.count
        self.count += inserted
        inserted_ids = [str(self.render(i)[self.id_field]) for i in range(first_new, self.count)]
        self._orders.clear()
        return inserted_ids, updated_ids, deleted_ids


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
        self._groups: dict[int, Collection] = {}
        self._churns = 0
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

        self.payroll_platforms: Collection = Collection(
            _PLATFORMS,
            self.payroll_platform,
            {
                "createdAt": lambda k: k,
                "id": lambda k: derived_uuid(seed, "pp", k),
                "name": lambda k: _PLATFORM_NAMES[k],
            },
            "createdAt",
        )

    # -- churn ------------------------------------------------------------------------------

    def churn(
        self, collection: str, inserted: int, updated: int, deleted: int
    ) -> tuple[list[str], list[str], list[str]]:
        """Change one of the seeded collections; the ids inserted, updated and deleted.

        Which items change is drawn from the seed and the number of churns so far, so a
        test that churns the same way twice sees the same ids.
        """
        self._churns += 1
        rng = random.Random(f"{self.seed}:churn:{collection}:{self._churns}")
        if collection == "payroll-connections":

            def status(item: dict[str, Any]) -> dict[str, Any]:
                step = 1 + rng.randrange(len(STATUSES) - 1)  # always another status
                return {"status": STATUSES[(STATUSES.index(item["status"]) + step) % len(STATUSES)]}

            return self.payroll_connections.churn(rng, inserted, updated, deleted, status)
        if collection == "employer-identifiers":
            self._employer_index = None

            def rename(item: dict[str, Any]) -> dict[str, Any]:
                return {"displayName": f"{item['displayName']} (renamed {self._churns})"}

            # ``employers`` stays: connections keep the employers they were seeded with.
            return self.employer_identifiers.churn(rng, inserted, updated, deleted, rename)
        if collection == "update-groups":
            employers = self.employer_identifiers
            if employers.size == 0:
                raise ValueError("no employer identifiers to churn the update groups of")
            employer = employers.index_at(rng.randrange(employers.size))

            def errors(item: dict[str, Any]) -> dict[str, Any]:
                return {"errorCount": item["errorCount"] + 1}

            groups = self._groups.get(employer) or self._seeded_groups(employer)
            self._groups[employer] = groups
            return groups.churn(rng, inserted, updated, deleted, errors)
        raise ValueError(f"no collection {collection!r} to churn")

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

    # -- payroll platforms (ASSUMED: the document does not show this operation group) ----

    def payroll_platform(self, k: int) -> dict[str, Any]:
        """Platform ``k`` of seven, as ``GET /v1/payroll-platforms`` shows it."""
        return {
            "id": derived_uuid(self.seed, "pp", k),
            "name": _PLATFORM_NAMES[k],
            "createdAt": timestamp(k * 86_400 - 40_000_000),
        }

    def platform_index(self, platform_id: str) -> int | None:
        """The index of the platform with this id, or None."""
        for k in range(_PLATFORMS):
            if derived_uuid(self.seed, "pp", k) == platform_id:
                return k
        return None

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
            employers = self.employer_identifiers
            gone = employers.deleted_indices()
            self._employer_index = {
                self.employer_id(j): j for j in range(employers.count) if j not in gone
            }
        return self._employer_index.get(employer_id)

    # -- update groups ----------------------------------------------------------------------

    def update_groups(self, j: int) -> Collection:
        """Employer ``j``'s update groups (kept once churned, so that the overlay stays)."""
        groups = self._groups.get(j)
        return groups if groups is not None else self._seeded_groups(j)

    def _seeded_groups(self, j: int) -> Collection:
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
            id_field="updateGroupId",
        )

    # -- invites ------------------------------------------------------------------------------

    def invite_id(self, j: int) -> str:
        """The one onboarding invite seeded for employer ``j``."""
        return derived_uuid(self.seed, "inv", j)
