"""Scores of several trained runs side by side: each group of runs (the seeds of one
model) reduced to mean ± sample standard deviation per headline score, for tables
such as the README's. The command is causal_disent/summarize.py.

A run is a workdir holding a metric card (causal_disent/evaluate.py), the stage's
results.json, or both; a workdir of a many-seed run (`config.num_seeds` > 1,
runs/seeds.py) stands for all its seeds. A metric card file of the identity or random
representation (`evaluate --model=identity|random`) is a run with scores only.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from causal_disent.evaluation.card import headline_scores
from causal_disent.runs import checkpoint_paths, config_fields, seeds
from causal_disent.runs.config_file import read_config
from causal_disent.utils import json_values

CARD_FILE = "metrics_card.json"
RESULTS_FILE = "results.json"
# Scalars of results.json quoted beside the card's: the test split's reconstruction,
# and the interventional-consistency summaries (evaluation/consistency_scores.py).
RESULT_KEYS = ("test_bce",)
# Headline scalars from a run's results beside its card: CT-VAE's retrieval
# (headline structure, and the mean over Gumbel draws), stage 1's test PSNR,
# CausalVAE's MIC / TIC / SHD, a VAE's action retrieval.
STAGE_KEYS = {
    "ct": ("action_accuracy", "factor_accuracy", "draws.action_accuracy.mean",
           "draws.factor_accuracy.mean"),
    "mcqvae": ("test_psnr",),
    "causalvae": ("mic", "tic", "shd"),
    # A VAE-family run with `vae.retrieval`: its action retrieval's headline readout.
    "vae": ("action_retrieval.linear_probe.action_accuracy",
            "action_retrieval.linear_probe.factor_accuracy"),
}
CONSISTENCY_KEYS = ("inv_off_diagonal", "inv_diagonal", "eqv_mean", "scn_mean")
# The markdown table's column titles (the JSON output keeps the keys).
COLUMN_TITLES = {
    "mig.discrete_mig": "MIG",
    "sap.sap_score": "SAP",
    "dci.disentanglement": "DCI disentanglement",
    "dci.completeness": "DCI completeness",
    "dci.informativeness_test": "DCI informativeness (test)",
    "betavae.eval_accuracy": "BetaVAE score",
    "factorvae.eval_accuracy": "FactorVAE score",
    "modularity_explicitness.modularity_score": "modularity",
    "modularity_explicitness.explicitness_score_test": "explicitness (test)",
    "unsupervised.gaussian_total_correlation": "Gaussian total correlation",
    "infomec.infom": "InfoM",
    "infomec.infoe": "InfoE",
    "infomec.infoc": "InfoC",
    "test_bce": "test NLL (BCE)",
    "vae.action_retrieval.linear_probe.action_accuracy": "action accuracy (linear probe)",
    "vae.action_retrieval.linear_probe.factor_accuracy": "factor accuracy (linear probe)",
    "consistency.inv_off_diagonal": "INV off-diagonal",
    "consistency.inv_diagonal": "INV diagonal",
    "consistency.eqv_mean": "EQV mean",
    "consistency.scn_mean": "SCN mean",
    "ct.action_accuracy": "action accuracy",
    "ct.factor_accuracy": "factor accuracy",
    "ct.draws.action_accuracy.mean": "action accuracy, draws",
    "ct.draws.factor_accuracy.mean": "factor accuracy, draws",
    "mcqvae.test_psnr": "stage 1 test PSNR",
    "causalvae.mic": "MIC",
    "causalvae.tic": "TIC",
    "causalvae.shd": "SHD",
}


def parse_group(argument: str) -> tuple[str, list[str]]:
    """"LABEL=P1,P2" -> (LABEL, [P1, P2]); "P1,P2" -> ("P1,P2", [P1, P2]). The paths
    follow the last "=", so a label may name a setting: "β-VAE (β = 4)=W"."""
    label, separator, paths = argument.rpartition("=")
    if not separator:
        label, paths = argument, argument
    paths = [path.strip() for path in paths.split(",") if path.strip()]
    if not paths:
        raise ValueError(f"--group={argument!r} names no run; use LABEL=WORKDIR,WORKDIR,...")
    return label.strip(), paths


def expand_runs(path: str | Path) -> list[Path]:
    """The runs `path` stands for: a many-seed run's seed workdirs in seed order, else
    [path] (a workdir or a card file). FileNotFoundError if it does not exist."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{path} does not exist: give a workdir of "
                                f"causal_disent.main or a metric card file")
    if path.is_dir() and (path / "config.json").is_file():
        config = read_config(path)
        if seeds.num_seeds(config) > 1:  # the run's own seeds, every one of them
            trained = seeds.run_seeds(config)
            seed_dirs = [seeds.seed_workdir(path, seed) for seed in trained]
            missing = [seed_dir for seed_dir in seed_dirs if not seed_dir.is_dir()]
            if missing:
                raise FileNotFoundError(
                    f"{path} trains seeds {', '.join(map(str, trained))}, and "
                    f"{missing[0]} is missing: finish the run, or, if it finished, `python "
                    f"-m causal_disent.main --workdir={path} --mode=eval` writes every "
                    f"seed's folder again")
            return seed_dirs
    seeds_dir = path / Path(seeds.SEED_WORKDIR).parent
    if path.is_dir() and seeds_dir.is_dir():  # a run without its config.json
        seed_dirs = [d for d in seeds_dir.iterdir() if d.is_dir() and d.name.startswith("seed_")]
        return sorted(seed_dirs, key=lambda d: int(d.name.removeprefix("seed_")))
    return [path]


