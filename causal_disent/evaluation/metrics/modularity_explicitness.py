"""Modularity and explicitness (Ridgeway & Mozer, "Learning deep disentangled
embeddings with the F-statistic loss", NeurIPS 2018), as disentanglement_lib."""

from __future__ import annotations

import warnings

import numpy as np

from causal_disent.data.base import FactorDataset
from causal_disent.evaluation.metrics.common import (
    DEFAULT_BATCH_SIZE,
    LOGISTIC_REGRESSION_NOTE,
    NUM_BINS,
    CardEntry,
    RepresentationFn,
    check_train_test,
    classifier_seed,
    discrete_mutual_info,
    discretize_codes,
    sample_train_and_test,
    train_test_parameters,
)


def modularity_from_mutual_info(mutual_info: np.ndarray) -> tuple[float, np.ndarray]:
    """Mean over dimensions of 1 − Σ_{j≠j*} MI_ij² / (MI_ij*² (F − 1)), j* the top factor.

    A dimension with no information (max MI = 0) scores 0, as disentanglement_lib (so
    a dead dimension lowers the mean). Returns (modularity, per-dimension [D]).
    """
    squared = np.square(np.asarray(mutual_info, np.float64))
    top = squared.max(axis=1)
    num_factors = squared.shape[1]
    with np.errstate(divide="ignore", invalid="ignore"):
        if num_factors > 1:
            per_dim = 1.0 - (squared.sum(axis=1) - top) / (top * (num_factors - 1.0))
        else:
            per_dim = np.ones(len(squared))
    per_dim = np.where(top == 0, 0.0, per_dim)
    return float(per_dim.mean()), per_dim


def explicitness_per_factor(train_codes: np.ndarray, train_factor: np.ndarray,
                            test_codes: np.ndarray, test_factor: np.ndarray,
                            seed: int | None = 0) -> tuple[float, float]:
    """(train, test) macro one-vs-rest ROC AUC of a logistic regression on all dimensions.

    LogisticRegression with sklearn's defaults (as disentanglement_lib; see
    `betavae.betavae_classifier_score` on how those changed). Quirk fixed:
    disentanglement_lib re-fits a MultiLabelBinarizer on the test labels, which
    misaligns the columns with predict_proba when the test set lacks a class; we
    binarise against the classifier's classes. Classes absent from a set
    (all-negative column, no AUC) are left out of that set's macro average.
    """
    from sklearn import linear_model  # slow to import: see metrics/__init__.py
    from sklearn.exceptions import ConvergenceWarning
    values = np.unique(train_factor)
    if len(values) < 2:
        return 1.0, 1.0  # nothing to separate
    model = linear_model.LogisticRegression(random_state=seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model.fit(train_codes, train_factor)
    return (_macro_auc(train_factor, model.predict_proba(train_codes), model.classes_),
            _macro_auc(test_factor, model.predict_proba(test_codes), model.classes_))


def _macro_auc(labels: np.ndarray, probabilities: np.ndarray, classes: np.ndarray) -> float:
    from sklearn.metrics import roc_auc_score  # slow to import: see metrics/__init__.py
    indicator = np.asarray(labels)[:, None] == classes[None, :]
    aucs = [roc_auc_score(indicator[:, c], probabilities[:, c])
            for c in range(len(classes)) if 0 < indicator[:, c].sum() < len(indicator)]
    return float(np.mean(aucs)) if aucs else float("nan")


def modularity_explicitness_scores(train_codes: np.ndarray, train_factors: np.ndarray,
                                   test_codes: np.ndarray, test_factors: np.ndarray,
                                   num_bins: int = NUM_BINS, seed: int | None = 0) -> dict:
    """Modularity (MI of discretised train codes) and explicitness (AUC).

    Reference sizes: 10 000 train, 5 000 test. Codes are standardised with the train
    mean and std (np.std, ddof 0) before the regression, as disentanglement_lib; a
    constant dimension (std 0, NaN there) is divided by 1 instead.

    Returns {"modularity_score", "explicitness_score_train", "explicitness_score_test",
    "mutual_info": [D, F], "modularity_per_code": [D], "explicitness_per_factor_test": [F]}.
    """
    train_codes, train_factors, test_codes, test_factors = check_train_test(
        train_codes, train_factors, test_codes, test_factors)
    mutual_info = discrete_mutual_info(discretize_codes(train_codes, num_bins), train_factors)
    modularity, per_dim = modularity_from_mutual_info(mutual_info)
    mean, std = train_codes.mean(axis=0), train_codes.std(axis=0)
    std = np.where(std > 0, std, 1.0)
    train_norm, test_norm = (train_codes - mean) / std, (test_codes - mean) / std
    explicit = np.array([
        explicitness_per_factor(train_norm, train_factors[:, j], test_norm, test_factors[:, j],
                                seed)
        for j in range(train_factors.shape[1])
    ])
    return {
        "modularity_score": modularity,
        "explicitness_score_train": float(explicit[:, 0].mean()),
        "explicitness_score_test": float(explicit[:, 1].mean()),
        "mutual_info": mutual_info,
        "modularity_per_code": per_dim,
        "explicitness_per_factor_test": explicit[:, 1],
    }


def modularity_explicitness(dataset: FactorDataset, representation_fn: RepresentationFn,
                            rng: np.random.Generator, num_train: int = 10_000,
                            num_test: int = 5_000, batch_size: int = DEFAULT_BATCH_SIZE,
                            num_bins: int = NUM_BINS) -> dict:
    """`modularity_explicitness_scores` of i.i.d. train and test points of `dataset`;
    the regressions' seed is drawn from `rng` after the points."""
    train, test = sample_train_and_test(
        dataset, representation_fn, rng, num_train, num_test, batch_size)
    return modularity_explicitness_scores(*train, *test, num_bins=num_bins,
                                          seed=classifier_seed(rng))


CARD_ENTRY = CardEntry(
    "modularity_explicitness", modularity_explicitness,
    lambda n: {**train_test_parameters(n), "num_bins": NUM_BINS},
    headline=("modularity_score", "explicitness_score_test"),
    sample_copies=16.5,  # 13.2 at 200 000 points, 6.6 of 32 codes
    notes={"classifier": LOGISTIC_REGRESSION_NOTE + ", on codes standardised by the train "
                                                    "mean and std",
           "explicitness": "macro one-vs-rest ROC AUC"})
