"""The metric card: every disentanglement score of one representation, with every
setting that produced it, the time each took and the library versions.

    card = metric_card(dataset, representation, ["mig", "dci"], num_samples=10_000)

`num_samples` is each metric's number of training points (disentanglement_lib's
10 000 by default); test / evaluation sets are half of it (its 5 000), so the
default card uses the reference sizes exactly. Every metric draws from its own
numpy Generator seeded by (seed, metric name), so a metric's result does not depend
on which other metrics ran, or in what order.
"""

from __future__ import annotations

import importlib.metadata
import platform
import time
import zlib
from typing import Callable

import numpy as np

from causal_disent.evaluation import disentanglement, scores
from causal_disent.evaluation.sampling import DEFAULT_BATCH_SIZE
from causal_disent.train.reporting import to_python

_LOGISTIC = ("sklearn LogisticRegression() defaults (lbfgs, C=1, max_iter=100, "
             "multinomial), random_state from the metric's rng")


def _mig(n: int) -> dict:
    return {"num_train": n, "batch_size": DEFAULT_BATCH_SIZE, "num_bins": scores.NUM_BINS}


def _train_test(n: int) -> dict:
    return {"num_train": n, "num_test": n // 2, "batch_size": DEFAULT_BATCH_SIZE}


def _betavae(n: int) -> dict:
    return {"num_train": n, "num_eval": n // 2, "batch_size": 64}


def _factorvae(n: int) -> dict:
    return {"num_train": n, "num_eval": n // 2, "num_variance_estimate": n, "batch_size": 64,
            "threshold": scores.FACTORVAE_STD_THRESHOLD}


# name -> (metric function, its keyword arguments for num_samples, fixed notes)
METRICS: dict[str, tuple[Callable, Callable[[int], dict], dict]] = {
    "mig": (disentanglement.mig, _mig,
            {"discretisation": "20 equal-width bins per code over its sample range",
             "mutual_information": "sklearn mutual_info_score, nats"}),
    "sap": (disentanglement.sap, lambda n: {**_train_test(n), "svm_c": scores.SAP_SVM_C},
            {"classifier": "sklearn LinearSVC(C=svm_c, class_weight='balanced') per (code, "
                           "factor)"}),
    "dci": (disentanglement.dci, _train_test,
            {"classifier": "sklearn GradientBoostingClassifier() defaults (100 trees, depth 3, "
                           "learning rate 0.1) per factor, random_state from the metric's rng",
             "importance": "|feature_importances_|"}),
    "betavae": (disentanglement.betavae, _betavae, {"classifier": _LOGISTIC}),
    "factorvae": (disentanglement.factorvae, _factorvae,
                  {"classifier": "majority vote of argmin local/global variance per batch"}),
    "modularity_explicitness": (
        disentanglement.modularity_explicitness,
        lambda n: {**_train_test(n), "num_bins": scores.NUM_BINS},
        {"classifier": _LOGISTIC + ", on codes standardised by the train mean and std",
         "explicitness": "macro one-vs-rest ROC AUC"}),
    "unsupervised": (disentanglement.unsupervised, _mig,
                     {"total_correlation": "of a Gaussian with the codes' covariance"}),
}

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


def metric_card(dataset, representation, metric_names: list[str], num_samples: int = 10_000,
                seed: int = 0, log: Callable[[str], None] | None = None) -> dict:
    """Runs the metrics on `representation` (see `representations`) over `dataset`.

    Returns a JSON-ready dict: {"dataset", "representation", "num_samples", "seed",
    "metrics": {name: {"scores", "parameters", "notes", "seconds"}}, "total_seconds",
    "versions"}; arrays among a metric's outputs are stored as nested lists.
    """
    if isinstance(num_samples, bool) or not isinstance(num_samples, (int, np.integer)) \
            or num_samples < 2:
        raise ValueError(f"num_samples must be an integer >= 2, got {num_samples!r}")
    card = {
        "dataset": {"name": dataset.name, "factor_names": list(dataset.factor_names),
                    "factor_sizes": list(dataset.factor_sizes)},
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
        function, parameters_for, notes = METRICS[name]
        parameters = parameters_for(int(num_samples))
        began = time.perf_counter()
        result = function(dataset, representation, metric_rng(seed, name), **parameters)
        seconds = time.perf_counter() - began
        card["metrics"][name] = {
            "scores": to_json(result),
            "parameters": {**parameters, "rng": f"numpy default_rng([{seed}, crc32('{name}')])"},
            "notes": notes,
            "seconds": round(seconds, 2),
        }
        if log is not None:
            log(f"{name}: {headline(name, result)} ({seconds:.1f} s)")
    card["total_seconds"] = round(time.perf_counter() - start, 2)
    card["versions"] = library_versions()
    return card


# The scalar each metric is usually quoted by (for printing).
HEADLINES = {
    "mig": ("discrete_mig",),
    "sap": ("sap_score",),
    "dci": ("disentanglement", "completeness", "informativeness_test"),
    "betavae": ("eval_accuracy",),
    "factorvae": ("eval_accuracy",),
    "modularity_explicitness": ("modularity_score", "explicitness_score_test"),
    "unsupervised": ("gaussian_total_correlation",),
}


def headline(name: str, result: dict) -> str:
    return ", ".join(f"{key} {result[key]:.4f}" for key in HEADLINES[name] if key in result)


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
