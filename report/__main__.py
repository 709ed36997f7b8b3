r"""Renders the results tables of README.md and docs/ from the records in results/.

  python -m report            # check: exit 1 naming each table that differs
  python -m report --write    # rewrite every generated table in place
  python -m report --show=ct_small_seeds   # print one table

A generated table sits between `<!-- report:NAME -->` and `<!-- /report:NAME -->` in
a Markdown file; edit the records' commands, not the table. tests/test_report.py runs
the check.
"""

from __future__ import annotations

import difflib
import sys
from pathlib import Path

from causal_disent import cli
from causal_disent.utils import arguments

if __name__ == "__main__":
    cli.import_jax_or_exit()  # the tables' modules import JAX

from report import markdown, tables  # noqa: E402
from causal_disent.runs.records import RecordError  # noqa: E402

REPO_ROOT = Path(__file__).resolve().parents[1]


def differences(root: Path, results_dir: Path) -> list[str]:
    """A unified diff per generated table of root's Markdown that differs from its
    rendering, and a line per table named in a file but unknown or unrenderable."""
    results = tables.Results(results_dir)
    found = []
    for path in markdown.markdown_files(root):
        for name, body in markdown.blocks(path.read_text()).items():
            try:
                rendered = tables.render(name, results)
            except (KeyError, RecordError) as error:
                found.append(f"{path.relative_to(root)}: table {name}: {error}")
                continue
            if rendered != body:
                found.append("".join(difflib.unified_diff(
                    body.splitlines(keepends=True), rendered.splitlines(keepends=True),
                    f"{path.relative_to(root)} ({name})", f"rendered from {results_dir.name}/")))
    return found


def write(root: Path, results_dir: Path) -> list[Path]:
    results = tables.Results(results_dir)
    changed = []
    for path in markdown.markdown_files(root):
        text = path.read_text()
        names = markdown.blocks(text)
        if not names:
            continue
        new = markdown.replaced(text, {name: tables.render(name, results) for name in names})
        if new != text:
            path.write_text(new)
            changed.append(path)
    return changed


def main(argv=None) -> int:
    parser = arguments.OneLineArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="rewrite the tables in place")
    parser.add_argument("--show", default=None, help="print one table")
    parser.add_argument("--root", type=Path, default=REPO_ROOT,
                        help="the repository whose README.md and docs/ are checked")
    args = parser.parse_args(argv)
    results_dir = args.root / "results"
    if not (args.root / "README.md").is_file() or not results_dir.is_dir():
        print(f"error: --root={args.root} is not a checkout of the repository (it needs "
              f"README.md and results/); give the repository's root folder", file=sys.stderr)
        return 1
    try:
        if args.show:
            print(tables.render(args.show, tables.Results(results_dir)), end="")
            return 0
        if args.write:
            for path in write(args.root, results_dir):
                print(f"rewrote {path.relative_to(args.root)}")
            return 0
    except (KeyError, RecordError) as error:
        print(f"error: {error.args[0] if isinstance(error, KeyError) else error}",
              file=sys.stderr)
        return 1
    found = differences(args.root, results_dir)
    for entry in found:
        print(entry)
    if found:
        print(f"error: {len(found)} generated table(s) differ from results/; run "
              f"`python -m report --write`", file=sys.stderr)
        return 1
    print("every generated table matches results/")
    return 0


if __name__ == "__main__":
    sys.exit(main())
