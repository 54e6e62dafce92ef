"""The README's commands are the ones CI and users run."""

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()
TEST_COMMAND = "python3 -m pip install -e '.[test]' && python3 -m pytest"


def test_readme_gives_the_test_command_and_ci_runs_it() -> None:
    assert TEST_COMMAND in README
    ci = (ROOT / ".ci" / "run").read_text()
    assert "python3 -m pytest\n" in ci
    assert "scripts/check" in ci
    assert '"$status" -eq 5' in ci  # no tests collected fails the run