# What the runs of one group may differ in besides how they executed: a group is one
# model's seeds (a many-seed run's seed workdirs say num_seeds 1), and each seed may
# point to other runs of its own (CT-VAE's stage 1, CausalVAE's compared runs).
MAY_DIFFER_IN_A_GROUP = frozenset({"seed", "num_seeds", "ct.mcqvae_workdir",
                                   "causalvae.train.compare_workdirs"})


def check_one_config(label: str, runs: Sequence[Path]) -> None:
    """ValueError when the runs of a group (their workdirs' config.json; card files
    have none) were trained with configs that differ in more than the seed and how
    they executed: a mean ± std over them would mix models."""
    configs = [(run, read_config(run)) for run in runs
               if run.is_dir() and (run / "config.json").is_file()]
    if not configs:
        return
    first, first_config = configs[0]
    for run, config in configs[1:]:
        found = [difference for difference in
                 config_fields.computing_differences(first_config, config)
                 if difference[0] not in MAY_DIFFER_IN_A_GROUP]
        if found:
            raise ValueError(
                f"group {label!r} mixes configs: "
                f"{config_fields.describe(found, f'in {first}', f'in {run}')}; give each "
                f"config its own --group")


def read_run_scores(run: Path, representation: str | None = None) -> dict[str, float]:
    """{column: value}: the headline scores of `run`'s card (`representation`, or the
    card's first) as "<metric>.<score>", plus RESULT_KEYS and the consistency
    summaries ("consistency.<key>") from its results.json. FileNotFoundError naming
    the command that writes the card when the run gives no score at all (no card, and
    no such key in its results.json, e.g. a CT-VAE or CausalVAE run)."""
    card_path = run if run.is_file() else run / CARD_FILE
    results_path = run / RESULTS_FILE if run.is_dir() else None
    has_results = results_path is not None and results_path.is_file()
    scores = (card_scores(card_path, representation, run if run.is_dir() else None)
              if card_path.is_file() else {})
    if has_results:
        results = json_values.read_json(results_path)
        if not isinstance(results, dict):
            raise ValueError(f"{results_path} holds {type(results).__name__}, not a run's "
                             f"results")
        for stage, keys in STAGE_KEYS.items():
            for key in keys:
                value = _nested(results.get(stage) or {}, key)
                if isinstance(value, (int, float)):
                    scores[f"{stage}.{key}"] = float(value)
        for stage_results in results.values():
            if not isinstance(stage_results, dict):
                continue
            for key in RESULT_KEYS:
                if key in stage_results:
                    scores[key] = _number(stage_results[key])
            for key in CONSISTENCY_KEYS:
                if key in stage_results.get("consistency", {}):
                    scores[f"consistency.{key}"] = _number(stage_results["consistency"][key])
    if not scores and not has_results and run.is_dir() and not (run / "config.json").is_file():
        raise FileNotFoundError(
            f"{run} holds no run (no config.json, {CARD_FILE} or {RESULTS_FILE}): give "
            f"--group a workdir of causal_disent.main, a many-seed run or a metric card file")
    if not scores:
        raise FileNotFoundError(
            f"no {CARD_FILE} in {run}, and no score to show in its results.json: score "
            f"the run first with `python -m causal_disent.evaluate --workdir={run} "
            f"--metrics=all`")
    return scores


def _nested(mapping: dict, dotted: str):
    """mapping["a"]["b"] for "a.b"; None when a key is missing."""
    for key in dotted.split("."):
        if not isinstance(mapping, dict) or key not in mapping:
            return None
        mapping = mapping[key]
    return mapping


