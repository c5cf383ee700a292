"""The README stays short and readable, every link in the docs leads somewhere, and docs/results has an index of
pages named by topic."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
RESULTS = DOCS / "results"


def _pages() -> list[Path]:
    return [ROOT / "README.md", *sorted(p for p in DOCS.rglob("*.md") if "cases" not in p.relative_to(DOCS).parts)]


def _prose(text: str) -> str:
    """The text outside fenced code blocks."""
    return re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)


def _anchor(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation but hyphens and underscores dropped, spaces as hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    return {_anchor(h) for h in re.findall(r"^#+ (.*)$", _prose(page.read_text()), re.M)}


def test_the_readme_is_short_and_its_prose_fits_120_columns():
    text = (ROOT / "README.md").read_text()
    assert len(text.encode()) < 10_000
    long = [line for line in _prose(text).splitlines() if len(line) > 120 and "](" not in line and "://" not in line]
    assert not long, long


def test_every_relative_link_in_the_docs_leads_to_a_file_and_heading():
    broken = []
    for page in _pages():
        for target in re.findall(r"\]\(([^)\s]+)\)", _prose(page.read_text())):
            if re.match(r"[a-z]+:", target):
                continue
            path, _, anchor = target.partition("#")
            dest = (page.parent / path).resolve() if path else page
            if not dest.exists() or (anchor and dest.is_file() and anchor not in _anchors(dest)):
                broken.append(f"{page.relative_to(ROOT)}: {target}")
    assert not broken, broken


def test_the_docs_name_results_pages_that_exist():
    named = {m for page in _pages() for m in re.findall(r"docs/results/[\w.-]+\.md", page.read_text())}
    for path in [ROOT / "layoutfuzz-known.toml", *ROOT.glob("*/*.py"), *ROOT.glob("*/*/*.py")]:
        if ".venv" not in path.parts:
            named |= set(re.findall(r"docs/results/[\w.-]+\.md", path.read_text()))
    assert not [n for n in named if not (ROOT / n).is_file()]


def test_the_readme_links_each_reference_page_and_the_docs_index_lists_them_all():
    readme = (ROOT / "README.md").read_text()
    index = (DOCS / "README.md").read_text()
    for page in sorted(DOCS.glob("*.md")):
        if page.name != "README.md":
            assert f"(docs/{page.name}" in readme, page.name
            assert f"({page.name})" in index, page.name


def test_results_pages_are_named_by_topic_and_indexed():
    index = (RESULTS / "README.md").read_text()
    for page in sorted(RESULTS.glob("*.md")):
        assert not re.match(r"\d{4}-\d{2}-\d{2}", page.name), f"{page.name}: name a results page by its topic"
        assert "session-end" not in page.name
        if page.name != "README.md":
            assert f"]({page.name})" in index, f"{page.name} is missing from docs/results/README.md"


def test_the_docs_cite_no_tracker_numbers():
    cited = []
    for page in _pages():
        for line in page.read_text().splitlines():
            stripped = re.sub(r"\]\([^)]*\)|https?://\S+", "", line)
            if re.search(r"\b[Ii]ssues? \d+|(?<![\w/])#\d{2,}", stripped):
                cited.append(f"{page.relative_to(ROOT)}: {line.strip()[:80]}")
    assert not cited, cited
