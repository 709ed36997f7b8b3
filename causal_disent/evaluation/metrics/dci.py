"""Disentanglement, completeness and informativeness (Eastwood & Williams, "A
framework for the quantitative evaluation of disentangled representations", ICLR
2018) with gradient-boosted trees, as disentanglement_lib."""

from __future__ import annotations

import os

import joblib
import numpy as np

from causal_disent.data.base import FactorDataset
from causal_disent.evaluation.metrics.common import (
    DEFAULT_BATCH_SIZE,
    CardEntry,
    RepresentationFn,
    check_train_test,
    classifier_seed,
    sample_train_and_test,
    train_test_parameters,
)

_ENTROPY_EPS = 1e-11  # disentanglement_lib adds it before normalising importances


def gbt_importance_matrix(train_codes: np.ndarray, train_factors: np.ndarray,
                          test_codes: np.ndarray, test_factors: np.ndarray,
                          seed: int | None = 0, num_workers: int | None = None,
                          ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """[D, F] importances of one GradientBoostingClassifier per factor.

    Classifier: sklearn's defaults (100 trees of depth 3, learning rate 0.1, log-loss)
    as disentanglement_lib; its random_state is unset there, we pass `seed` so the
    score is reproducible (the defaults use no subsampling, so the seed only breaks
    ties between equally good splits). The factors' classifiers are independent, so
    they are fitted in `num_workers` processes (default: one per CPU, at most one per
    factor); the result does not depend on it. Returns (importance [D, F] =
    |feature_importances_|, train accuracy [F], test accuracy [F]).
    """
    num_factors = train_factors.shape[1]
    if num_workers is None:
        num_workers = min(num_factors, os.cpu_count() or 1)
    per_factor = joblib.Parallel(n_jobs=max(1, num_workers))(
        joblib.delayed(_fit_factor_gbt)(train_codes, train_factors[:, j], test_codes,
                                        test_factors[:, j], seed)
        for j in range(num_factors)
    )
    importance = np.stack([p[0] for p in per_factor], axis=1) if per_factor else \
        np.zeros((train_codes.shape[1], 0))
    train_accuracy = np.array([p[1] for p in per_factor])
    test_accuracy = np.array([p[2] for p in per_factor])
    return importance, train_accuracy, test_accuracy


def _fit_factor_gbt(train_codes, train_factor, test_codes, test_factor, seed):
    """(importance [D], train accuracy, test accuracy) of one factor's classifier."""
    from sklearn import ensemble  # slow to import: see metrics/__init__.py
    if len(np.unique(train_factor)) < 2:
        # Nothing to predict: no importance, and the constant guess.
        return (np.zeros(train_codes.shape[1]), 1.0,
                float(np.mean(test_factor == train_factor[0])))
    model = ensemble.GradientBoostingClassifier(random_state=seed)
    model.fit(train_codes, train_factor)
    return (np.abs(model.feature_importances_),
            float(np.mean(model.predict(train_codes) == train_factor)),
            float(np.mean(model.predict(test_codes) == test_factor)))


def dci_from_importance(importance: np.ndarray) -> dict:
    """Disentanglement and completeness of a [D, F] importance matrix R.

    disentanglement = Σ_i ρ_i (1 − H_F(R_i·)), ρ_i = Σ_j R_ij / Σ R;
    completeness = Σ_j ρ_j (1 − H_D(R_·j)), ρ_j = Σ_i R_ij / Σ R; entropies of the
    rows (columns) normalised to distributions, in base F (D), with 1e-11 added to
    every entry first, as disentanglement_lib. An all-zero R weights dimensions
    (factors) uniformly, as disentanglement_lib; F = 1 (D = 1) makes the entropy base
    1, which disentanglement_lib turns into NaN; we define those per-dimension
    (per-factor) scores as 1.
    """
    import scipy.stats  # slow to import: see metrics/__init__.py
    importance = np.asarray(importance, np.float64)
    num_dims, num_factors = importance.shape
    weights = importance if importance.sum() > 0 else np.ones_like(importance)
    with np.errstate(divide="ignore", invalid="ignore"):
        per_dim = (1.0 - scipy.stats.entropy(importance.T + _ENTROPY_EPS, base=num_factors)
                   if num_factors > 1 else np.ones(num_dims))
        per_factor = (1.0 - scipy.stats.entropy(importance + _ENTROPY_EPS, base=num_dims)
                      if num_dims > 1 else np.ones(num_factors))
    dim_weight = weights.sum(axis=1) / weights.sum()
    factor_weight = weights.sum(axis=0) / weights.sum()
    return {
        "disentanglement": float(np.sum(per_dim * dim_weight)),
        "completeness": float(np.sum(per_factor * factor_weight)),
        "disentanglement_per_code": per_dim,
        "completeness_per_factor": per_factor,
    }


def dci_scores(train_codes: np.ndarray, train_factors: np.ndarray, test_codes: np.ndarray,
               test_factors: np.ndarray, seed: int | None = 0) -> dict:
    """DCI with gradient-boosted trees. Reference sizes: 10 000 train, 5 000 test.

    Informativeness is the mean over factors of the classifiers' accuracy (train and
    test), as disentanglement_lib reports it ("informativeness_train/test").

    Returns {"disentanglement", "completeness", "informativeness_train",
    "informativeness_test", "importance_matrix": [D, F], per-dimension ("_per_code")
    and per-factor arrays}.
    """
    train_codes, train_factors, test_codes, test_factors = check_train_test(
        train_codes, train_factors, test_codes, test_factors)
    importance, train_accuracy, test_accuracy = gbt_importance_matrix(
        train_codes, train_factors, test_codes, test_factors, seed)
    scores = dci_from_importance(importance)
    scores.update(
        informativeness_train=float(np.mean(train_accuracy)),
        informativeness_test=float(np.mean(test_accuracy)),
        importance_matrix=importance,
    )
    return scores


def dci(dataset: FactorDataset, representation_fn: RepresentationFn, rng: np.random.Generator,
        num_train: int = 10_000, num_test: int = 5_000,
        batch_size: int = DEFAULT_BATCH_SIZE) -> dict:
    """`dci_scores` of i.i.d. train and test points of `dataset`; the trees' seed is
    drawn from `rng` after the points."""
    train, test = sample_train_and_test(
        dataset, representation_fn, rng, num_train, num_test, batch_size)
    return dci_scores(*train, *test, seed=classifier_seed(rng))


CARD_ENTRY = CardEntry(
    "dci", dci, train_test_parameters,
    headline=("disentanglement", "completeness", "informativeness_test"),
    sample_copies=6.0,  # 4.6 at 20 000 points
    notes={"classifier": "sklearn GradientBoostingClassifier() defaults (100 trees, depth 3, "
                         "learning rate 0.1) per factor, random_state from the metric's rng",
           "importance": "|feature_importances_|"})