def card_scores(card_path: Path, representation: str | None,
                run: Path | None = None) -> dict[str, float]:
    """{"<metric>.<score>": value} of the card's headline scores of `representation`
    (the card's first when None). `run`: the workdir the card stands for (its
    metrics_card.json), checked to be the run the card scored."""
    card = json_values.read_json(card_path)
    if not isinstance(card, dict) or not isinstance(card.get("representations"), dict):
        raise ValueError(f"{card_path} is not a metric card (it has no \"representations\"); "
                         f"write one with python -m causal_disent.evaluate")
    if run is not None:
        _check_card_of(run, card, card_path)
    _check_scores_the_trained_run(card, card_path, run)
    cards = card["representations"]
    name = representation or next(iter(cards))
    if name not in cards:
        raise ValueError(f"{card_path} has no representation {name!r}; it has "
                         f"{', '.join(cards)}")
    return headline_scores(cards[name])


def _check_card_of(run: Path, card: dict, card_path: Path) -> None:
    """ValueError when the card in `run` scored something else: the identity or random
    representation, or another run (written there with evaluate --output). A card
    whose run has moved, or whose run is a copy of this one (the same config), is
    this run's."""
    rescore = f"score it with `python -m causal_disent.evaluate --workdir={run}`"
    model = card.get("model", "trained")
    if model != "trained":
        raise ValueError(f"{card_path} scores --model={model} on {card.get('dataset')}, not "
                         f"the run in {run}; {rescore}, and give the {model} card to --group "
                         f"as a file of its own")
    scored = Path(card["workdir"]) if card.get("workdir") else None
    if (scored is None or not (scored / "config.json").is_file()
            or scored.resolve() == run.resolve() or not (run / "config.json").is_file()):
        return
    found = config_fields.computing_differences(read_config(scored), read_config(run))
    if found:
        raise ValueError(f"{card_path} scores the run in {scored}, not the one in {run} "
                         f"({config_fields.describe(found, 'there', 'here')}); {rescore}")


def _check_scores_the_trained_run(card: dict, card_path: Path, run: Path | None) -> None:
    """ValueError for a card of an unfinished run (`evaluate --unfinished`), or one
    whose run (`run`, else the card's workdir) has since trained past: its scores are
    not the run's."""
    scored_at = card.get("checkpoint_steps") or {}
    if card.get("finished") is False:
        raise ValueError(f"{card_path} scores an unfinished run (its checkpoints at "
                         f"{_steps(scored_at)}); finish the run and score it again, or "
                         f"leave it out")
    workdir = run if run is not None else card.get("workdir")
    if not workdir or not Path(workdir).is_dir():
        return  # a card moved away from its run: nothing to compare with
    now = {stage: checkpoint_paths.latest_saved_step(workdir, stage) for stage in scored_at}
    if now != scored_at:
        raise ValueError(f"{card_path} is stale: it scored {workdir} at {_steps(scored_at)}, "
                         f"whose checkpoints are now at {_steps(now)}; score it again with "
                         f"`python -m causal_disent.evaluate --workdir={workdir}`")


def _steps(steps: dict) -> str:
    return ", ".join(f"{stage} step {step}" for stage, step in steps.items())


def _number(value) -> float:
    """A recorded score; NaN for the `null` that records a non-finite one."""
    return math.nan if value is None else float(value)


def aggregate(runs_scores: Sequence[dict[str, float]]) -> dict[str, tuple[float, float, int]]:
    """{column: (mean, sample std (NaN for one run), n)} over the runs that have it."""
    columns = dict.fromkeys(key for scores in runs_scores for key in scores)
    summary = {}
    for column in columns:
        values = np.array([s[column] for s in runs_scores if column in s], np.float64)
        spread = float(values.std(ddof=1)) if len(values) > 1 else math.nan
        summary[column] = (float(values.mean()), spread, len(values))
    return summary


def format_cell(mean: float, spread: float, digits: int) -> str:
    """"m ± s" (or "m" for one run) with `digits` decimals."""
    if math.isnan(spread):
        return f"{mean:.{digits}f}"
    return f"{mean:.{digits}f} ± {spread:.{digits}f}"


def markdown_table(groups: Sequence[tuple[str, dict[str, tuple[float, float, int]]]],
                   digits: int = 3) -> str:
    """A markdown table, one row per (label, aggregate), one column per score any group
    has (card order, then RESULT_KEYS; titled by COLUMN_TITLES), with the number of runs; "–" where a group
    lacks a score. Scores over 10 (the NLLs) get one decimal."""
    columns = list(dict.fromkeys(column for _, summary in groups for column in summary))
    titles = [COLUMN_TITLES.get(column, column) for column in columns]
    lines = ["| runs | n | " + " | ".join(titles) + " |",
             "|---|---|" + "---|" * len(columns)]
    for label, summary in groups:
        count = max((n for _, _, n in summary.values()), default=0)
        cells = []
        for column in columns:
            if column not in summary:
                cells.append("–")
                continue
            mean, spread, _ = summary[column]
            cells.append(format_cell(mean, spread, 1 if abs(mean) >= 10 else digits))
        lines.append(f"| {label} | {count} | " + " | ".join(cells) + " |")
    return "\n".join(lines)
