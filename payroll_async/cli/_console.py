"""The command's consoles: rich output in which text from outside is only ever text.

A subscription path, an event type, an error message: the service (or a sender) writes
them, so they are shown literally. Markup is off (``[link=...]`` in a path is not a
hidden hyperlink, ``[/]`` in a message does not crash the command), emoji codes are off,
and every string rich renders has its control characters escaped, so no ESC, BEL, bare CR
or OSC sequence reaches the terminal. Styling the command's own words is done with
``rich.text.Text`` objects, never by putting outside text into markup.
"""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.text import Text

from payroll_async._core._visible import visible

__all__ = ["SafeConsole", "visible"]


class SafeConsole(Console):
    """A rich Console that renders every string literally, with control codes escaped."""

    def __init__(self, **options: Any) -> None:
        options.setdefault("markup", False)
        options.setdefault("emoji", False)
        options.setdefault("highlight", False)
        super().__init__(**options)

    def render_str(self, text: str, **options: Any) -> Text:
        # Every str that rich renders (print, table cells, columns) passes here; only the
        # command's own line breaks survive.
        return super().render_str(visible(text, keep="\n"), **options)
