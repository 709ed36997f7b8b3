r"""Prints the scores of groups of scored runs as one table, mean ± sample std per group.

  python -m causal_disent.summarize --group="beta-VAE=W1,W2" --group="FactorVAE=W3"
  python -m causal_disent.summarize --group=W    (W a many-seed run: all its seeds)

Each --group is LABEL=PATH,PATH,... (or PATH,... labelled by its paths); a path is a
workdir scored by `python -m causal_disent.evaluate --workdir=W`, a many-seed
workdir (its seeds/seed_* runs), or a metric card file such as the identity or
random card; a run without a card gives its results.json's scores only. The runs
of a group must share their config but for the seed and how they executed (a mean
over two models would mean nothing); a group that mixes configs is refused, naming
the fields. Columns:
each metric's headline scores, then from results.json the test split's
reconstruction NLL and the interventional-consistency summaries (INV off and on the
diagonal, EQV and SCN means). --format=json prints {label: {column: [mean, std, n]}}
instead; --record=results/<name>.json also keeps the table's figures, each run's
results.json and history, with this command, for `python -m report`. See
evaluation/card_summary.py.
"""

from __future__ import annotations

import json
import sys

from absl import app, flags

from causal_disent import cli
from causal_disent.utils import json_values

_GROUPS = flags.DEFINE_multi_string("group", [], "LABEL=PATH,PATH,... (repeatable).")
_REPRESENTATION = flags.DEFINE_string(
    "representation", None, "The cards' representation to read (default: each card's first).")
_FORMAT = flags.DEFINE_enum("format", "markdown", ["markdown", "json"], "Output format.")
_RECORD = flags.DEFINE_string(
    "record", None,
    "Also write a record (results/<name>.json, causal_disent/runs/records.py): this "
    "command, commit, machine, date, each group's summary and each run's results.json "
    "and history (the commands that trained it).")


def main(argv) -> None:
    if len(argv) > 1:
        sys.exit(f"error: unexpected arguments: {' '.join(argv[1:])}")
    if not _GROUPS.value:
        sys.exit("error: give at least one --group=LABEL=WORKDIR,...")
    from causal_disent.evaluation import card_summary
    from causal_disent.runs import records
    from causal_disent.utils import console

    console.quiet_stderr()  # a record names the machine: JAX's backend probe logs its INFO
    groups, recorded = [], {}
    try:
        recorder = records.Recorder("-m causal_disent.summarize", _RECORD.value)
        for argument in _GROUPS.value:
            label, paths = card_summary.parse_group(argument)
            runs = [run for path in paths for run in card_summary.expand_runs(path)]
            card_summary.check_one_config(label, runs)
            scores = [card_summary.read_run_scores(run, _REPRESENTATION.value) for run in runs]
            groups.append((label, card_summary.aggregate(scores)))
            recorded[label] = {"summary": groups[-1][1],
                               "runs": [_run_record(run, run_scores)
                                        for run, run_scores in zip(runs, scores)]}
        recorder.write({"groups": recorded})
    except (ValueError, FileNotFoundError) as error:  # RecordError is a ValueError
        sys.exit(f"error: {error}")
    if _FORMAT.value == "json":
        print(json.dumps({label: summary for label, summary in groups}, indent=2))
    else:
        print(card_summary.markdown_table(groups))


def _run_record(run, scores: dict) -> dict:
    """One run of a group as its record keeps it: its scores, its results.json and how
    it was made."""
    from causal_disent.evaluation import card_summary
    from causal_disent.runs import records

    entry = {"path": str(run), "scores": scores}
    if run.is_dir():
        if (run / "config.json").is_file():
            entry["seed"] = json_values.read_json(run / "config.json").get("seed")
        entry["history"] = records.workdir_history(run)
        if (run / "results.json").is_file():
            entry["results"] = json_values.read_json(run / "results.json")
        if (run / card_summary.CARD_FILE).is_file():
            entry["card"] = _card_settings(run / card_summary.CARD_FILE)
    return entry


def _card_settings(path) -> dict:
    """How the run's metric card was scored and how long it took, per representation
    (the card was read and checked for its scores before)."""
    cards = json_values.read_json(path)["representations"]
    return {name: {key: card[key] for key in ("num_samples", "seed", "total_seconds")}
            for name, card in cards.items()}


if __name__ == "__main__":
    app.run(main, flags_parser=cli.parse_flags_or_exit)
