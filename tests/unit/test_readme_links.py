"""Every relative link and anchor in README.md and docs/*.md resolves (issue 17, item 6).

Links inside code (fenced blocks, inline code spans) are examples, not links, and are skipped; so
are absolute URLs (``https:``, ``mailto:``). A link's file must exist relative to the page; its
anchor must be a heading of the target page, spelled as GitHub spells heading anchors, or an
explicit ``<a name=…>``/``id=…``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import ROOT

_FENCE = re.compile(r"^(```|~~~).*?^\1[^\n]*$", re.MULTILINE | re.DOTALL)
_CODE_SPAN = re.compile(r"(`+)(?:(?!\1).)+?\1", re.DOTALL)
_INLINE = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
_REFERENCE = re.compile(r"^ {0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+.*)?$", re.MULTILINE)
_HEADING = re.compile(r"^ {0,3}#{1,6}\s+(.+?)\s*#*\s*$", re.MULTILINE)
_EXPLICIT = re.compile(r"<a\s+(?:name|id)=\"([^\"]+)\"|\sid=\"([^\"]+)\"")
_SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")


def pages() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def unfenced(text: str) -> str:
    """The page without its fenced code blocks (blank lines in their place: line numbers are kept)."""
    return _FENCE.sub(lambda m: "\n" * m.group().count("\n"), text)


def prose(text: str) -> str:
    """The page without code: fenced blocks and code spans become blanks."""
    return _CODE_SPAN.sub(lambda m: " " * len(m.group()), unfenced(text))


def links(text: str) -> Iterator[tuple[int, str]]:
    """(line, target) of every inline and reference-style link in the page's prose."""
    body = prose(text)
    for pattern in (_INLINE, _REFERENCE):
        for found in pattern.finditer(body):
            yield body.count("\n", 0, found.start()) + 1, found.group(1)


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: formatting and punctuation dropped, lower case, spaces to '-'."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link in a heading keeps its text
    text = re.sub(r"<[^>]+>", "", text).replace("`", "")
    return re.sub(r"[^\w\- ]", "", text.lower()).replace(" ", "-")


def anchors(text: str) -> set[str]:
    """Every anchor a page offers: its headings (repeats numbered as GitHub does) and explicit ones."""
    found: set[str] = set()
    seen: dict[str, int] = {}
    for heading in _HEADING.findall(unfenced(text)):
        base = slug(heading)
        count = seen.get(base, 0)
        seen[base] = count + 1
        found.add(base if count == 0 else f"{base}-{count}")
    found.update(a or b for a, b in _EXPLICIT.findall(text))
    return found


def broken_links(page: Path) -> list[str]:
    """``page:line: target (why)`` for each relative link of ``page`` that does not resolve."""
    problems = []
    text = page.read_text(encoding="utf-8")
    for line, target in links(text):
        if _SCHEME.match(target):
            continue  # an absolute URL: not checked offline
        path_part, _, anchor = target.partition("#")
        resolved = (page.parent / path_part).resolve() if path_part else page
        where = (
            f"{page.relative_to(page.parent.parent if page.parent.name == 'docs' else page.parent)}:{line}"
        )
        if not resolved.exists():
            problems.append(f"{where}: {target} (no such file)")
        elif (
            anchor
            and resolved.suffix == ".md"
            and anchor not in anchors(resolved.read_text(encoding="utf-8"))
        ):
            problems.append(f"{where}: {target} (no heading with anchor #{anchor} in {resolved.name})")
    return problems


@pytest.mark.parametrize("page", pages(), ids=lambda p: p.name)
def test_every_relative_link_and_anchor_resolves(page: Path) -> None:
    assert broken_links(page) == []


def test_the_checker_finds_a_missing_file_and_a_missing_anchor(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "other.md").write_text("# Other page\n\n## Bounds & limits (`max_bytes`)\n")
    page = tmp_path / "README.md"
    page.write_text(
        "# Title\n\n[ok](docs/other.md#bounds--limits-max_bytes) [self](#title)\n"
        "[gone](docs/gone.md)\n[bad anchor](docs/other.md#nope)\n[self bad](#nothing)\n"
        "```\n[in code](nowhere.md)\n```\n`[span](nowhere.md)` [web](https://example.com/x.md)\n"
        "[ref]: docs/missing.md\n"
    )
    assert broken_links(page) == [
        "README.md:4: docs/gone.md (no such file)",
        "README.md:5: docs/other.md#nope (no heading with anchor #nope in other.md)",
        "README.md:6: #nothing (no heading with anchor #nothing in README.md)",
        "README.md:11: docs/missing.md (no such file)",
    ]


def test_anchors_follow_githubs_spelling() -> None:
    text = "# Two commands\n## The `route` command\n## Two commands\n```\n# not a heading\n```\n"
    assert anchors(text) == {"two-commands", "the-route-command", "two-commands-1"}
