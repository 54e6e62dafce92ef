"""``payroll-async webhooks list|create|delete|replace``: manage webhook subscriptions."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, TypeVar

import click
import rich.box
from rich.table import Table

from payroll_async import PayrollClient, WebhookSubscription, to_dict
from payroll_async.models import EVENT_TYPES

from ._app import LazyGroup, Settings, run, stdout
from ._console import visible
from ._demo import note_if_ephemeral
from ._errors import stderr

__all__ = ["EVENT_CHOICE", "webhooks"]

F = TypeVar("F", bound=Callable[..., Any])


@click.group(cls=LazyGroup, lazy={"listen": "payroll_async.cli._listen:listen"})
def webhooks() -> None:
    """List, create, delete and replace webhook subscriptions."""


def _event_types(values: tuple[str, ...]) -> list[str]:
    return list(values)


class _EventTypeChoice(click.Choice[str]):
    """Event types as the service spells them, and only so: the SDK (``webhooks.create``,
    ``EventRouter.on``) refuses another case too, so a command line is a program's, too."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, str) and value not in self.choices and value.upper() in self.choices:
            self.fail(
                f"{value!r}: event types are upper case, as the service spells them "
                f"({value.upper()})",
                param,
                ctx,
            )
        return super().convert(value, param, ctx)


EVENT_CHOICE = _EventTypeChoice(list(EVENT_TYPES))


def _print_subscriptions(subs: list[WebhookSubscription], as_json: bool) -> None:
    if as_json:
        click.echo(json.dumps([to_dict(s) for s in subs], indent=2))
        return
    # Fit the terminal: the ID is never cut (it is copied into other commands); below
    # 120 columns the creation time goes, below 100 the table is drawn without borders.
    width = stdout.width
    table = Table(box=None if width < 100 else rich.box.HEAVY_HEAD, pad_edge=width >= 100)
    table.add_column("ID", no_wrap=True, min_width=36)
    table.add_column("Event types", overflow="fold")
    table.add_column("Path", overflow="fold", min_width=12)
    table.add_column("Active", no_wrap=True)
    show_created = width >= 120
    if show_created:
        table.add_column("Created", no_wrap=True)
    for sub in subs:
        row = [
            str(sub.webhook_subscription_id),
            "\n".join(visible(t) for t in sub.webhook_event_types),
            visible(sub.path),
            "yes" if sub.active else "no",
        ]
        if show_created:
            row.append(sub.created_at.strftime("%Y-%m-%d %H:%M %Z"))
        table.add_row(*row)
    stdout.print(table)


def _print_subscription(sub: WebhookSubscription, as_json: bool) -> None:
    if as_json:
        click.echo(json.dumps(to_dict(sub), indent=2))
    else:
        _print_subscriptions([sub], as_json=False)


def subscription_options(command: F) -> F:
    """--event (repeatable), --path and --json, shared by create and replace."""
    command = click.option(
        "--json", "as_json", is_flag=True, help="Print JSON instead of a table."
    )(command)
    command = click.option(
        "--path", required=True, metavar="URL", help="The https URL notifications go to."
    )(command)
    return click.option(
        "--event",
        "events",
        multiple=True,
        required=True,
        type=EVENT_CHOICE,
        help="An event type to subscribe to (repeat for several).",
    )(command)


@webhooks.command("list")
@click.option("--active", is_flag=True, help="Only active subscriptions.")
@click.option("--inactive", is_flag=True, help="Only inactive subscriptions.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
@click.pass_obj
def webhooks_list(settings: Settings, active: bool, inactive: bool, as_json: bool) -> None:
    """List webhook subscriptions."""
    if active and inactive:
        raise click.UsageError("--active and --inactive exclude each other")
    only: bool | None = True if active else False if inactive else None

    async def main(client: PayrollClient) -> list[WebhookSubscription]:
        return await client.webhooks.list(active=only).collect()

    _print_subscriptions(run(settings, main), as_json)


@webhooks.command("create")
@subscription_options
@click.pass_obj
def webhooks_create(settings: Settings, events: tuple[str, ...], path: str, as_json: bool) -> None:
    """Subscribe a URL to event types."""

    async def main(client: PayrollClient) -> WebhookSubscription:
        return await client.webhooks.create(event_types=_event_types(events), path=path)

    _print_subscription(run(settings, main), as_json)
    note_if_ephemeral(settings.emulator)


@webhooks.command("delete")
@click.argument("subscription_id")
@click.pass_obj
def webhooks_delete(settings: Settings, subscription_id: str) -> None:
    """Delete a subscription (to change one, use replace: it leaves no gap)."""

    async def main(client: PayrollClient) -> None:
        await client.webhooks.delete(subscription_id)

    run(settings, main)
    stderr.print(f"Deleted webhook subscription {subscription_id}")
    note_if_ephemeral(settings.emulator)


@webhooks.command("replace")
@click.argument("subscription_id")
@subscription_options
@click.pass_obj
def webhooks_replace(
    settings: Settings, subscription_id: str, events: tuple[str, ...], path: str, as_json: bool
) -> None:
    """Replace a subscription without a gap: create the new one, then delete the old."""

    async def main(client: PayrollClient) -> WebhookSubscription:
        return await client.webhooks.replace(
            subscription_id, event_types=_event_types(events), path=path
        )

    _print_subscription(run(settings, main), as_json)
    note_if_ephemeral(settings.emulator)
