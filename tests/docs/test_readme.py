"""The README's commands are the ones CI and users run."""

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()
TEST_COMMAND = "python3 -m pip install -e '.[test]' && python3 -m pytest"


def test_readme_gives_the_test_command_and_ci_runs_it() -> None:
    assert TEST_COMMAND in README
    ci = (ROOT / ".ci" / "run").read_text()
    assert "python3 -m pytest\n" in ci
    assert "scripts/check" in ci
    assert '"$status" -eq 5' in ci  # no tests collected fails the run


MAIN_JOB = (
    "python3 -m pip install -e '.[cli]' && "
    "payroll-async --emulator export payroll-connections -o connections.jsonl"
)


def test_readme_gives_the_main_job_command() -> None:
    assert MAIN_JOB in README


def test_ci_checks_the_documentation_site() -> None:
    ci = (ROOT / ".ci" / "run").read_text()
    assert "mkdocs build --strict" in ci
    assert "scripts/check_docs_html.py" in ci
    config = (ROOT / "mkdocs.yml").read_text()
    assert "anchors: warn" in config  # strict then fails on a link to a missing anchor
