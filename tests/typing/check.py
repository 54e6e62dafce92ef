"""Run pyright (strict, type-ignore comments disabled) over each file here: scripts/check runs it.

Each line of operations.py and generic.py marked ``# type: ignore[...]`` must be an error,
and no other line may be one. mypy checks the same files through its configuration
(strict: an ignore that is not needed is an error too).
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

SNIPPETS = [Path(__file__).with_name(name) for name in ("operations.py", "generic.py")]


def main() -> int:
    return max(check(snippet) for snippet in SNIPPETS)


def check(snippet: Path) -> int:
    with tempfile.TemporaryDirectory() as tmp:
        config = Path(tmp, "pyrightconfig.json")
        config.write_text(
            json.dumps({"typeCheckingMode": "strict", "enableTypeIgnoreComments": False})
        )
        run = subprocess.run(
            ["pyright", "--outputjson", "-p", str(config), str(snippet)],
            capture_output=True,
            text=True,
            check=False,
        )
    report = json.loads(run.stdout)
    lines = snippet.read_text().splitlines()
    expected = {n + 1 for n, line in enumerate(lines) if "  # type: ignore[" in line}
    errors = [d for d in report["generalDiagnostics"] if d["severity"] == "error"]
    found = {d["range"]["start"]["line"] + 1 for d in errors}
    if found != expected:
        for d in errors:
            print(f"{snippet}:{d['range']['start']['line'] + 1}: {d['message']}")
        print(f"pyright: errors on lines {sorted(found)}, expected {sorted(expected)}")
        return 1
    print(f"pyright: the {len(expected)} expected errors of {snippet.name}, and no other")
    return 0


if __name__ == "__main__":
    sys.exit(main())
