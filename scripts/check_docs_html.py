#!/usr/bin/env python3
"""Check the built documentation site for what a strict mkdocs build lets through.

Usage: ``scripts/check_docs_html.py SITE_DIR`` (after ``mkdocs build --site-dir SITE_DIR``).
Fails (exit 1, one line per problem) when:

- an object of the API reference (class, function, method, attribute) has nothing to say:
  no docstring in its section (an attribute with a type but no sentence counts as empty);
- a page shows a raw Sphinx role (``:class:`X```, ``:meth:`...```), which Markdown renders
  as literal text;
- a reference page holds a blockquote, which is what an unfenced ``>>>`` example becomes;
- a reference page (other than the reference's index) documents no object at all.
"""

from __future__ import annotations

import re
import sys
from html import unescape
from html.parser import HTMLParser
from pathlib import Path

SPHINX_ROLE = re.compile(r":(?:py:)?(?:class|meth|func|attr|exc|data|mod|obj|ref|const):`")


class _Object:
    def __init__(self, depth: int) -> None:
        self.depth = depth  # the div depth of its doc-object div
        self.id = ""
        self.text: list[str] = []


class ReferencePage(HTMLParser):
    """The documented objects of one page and what each one's own section says."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.depth = 0
        self.objects: list[_Object] = []
        self._open: list[_Object] = []
        self._contents: list[int] = []  # depths of open doc-contents divs
        self._children: list[int] = []  # depths of open doc-children divs
        self._heading = False
        self.blockquotes = 0
        self.text: list[str] = []
        self._code = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        classes = (dict(attrs).get("class") or "").split()
        if tag == "blockquote":
            self.blockquotes += 1
        if tag in ("code", "pre"):
            self._code += 1
        if tag == "div":
            self.depth += 1
            if "doc-object" in classes:
                obj = _Object(self.depth)
                self.objects.append(obj)
                self._open.append(obj)
            elif "doc-contents" in classes:
                self._contents.append(self.depth)
            elif "doc-children" in classes:
                self._children.append(self.depth)
        elif tag in ("h2", "h3", "h4", "h5", "h6") and self._open and not self._open[-1].id:
            self._open[-1].id = dict(attrs).get("id") or ""
            self._heading = True

    def handle_endtag(self, tag: str) -> None:
        if tag in ("code", "pre"):
            self._code -= 1
        if tag.startswith("h") and tag[1:].isdigit():
            self._heading = False
        if tag != "div":
            return
        if self._open and self._open[-1].depth == self.depth:
            self._open.pop()
        if self._contents and self._contents[-1] == self.depth:
            self._contents.pop()
        if self._children and self._children[-1] == self.depth:
            self._children.pop()
        self.depth -= 1

    def handle_data(self, data: str) -> None:
        if not self._code:
            self.text.append(data)
        if not self._open or not self._contents or self._heading:
            return
        obj = self._open[-1]
        # Text in the object's own contents, not in a nested member's.
        inside_own = self._contents[-1] > obj.depth and not any(
            obj.depth < c < self._contents[-1] for c in self._children
        )
        if inside_own:
            obj.text.append(data)


def check_page(path: Path, *, reference: bool) -> list[str]:
    html = path.read_text(encoding="utf-8")
    page = ReferencePage()
    page.feed(html)
    problems = []
    prose = unescape("".join(page.text))
    for match in SPHINX_ROLE.finditer(prose):
        start = max(0, match.start() - 30)
        problems.append(f"{path}: raw Sphinx role: ...{prose[start : match.end() + 30]!r}")
    if reference:
        if not page.objects and path.parent.name != "reference":  # its index is prose
            problems.append(f"{path}: a reference page that documents nothing")
        if page.blockquotes:
            problems.append(f"{path}: {page.blockquotes} blockquote(s) (an unfenced example?)")
        for obj in page.objects:
            if not "".join(obj.text).strip():
                problems.append(f"{path}: {obj.id or '(an object)'} has an empty section")
    return problems


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    site = Path(argv[1])
    pages = sorted(site.rglob("*.html"))
    if not any("reference" in p.parts for p in pages):
        print(f"{site}: no reference pages: build the site first", file=sys.stderr)
        return 1
    problems = []
    for page in pages:
        if page.name == "404.html":
            continue
        problems += check_page(page, reference="reference" in page.relative_to(site).parts)
    for problem in problems:
        print(problem)
    checked = sum("reference" in p.parts for p in pages)
    print(f"{len(pages)} pages checked ({checked} of the reference): {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
