"""Every relative link and image of the README, docs/ and results/ Markdown files
points at a file of the repository (a moved figure or renamed page fails here)."""

import re
from pathlib import Path

import pytest

from tests.helpers import REPO_ROOT

MARKDOWN = [REPO_ROOT / "README.md", *sorted((REPO_ROOT / "docs").glob("*.md")),
            *sorted((REPO_ROOT / "results").rglob("*.md"))]
# [text](target) and ![alt](target), with an optional "title".
LINK = re.compile(r'!?\[[^\]]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)')
FENCE = re.compile(r"```.*?```", re.S)


def relative_links(path: Path) -> list[str]:
    """The link targets outside code blocks that name a file of the repository
    (not a URL, not an anchor of the same page)."""
    text = FENCE.sub("", path.read_text())
    return [target for target in LINK.findall(text)
            if not re.match(r"^[a-z][a-z0-9+.-]*:", target) and not target.startswith("#")]


@pytest.mark.parametrize("path", MARKDOWN, ids=lambda p: str(p.relative_to(REPO_ROOT)))
def test_every_relative_link_and_image_resolves(path):
    missing = [target for target in relative_links(path)
               if not (path.parent / target.split("#")[0]).exists()]
    assert not missing, f"{path.relative_to(REPO_ROOT)} links to missing files: {missing}"


def test_the_link_check_sees_links_and_catches_a_missing_one(tmp_path):
    page = tmp_path / "page.md"
    (tmp_path / "there.png").write_bytes(b"")
    page.write_text("![a](there.png) [b](gone.md#part) [c](https://x.org) [d](#top)\n"
                    "```\n[e](in_code.md)\n```\n")
    assert relative_links(page) == ["there.png", "gone.md#part"]
    assert not (page.parent / "gone.md").exists()
