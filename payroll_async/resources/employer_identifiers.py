"""Employer identifiers, their update groups, and onboarding invite sessions."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .. import _validation as check
from .._pagination import AsyncPaginator
from .._retry import RetryPolicy
from .._types import NOT_GIVEN, IdLike, NotGiven, SortLike, TimeoutLike
from ..models import EmployerIdentifier, InviteSession, UpdateGroup
from ._base import Binding, Resource, operation, request_options

__all__ = ["EmployerIdentifiers", "Invites", "UpdateGroups"]

_PATH = "/v1/employer-identifiers"


class UpdateGroups(Resource):
    """``client.employer_identifiers.update_groups``: bulk deduction/loan update groups."""

    _name = "employer_identifiers.update_groups"

    def list(
        self,
        employer_identifier_id: IdLike,
        *,
        sort: SortLike | None = None,
        page_size: int | NotGiven | None = NOT_GIVEN,
        max_items: int | None = None,
        start_offset: int = 0,
        concurrency: int | NotGiven | None = NOT_GIVEN,
        timeout: TimeoutLike | NotGiven = NOT_GIVEN,
        retry: RetryPolicy | NotGiven | None = NOT_GIVEN,
        extra_query: Mapping[str, Any] | None = None,
        extra_headers: Mapping[str, str] | None = None,
    ) -> AsyncPaginator[UpdateGroup]:
        """The update groups of one employer.

        ```pycon
        >>> groups = client.employer_identifiers.update_groups.list(employer_id)
        >>> async for group in groups:
        ...     print(group.update_group_id, group.upload_date, group.error_count)
        ```
        """
        eid = check.check_id(employer_identifier_id, "employer_identifier_id")
        return self._paginate(
            f"{_PATH}/{eid}/update-groups",
            UpdateGroup,
            sort=sort,
            page_size=page_size,
            max_items=max_items,
            start_offset=start_offset,
            concurrency=concurrency,
            options=request_options(timeout, retry, extra_query, extra_headers),
        )


class Invites(Resource):
    """``client.employer_identifiers.invites``: employer onboarding invites."""

    _name = "employer_identifiers.invites"

    @operation("employer_identifiers.invites.create_session")
    async def create_session(
        self,
        employer_identifier_id: IdLike,
        invite_id: IdLike,
        *,
        timeout: TimeoutLike | NotGiven = NOT_GIVEN,
        retry: RetryPolicy | NotGiven | None = NOT_GIVEN,
        extra_query: Mapping[str, Any] | None = None,
        extra_headers: Mapping[str, str] | None = None,
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
            options=request_options(timeout, retry, extra_query, extra_headers),
        )


class EmployerIdentifiers(Resource):
    """``client.employer_identifiers``, with ``.update_groups`` and ``.invites``."""

    _name = "employer_identifiers"

    def __init__(self, binding: Binding) -> None:
        super().__init__(binding)
        self.update_groups: UpdateGroups = UpdateGroups(binding)
        """The update groups of an employer."""
        self.invites: Invites = Invites(binding)
        """Onboarding invites: a fresh onboarding link for an invite."""

    def list(
        self,
        *,
        sort: SortLike | None = None,
        page_size: int | NotGiven | None = NOT_GIVEN,
        max_items: int | None = None,
        start_offset: int = 0,
        concurrency: int | NotGiven | None = NOT_GIVEN,
        timeout: TimeoutLike | NotGiven = NOT_GIVEN,
        retry: RetryPolicy | NotGiven | None = NOT_GIVEN,
        extra_query: Mapping[str, Any] | None = None,
        extra_headers: Mapping[str, str] | None = None,
    ) -> AsyncPaginator[EmployerIdentifier]:
        """Every employer identifier.

        ```pycon
        >>> async for employer in client.employer_identifiers.list():
        ...     print(employer.id, employer.display_name, employer.identifier)
        ```
        """
        return self._paginate(
            _PATH,
            EmployerIdentifier,
            sort=sort,
            page_size=page_size,
            max_items=max_items,
            start_offset=start_offset,
            concurrency=concurrency,
            options=request_options(timeout, retry, extra_query, extra_headers),
        )
