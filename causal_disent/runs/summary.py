"""The summary a run prints when it ends: each stage's headline figures from its
results, the time this command spent on it, and where the run's files are.

    stage   headline                                                      time
    mcqvae  test PSNR 25.21 dB, MSE 0.0031, codebook perplexity 41.2       8m02s
    ct      action accuracy 0.714 (chance 0.083), factor 0.803 (0.167)    41m10s
    ...
"""

from __future__ import annotations

import shlex
from collections.abc import Callable
from pathlib import Path

import numpy as np

from causal_disent.utils.console import format_duration

# The files of a workdir worth pointing at, with what they hold.
_FILES = (
    ("results.json", "final scores of every stage"),
    ("metrics.jsonl", "training and validation rows"),
    ("figures", "figures (PNG)"),
    ("checkpoints", "Orbax checkpoints"),
    ("tensorboard", "TensorBoard events: tensorboard --logdir {workdir}"),
    ("seeds", "one run per seed"),
    ("log.txt", "the full log"),
)


def headline(stage: str, results: dict) -> str:
    """The figures that say how a stage did, in words."""
    describe = _HEADLINES.get(stage)
    if describe is None:
        return ""
    try:
        return describe(results)
    except (KeyError, TypeError, ValueError):  # an older or partial results entry
        return "(see results.json)"


def _mcqvae(results: dict) -> str:
    return (f"test PSNR {results['test_psnr']:.2f} dB, MSE {results['test_mse']:.4f}, "
            f"codebook perplexity {np.mean(results['codebook_perplexity']):.1f}")


def _ct(results: dict) -> str:
    text = (f"test action accuracy {results['action_accuracy']:.3f} "
            f"(chance {results['action_chance']:.3f}), factor accuracy "
            f"{results['factor_accuracy']:.3f} (chance {results['factor_chance']:.3f})")
    if "headline" in results:  # runs evaluated before the headline was named have none
        text += f", {results['headline'].replace('_', ' ')} structure"
    draws = results.get("draws")
    if draws:
        text += (f"; over {draws['num_draws']} Gumbel draws "
                 f"{draws['action_accuracy']['mean']:.3f} ± {draws['action_accuracy']['std']:.3f}"
                 f" / {draws['factor_accuracy']['mean']:.3f} ± "
                 f"{draws['factor_accuracy']['std']:.3f}")
    if "num_pairs" in results:  # curve points score their own, smaller set
        text += f" ({results['num_pairs']} test pairs)"
    return text


def _causalvae(results: dict) -> str:
    text = f"MIC {results['mic']:.1f}, TIC {results['tic']:.1f}"
    if results.get("shd") is not None:
        text += f", SHD {results['shd']} to the true graph"
    return text + f", test BCE {results['test_bce']:.1f}"


def _vae(results: dict) -> str:
    if "over_seeds" in results:
        return _vae_over_seeds(results)
    text = f"test NLL {results['test_nll']:.1f}"
    if "test_kl" in results:
        text += f", KL {results['test_kl']:.2f}"
    consistency = results.get("consistency", {})
    if "inv_off_diagonal" in consistency:
        text += f", INV off-diagonal {_number(consistency['inv_off_diagonal'])}"
    retrieval = results.get("action_retrieval")
    if retrieval:
        scores = retrieval[retrieval["headline"]]
        text += (f"; action retrieval ({retrieval['headline'].replace('_', ' ')}) "
                 f"{scores['action_accuracy']:.3f} (chance {scores['action_chance']:.3f}), "
                 f"factor {scores['factor_accuracy']:.3f} (chance {scores['factor_chance']:.3f})")
    return text


def _vae_over_seeds(results: dict) -> str:
    over_seeds = results["over_seeds"]
    nll = over_seeds["test_nll"]
    text = f"{results['num_seeds']} seeds: test NLL {nll['mean']:.1f} ± {nll['std']:.1f}"
    for name in ("action", "factor"):
        key = f"action_retrieval.linear_probe.{name}_accuracy"
        if key in over_seeds:
            text += (f", {name} retrieval {over_seeds[key]['mean']:.3f} ± "
                     f"{over_seeds[key]['std']:.3f}")
    return text + " (each seed's run in seeds/)"


def _number(value) -> str:
    return "n/a" if value is None else f"{value:.3f}"


_HEADLINES: dict[str, Callable[[dict], str]] = {
    "mcqvae": _mcqvae, "ct": _ct, "causalvae": _causalvae, "vae": _vae}


def format_summary(workdir: Path, results: dict[str, dict], seconds: dict[str, float],
                   skipped: set[str] = frozenset()) -> str:
    """The table of stages (headline, time) and the run's files that exist."""
    rows = [("stage", "result", "time")]
    for stage, stage_results in results.items():
        time = "finished earlier" if stage in skipped else format_duration(seconds.get(stage, 0.0))
        rows.append((stage, headline(stage, stage_results), time))
    widths = [max(len(row[i]) for row in rows) for i in range(2)]
    lines = ["", "summary"]
    lines += [f"  {row[0]:<{widths[0]}}  {row[1]:<{widths[1]}}  {row[2]}" for row in rows]
    lines.append(f"workdir {workdir}")
    for name, what in _FILES:
        if (workdir / name).exists():
            lines.append(f"  {name:<13} {what.format(workdir=shlex.quote(str(workdir)))}")
    return "\n".join(lines)
