"""``payroll-async invite-link``: a fresh onboarding link for an employer's invite."""

from __future__ import annotations

import datetime
import json

import click

from payroll_async import PayrollClient

from ._app import Settings, run
from ._console import visible
from ._demo import note_if_ephemeral
from ._errors import stderr

__all__ = ["invite_link"]


@click.command("invite-link")
@click.argument("employer_id")
@click.argument("invite_id")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_obj
def invite_link(settings: Settings, employer_id: str, invite_id: str, as_json: bool) -> None:
    """Generate a fresh onboarding link for an employer's invite (valid 30 minutes, single use)."""

    async def main(client: PayrollClient) -> str:
        session = await client.employer_identifiers.invites.create_session(employer_id, invite_id)
        return session.onboarding_link

    link = run(settings, main)
    expires = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(minutes=30)
    if as_json:
        click.echo(
            json.dumps({"onboardingLink": link, "expiresAt": expires.isoformat(timespec="seconds")})
        )
        note_if_ephemeral(settings.emulator)
        return
    click.echo(visible(link))  # the service wrote it: shown, never obeyed
    stderr.print(
        f"Valid for 30 minutes (until {expires:%H:%M} UTC) and for one use; "
        "open it in the employer's browser."
    )
    note_if_ephemeral(settings.emulator)
