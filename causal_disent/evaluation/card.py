"""The metric card: every disentanglement score of one representation, with every
setting that produced it, the time each took and the library versions.

    card = metric_card(dataset, representation, ["mig", "dci"], num_samples=10_000)

`num_samples` is each metric's number of training points (disentanglement_lib's
10 000 by default); test / evaluation sets are half of it (its 5 000), so the
default card uses the reference sizes exactly. Every metric draws from its own
numpy Generator seeded by (seed, metric name), so a metric's result does not depend
on which other metrics ran, or in what order. The metrics, and the settings and notes
the card records for each, are the entries of `evaluation.metrics.METRICS`.
"""

from __future__ import annotations

import importlib.metadata
import platform
import time
import zlib
from typing import Callable

import numpy as np

from causal_disent.evaluation.metrics import METRICS
from causal_disent.evaluation.metrics.common import representations_of, scored_factor_indices
from causal_disent.utils import host_memory
from causal_disent.utils.json_values import to_python

LIBRARIES = ("jax", "flax", "numpy", "scipy", "scikit-learn")


def parse_metric_names(argument: str) -> list[str]:
    """"all" or a comma-separated list of METRICS names -> the names, in card order."""
    if argument.strip() == "all":
        return list(METRICS)
    names = [name.strip() for name in argument.split(",") if name.strip()]
    unknown = [name for name in names if name not in METRICS]
    if unknown or not names:
        raise ValueError(
            f"unknown metric(s) {', '.join(map(repr, unknown)) or '(none given)'}; "
            f"choose 'all' or a comma-separated list of: {', '.join(METRICS)}"
        )
    return [name for name in METRICS if name in names]


def metric_rng(seed: int, name: str) -> np.random.Generator:
    """The Generator of metric `name` under card seed `seed`."""
    return np.random.default_rng([seed, zlib.crc32(name.encode())])


def factor_grid_missing(dataset) -> str | None:
    """Why the metrics cannot score `dataset`, or None when they can: they draw factor
    vectors from a grid of ground-truth factors, which CelebA (binary attributes)
    does not have."""
    if hasattr(dataset, "factor_sizes"):
        if getattr(dataset, "num_factors", 1) == 0:
            return (f"{dataset.name} has no factor labels, and the disentanglement metrics "
                    f"score a representation against factors; give factor labels "
                    f"(docs/own_data.md)")
        return None
    return (f"{dataset.name} has binary attributes, not a grid of ground-truth factors, "
            f"and the disentanglement metrics draw factor vectors from such a grid; "
            f"score a run on a dataset with factors (e.g. dsprites_synth)")


def grid_metrics_refused(dataset, metric_names: list[str]) -> str | None:
    """Why some of `metric_names` cannot score `dataset`, or None: betavae and
    factorvae set one factor's value across otherwise random draws, which needs an
    image for every combination of the factors (a labelled dataset of one's own may
    not have one)."""
    if getattr(dataset, "full_grid", True):
        return None
    needing = [name for name in metric_names if METRICS[name].needs_full_grid]
    if not needing:
        return None
    others = [name for name in METRICS if not METRICS[name].needs_full_grid]
    return (f"{' and '.join(needing)} set one factor's value across otherwise random draws, "
            f"so every combination of the factors needs an image, and {dataset.name}'s "
            f"labels do not fill the grid ({dataset.grid_note}); score it with "
            f"--metrics={','.join(others)}, or give labels on a full grid")


def metrics_for(dataset, metric_names: list[str], asked_for_all: bool) -> list[str]:
    """`metric_names` when they can all score `dataset`; for "all", those that can
    (ValueError naming the others when they were asked for by name)."""
    if asked_for_all:
        return [name for name in metric_names
                if getattr(dataset, "full_grid", True) or not METRICS[name].needs_full_grid]
    if reason := grid_metrics_refused(dataset, metric_names):
        raise ValueError(reason)
    return metric_names


