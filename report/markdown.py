"""Generated tables inside Markdown files: each sits between two comments,

  <!-- report:NAME -->
  | ... the table report renders as NAME ... |
  <!-- /report:NAME -->

so that the prose around it stays hand-written and the figures do not."""

from __future__ import annotations

import re
from pathlib import Path

BLOCK = re.compile(r"(<!-- report:(?P<name>[\w-]+) -->\n)(?P<body>.*?)(<!-- /report:(?P=name) -->)",
                   re.S)


def blocks(text: str) -> dict[str, str]:
    """{name: body} of every generated table in `text` (body without the markers)."""
    return {match["name"]: match["body"] for match in BLOCK.finditer(text)}


def replaced(text: str, rendered: dict[str, str]) -> str:
    """`text` with the body of each block named in `rendered` replaced by it."""
    def swap(match):
        name = match["name"]
        if name not in rendered:
            return match.group(0)
        return match.group(1) + rendered[name] + match.group(4)
    return BLOCK.sub(swap, text)


def markdown_files(root: Path) -> list[Path]:
    """The Markdown files whose tables are generated: the README and docs/."""
    return [root / "README.md", *sorted((root / "docs").glob("*.md"))]
