r"""Prints the scores of groups of scored runs as one table, mean ± sample std per group.

  python -m causal_disent.summarize --group="beta-VAE=W1,W2" --group="FactorVAE=W3"
  python -m causal_disent.summarize --group=W    (W a many-seed run: all its seeds)

Each --group is LABEL=PATH,PATH,... (or PATH,... labelled by its paths); a path is a
workdir scored by `python -m causal_disent.evaluate --workdir=W`, a many-seed
workdir (its seeds/seed_* runs), or a metric card file such as the identity or
random card; a run without a card gives its results.json's scores only. Columns:
each metric's headline scores, then from results.json the test split's
reconstruction NLL and the interventional-consistency summaries (INV off and on the
diagonal, EQV and SCN means). --format=json prints {label: {column: [mean, std, n]}}
instead. See evaluation/card_summary.py.
"""

from __future__ import annotations

import json
import sys

from absl import app, flags

from causal_disent import cli

_GROUPS = flags.DEFINE_multi_string("group", [], "LABEL=PATH,PATH,... (repeatable).")
_REPRESENTATION = flags.DEFINE_string(
    "representation", None, "The cards' representation to read (default: each card's first).")
_FORMAT = flags.DEFINE_enum("format", "markdown", ["markdown", "json"], "Output format.")


def parse_group(argument: str) -> tuple[str, list[str]]:
    """"LABEL=P1,P2" -> (LABEL, [P1, P2]); "P1,P2" -> ("P1,P2", [P1, P2])."""
    label, separator, paths = argument.partition("=")
    if not separator:
        label, paths = argument, argument
    paths = [path.strip() for path in paths.split(",") if path.strip()]
    if not paths:
        raise ValueError(f"--group={argument!r} names no run; use LABEL=WORKDIR,WORKDIR,...")
    return label.strip(), paths


def main(argv) -> None:
    if len(argv) > 1:
        sys.exit(f"error: unexpected arguments: {' '.join(argv[1:])}")
    if not _GROUPS.value:
        sys.exit("error: give at least one --group=LABEL=WORKDIR,...")
    from causal_disent.evaluation import card_summary

    groups = []
    try:
        for argument in _GROUPS.value:
            label, paths = parse_group(argument)
            runs = [run for path in paths for run in card_summary.expand_runs(path)]
            scores = [card_summary.read_run_scores(run, _REPRESENTATION.value) for run in runs]
            groups.append((label, card_summary.aggregate(scores)))
    except (ValueError, FileNotFoundError) as error:
        sys.exit(f"error: {error}")
    if _FORMAT.value == "json":
        print(json.dumps({label: summary for label, summary in groups}, indent=2))
    else:
        print(card_summary.markdown_table(groups))


if __name__ == "__main__":
    app.run(main, flags_parser=cli.parse_flags_or_exit)
