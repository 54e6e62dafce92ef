"""Employer identifiers, their update groups, and onboarding invite sessions."""

from __future__ import annotations

from typing import Final

from .._core import _validation as check
from .._core._types import IdLike, SortLike
from .._http._options import CallOptions, ListOptions, Unpack
from .._paging._pagination import AsyncPaginator
from ..models import EmployerIdentifier, InviteSession, UpdateGroup
from ._base import BoundClient, RawView, Resource, operation, raw

__all__ = ["EmployerIdentifiers", "Invites", "InvitesWithRawResponse", "UpdateGroups"]

_PATH = "/v1/employer-identifiers"


class UpdateGroups(Resource):
    """``client.employer_identifiers.update_groups``: bulk deduction/loan update groups."""

    _name = "employer_identifiers.update_groups"

    def list(
        self,
        employer_identifier_id: IdLike,
        *,
        sort: SortLike | None = None,
        **options: Unpack[ListOptions],
    ) -> AsyncPaginator[UpdateGroup]:
        """The update groups of one employer.

        ```pycon
        >>> groups = client.employer_identifiers.update_groups.list(employer_id)
        >>> async for group in groups:
        ...     print(group.update_group_id, group.upload_date, group.error_count)
        ```
        """
        eid = check.check_id(employer_identifier_id, "employer_identifier_id")
        return self._paginate(f"{_PATH}/{eid}/update-groups", UpdateGroup, options, sort=sort)


class Invites(Resource):
    """``client.employer_identifiers.invites``: employer onboarding invites."""

    _name = "employer_identifiers.invites"

    @property
    def with_raw_response(self) -> InvitesWithRawResponse:
        """``create_session``, returning a RawResponse (status, headers, request id)."""
        return InvitesWithRawResponse(self)

    @operation
    async def create_session(
        self, employer_identifier_id: IdLike, invite_id: IdLike, **options: Unpack[CallOptions]
    ) -> InviteSession:
        """A fresh onboarding link for an existing invite: valid 30 minutes, single use.

        ```pycon
        >>> invites = client.employer_identifiers.invites
        >>> session = await invites.create_session(eid, invite_id)
        >>> session.onboarding_link
        'https://...'
        ```
        """
        eid = check.check_id(employer_identifier_id, "employer_identifier_id")
        iid = check.check_id(invite_id, "invite_id")
        return await self._send_for(
            InviteSession,
            "POST",
            f"{_PATH}/{eid}/invites/{iid}/session",
            self._options("create_session", options),
        )


class InvitesWithRawResponse(RawView[Invites]):
    """``client.employer_identifiers.invites.with_raw_response``."""

    create_session: Final = raw(Invites.create_session)


class EmployerIdentifiers(Resource):
    """``client.employer_identifiers``, with ``.update_groups`` and ``.invites``."""

    _name = "employer_identifiers"

    def __init__(self, binding: BoundClient) -> None:
        super().__init__(binding)
        self.update_groups: UpdateGroups = UpdateGroups(binding)
        """The update groups of an employer."""
        self.invites: Invites = Invites(binding)
        """Onboarding invites: a fresh onboarding link for an invite."""

    def list(
        self, *, sort: SortLike | None = None, **options: Unpack[ListOptions]
    ) -> AsyncPaginator[EmployerIdentifier]:
        """Every employer identifier.

        ```pycon
        >>> async for employer in client.employer_identifiers.list():
        ...     print(employer.id, employer.display_name, employer.identifier)
        ```
        """
        return self._paginate(_PATH, EmployerIdentifier, options, sort=sort)