def metric_card(dataset, representation, metric_names: list[str], num_samples: int = 10_000,
                seed: int = 0, log: Callable[[str], None] | None = None) -> dict:
    """Runs the metrics on `representation` (see `representations`) over `dataset`.

    Returns a JSON-ready dict: {"dataset", "representation", "num_samples", "seed",
    "metrics": {name: {"scores", "parameters", "notes", "seconds"}}, "total_seconds",
    "versions"}; arrays among a metric's outputs are stored as nested lists. The
    dataset's factors are those scored; a nuisance factor (SmallNORB's instance),
    which varies at random in the images but is not scored, is listed under
    "unscored_factors".
    """
    if isinstance(num_samples, bool) or not isinstance(num_samples, (int, np.integer)) \
            or num_samples < 2:
        raise ValueError(f"num_samples must be an integer >= 2, got {num_samples!r}")
    if reason := factor_grid_missing(dataset) or grid_metrics_refused(dataset, metric_names):
        raise ValueError(reason)
    check_samples_fit(dataset, representation, int(num_samples), metric_names)
    scored = scored_factor_indices(dataset)
    described = {"name": dataset.name,
                 "factor_names": [dataset.factor_names[f] for f in scored],
                 "factor_sizes": [dataset.factor_sizes[f] for f in scored]}
    if len(scored) < dataset.num_factors:
        described["unscored_factors"] = [
            name for f, name in enumerate(dataset.factor_names) if f not in scored]
    card = {
        "dataset": described,
        "representation": {
            "name": getattr(representation, "name", type(representation).__name__),
            "description": getattr(representation, "description", ""),
        },
        "num_samples": int(num_samples),
        "seed": int(seed),
        "metrics": {},
    }
    start = time.perf_counter()
    for name in metric_names:
        entry = METRICS[name]
        parameters = entry.parameters(int(num_samples))
        began = time.perf_counter()
        result = entry.run(dataset, representation, metric_rng(seed, name), **parameters)
        seconds = time.perf_counter() - began
        card["metrics"][name] = {
            "scores": to_json(result),
            "parameters": {**parameters, "rng": f"numpy default_rng([{seed}, crc32('{name}')])"},
            "notes": entry.notes,
            "seconds": round(seconds, 2),
        }
        if log is not None:
            log(f"{name}: {headline(name, result)} ({seconds:.1f} s)")
    card["total_seconds"] = round(time.perf_counter() - start, 2)
    card["versions"] = library_versions()
    return card


def check_samples_fit(dataset, representation, num_samples: int,
                      metric_names: list[str]) -> None:
    """MemoryError, before any metric runs, when the metric of `metric_names` that
    holds the most (its `sample_copies` of the points' factors and codes) would need
    more than the host has available for `num_samples` points: a host that runs out
    kills the process without a word (`--num_samples=300000000` on the identity map
    of dsprites_synth was killed on 24 GiB). The copies are measured peaks, not a
    plan: other representations can hold more."""
    available = host_memory.available_bytes()
    if available is None or not metric_names:
        return
    one_point = dataset.sample_factors(np.random.default_rng(0), 1)  # not a metric's stream
    width = representations_of(dataset, representation, one_point).shape[1]
    largest = max(metric_names, key=lambda name: METRICS[name].sample_copies)
    copies = METRICS[largest].sample_copies
    needed = copies * num_samples * (dataset.num_factors + width) * 8
    if needed > available:
        raise MemoryError(
            f"{num_samples} points of metric {largest} need about {needed / 2**30:.1f} GiB "
            f"({copies:g} copies of their factors and codes, as measured), and the host has "
            f"{available / 2**30:.1f} GiB available")


def headline(name: str, result: dict) -> str:
    """The scalars metric `name` is usually quoted by, for printing ("n/a" for one
    recorded as not finite); a FactorVAE score with no active latent dimension says
    so instead of showing its conventional 0."""
    text = ", ".join(f"{key} {'n/a' if result[key] is None else f'{result[key]:.4f}'}"
                     for key in METRICS[name].headline if key in result)
    if result.get("num_active_dims") == 0:
        text += (" (no active latent dimension: every latent's variance is below the "
                 "threshold, and the score is 0 by convention)")
    return text


def headline_scores(card: dict) -> dict[str, float]:
    """{"<metric>.<score>": value} of a `metric_card`'s headline scores, in card order
    (e.g. "mig.discrete_mig", "dci.disentanglement"); a score recorded as non-finite
    (None) is NaN."""
    scores = {}
    for name, entry in card["metrics"].items():
        for key in METRICS[name].headline:
            if key in entry["scores"]:
                value = entry["scores"][key]
                scores[f"{name}.{key}"] = float("nan") if value is None else float(value)
    return scores


def library_versions() -> dict:
    import causal_disent

    versions = {"python": platform.python_version(), "causal_disent": causal_disent.__version__}
    for library in LIBRARIES:
        try:
            versions[library] = importlib.metadata.version(library)
        except importlib.metadata.PackageNotFoundError:
            versions[library] = None
    return versions


def to_json(value):
    """numpy scalars and arrays -> Python numbers and nested lists (NaN stays NaN)."""
    if isinstance(value, dict):
        return {str(key): to_json(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_json(item) for item in value]
    if isinstance(value, (np.ndarray, np.generic)):
        return to_python(value)
    return value
