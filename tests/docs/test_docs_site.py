"""The check CI runs on the built documentation site (scripts/check_docs_html.py; .ci/run
builds the site and runs it)."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "check_docs_html.py"


def load_checker() -> ModuleType:
    spec = importlib.util.spec_from_file_location("check_docs_html", SCRIPT)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def reference_page(tmp_path: Path, body: str) -> Path:
    page = tmp_path / "site" / "reference" / "models" / "index.html"
    page.parent.mkdir(parents=True)
    page.write_text(f"<html><body>{body}</body></html>")
    return page


DOCUMENTED = """
<div class="doc doc-object doc-class">
  <h2 id="payroll_async.Page" class="doc doc-heading">Page</h2>
  <div class="doc doc-contents">
    <p>One page of a listing.</p>
    <div class="doc doc-children">
      <div class="doc doc-object doc-attribute">
        <h3 id="payroll_async.Page.items" class="doc doc-heading">items</h3>
        <div class="doc-signature"><pre><code>items: list[T]</code></pre></div>
        <div class="doc doc-contents">{member}</div>
      </div>
    </div>
  </div>
</div>
"""


def test_a_documented_page_passes(tmp_path: Path) -> None:
    page = reference_page(tmp_path, DOCUMENTED.format(member="<p>The items.</p>"))
    assert load_checker().check_page(page, reference=True) == []


def test_a_member_with_nothing_to_say_fails(tmp_path: Path) -> None:
    # Its parent's docstring does not count for it, nor does its signature.
    page = reference_page(tmp_path, DOCUMENTED.format(member=""))
    [problem] = load_checker().check_page(page, reference=True)
    assert "payroll_async.Page.items has an empty section" in problem


def test_a_raw_sphinx_role_fails(tmp_path: Path) -> None:
    body = DOCUMENTED.format(member="<p>See :class:`~payroll_async.Page`.</p>")
    [problem] = load_checker().check_page(reference_page(tmp_path, body), reference=True)
    assert "raw Sphinx role" in problem


def test_an_unfenced_example_fails(tmp_path: Path) -> None:
    body = DOCUMENTED.format(member="<blockquote><p>&gt;&gt;&gt; page.items</p></blockquote>")
    [problem] = load_checker().check_page(reference_page(tmp_path, body), reference=True)
    assert "blockquote" in problem


def test_a_reference_page_without_objects_fails(tmp_path: Path) -> None:
    [problem] = load_checker().check_page(reference_page(tmp_path, "<p>soon</p>"), reference=True)
    assert "documents nothing" in problem
