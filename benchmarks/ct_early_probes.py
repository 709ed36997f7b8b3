r"""Early probes of CT-VAE stage-2 runs: which regime did training fall into?

  python benchmarks/ct_early_probes.py LABEL=W [LABEL=W ...] [--first_step=500]
      [--last_step=1000] [--record=results/NAME.json]

Each W is a stage-2 workdir trained at least to --last_step (e.g. a run started with
`python -m causal_disent.main ... --pause_at_step=1000`, which pauses there and can
be continued later). From its metrics.jsonl (one row per step) the script averages,
over the steps in [first_step, last_step]:
  standard mode (no action, X -> X): ce_x (X's codes over the ∅ graph),
      ce_identity (over the identity graph) and code accuracy;
  action mode (X -> Y under the true action): ce_y and code accuracy;
  causal mode: the training batch's action accuracy.
On paper-width GPU runs the no-action path fell into one of two regimes by step
1000: ce_x near 0.03 with code accuracy 1.000, or ce_x 1.2-1.3 with ce_identity
above the uniform ln K; the low runs were those of the second kind. The `regime`
column says which: "copies X" when standard-mode code accuracy is at least 0.99,
else "loses X"; "copies X from" is when it got there: the end of the first window of
100 steps from step 0 whose standard-mode code accuracy averages 0.99 or more (none
by --last_step: blank). Beside the figures each row names the stage-2 settings the
experiments vary (widths, skip term, learning rate and warm-up, noise anneal,
batch, seed), read from the run's config.json.

Prints a Markdown table and, last, one JSON line of every figure.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

# Runs from a checkout without installing the package.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from causal_disent import cli  # noqa: E402
from causal_disent.runs import metrics_log, records  # noqa: E402
from causal_disent.runs.config_file import RunConfigError, read_config  # noqa: E402
from causal_disent.utils import arguments  # noqa: E402

STAGE = "ct"
# Standard-mode code accuracy at or above which the no-action path copies X.
COPIES_X_ACCURACY = 0.99
# Steps per window of the "copies X from" search.
ONSET_WINDOW = 100
# (column, row key) of the figures, per mode; a mode's rows are told by a key only
# that mode logs.
MODE_FIGURES = {
    "standard": ("ce_x", [("ce_x", "ce_x"), ("ce_identity", "ce_identity"),
                          ("standard_code_accuracy", "code_accuracy")]),
    "action": ("ce_y", [("ce_y", "ce_y"), ("action_code_accuracy", "code_accuracy")]),
    "causal": ("action_ce", [("causal_action_accuracy", "action_accuracy")]),
}


def run_settings(config) -> dict:
    """The stage-2 settings that the width experiments vary."""
    ct = config.ct
    return {
        "seed": config.seed,
        "graph_hidden": ct.model.graph_hidden,
        "gnn_hidden": ct.model.gnn_hidden,
        "root_weight": bool(ct.model.gnn_root_weight),
        "learning_rate": ct.optim.learning_rate,
        "warmup_steps": int(ct.optim.get("warmup_steps", 0)),
        "schedule": ct.optim.schedule,
        "batch_size": ct.optim.batch_size,
        "structure_noise_final": ct.objective.get("structure_noise_final", 1.0),
        "mode_proportions": list(ct.objective.mode_proportions),
        "num_steps": ct.train.num_steps,
    }


def probe(workdir: Path, first_step: int, last_step: int) -> dict:
    """The window's mean figures per mode, the regime and the run's settings."""
    try:
        config = read_config(workdir)
    except RunConfigError as error:
        sys.exit(f"error: {error}")
    all_rows = [row for row in metrics_log.read_rows(workdir, STAGE, validation=False)
                if row["step"] <= last_step]
    rows = [row for row in all_rows if row["step"] >= first_step]
    reached = max((row["step"] for row in rows), default=None)
    if reached is None or reached < last_step:
        sys.exit(f"error: {workdir} has stage-2 rows only up to step {reached or 0}, "
                 f"short of --last_step={last_step}: train it further (e.g. rerun it with "
                 f"--pause_at_step={last_step}) or give a smaller --last_step")
    figures: dict = {"steps": [first_step, last_step]}
    for mode, (marker, columns) in MODE_FIGURES.items():
        mode_rows = [row for row in rows if marker in row]
        figures[f"{mode}_steps"] = len(mode_rows)
        for column, key in columns:
            values = [row[key] for row in mode_rows]
            figures[column] = sum(values) / len(values) if values else None
    accuracy = figures["standard_code_accuracy"]
    figures["regime"] = (None if accuracy is None else
                         "copies X" if accuracy >= COPIES_X_ACCURACY else "loses X")
    figures["copies_x_from_step"] = copies_x_from_step(all_rows, last_step)
    figures["uniform_ce"] = math.log(config.mcqvae.model.num_codes)
    return {"workdir": str(workdir), "settings": run_settings(config), **figures}


def copies_x_from_step(rows: list[dict], last_step: int) -> int | None:
    """The end of the first ONSET_WINDOW-step window (0–100, 100–200, ...) whose
    standard-mode code accuracy averages COPIES_X_ACCURACY or more; None if none
    does by `last_step`."""
    for end in range(ONSET_WINDOW, last_step + 1, ONSET_WINDOW):
        accuracies = [row["code_accuracy"] for row in rows
                      if "ce_x" in row and end - ONSET_WINDOW < row["step"] <= end]
        if accuracies and sum(accuracies) / len(accuracies) >= COPIES_X_ACCURACY:
            return end
    return None


def markdown(probes: dict[str, dict]) -> str:
    lines = ["| run | seed | steps | ce_x | ce_identity | standard code acc. | ce_y | "
             "action code acc. | causal action acc. | regime | copies X from |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]

    def cell(value, digits=3):
        return "" if value is None else f"{value:.{digits}f}"

    for label, result in probes.items():
        first, last = result["steps"]
        lines.append(
            f"| {label} | {result['settings']['seed']} | {first}–{last} | "
            f"{cell(result['ce_x'])} | {cell(result['ce_identity'])} | "
            f"{cell(result['standard_code_accuracy'])} | {cell(result['ce_y'])} | "
            f"{cell(result['action_code_accuracy'])} | "
            f"{cell(result['causal_action_accuracy'])} | {result['regime'] or ''} | "
            f"{result['copies_x_from_step'] or ''} |")
    return "\n".join(lines)


def labelled_workdir(argument: str) -> tuple[str, Path]:
    label, separator, path = argument.partition("=")
    if not separator or not label or not path:
        raise ValueError(f"{argument!r} is not LABEL=WORKDIR")
    return label, Path(path).absolute()


def main() -> None:
    parser = arguments.OneLineArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+", type=labelled_workdir, metavar="LABEL=WORKDIR")
    parser.add_argument("--first_step", type=arguments.positive_int, default=500)
    parser.add_argument("--last_step", type=arguments.positive_int, default=1000)
    records.add_record_flag(parser)
    args = parser.parse_args()
    if args.first_step > args.last_step:
        parser.error(f"--first_step={args.first_step} is after --last_step={args.last_step}")
    recorder = records.script_recorder(args.record)
    probes = {label: probe(workdir, args.first_step, args.last_step)
              for label, workdir in args.runs}
    print(markdown(probes))
    print(json.dumps(probes))
    records.write_or_exit(recorder, {"probes": probes},
                          runs=[records.workdir_history(w) for _, w in args.runs])


if __name__ == "__main__":
    cli.run_script(main)
