"""Disentanglement metrics (SPEC §5): `metric(dataset, representation_fn, rng, ...)`.

Each metric draws its samples from a `FactorDataset` (`sampling`) and scores them
with a pure function on arrays (`scores`), so the scoring is testable on fixed
arrays (as disentanglement_lib `evaluation/metrics/mig.py`). Defaults are
disentanglement_lib's; see `scores` for every definition and the quirks we fix.

  mig                      MIG, 10 000 points
  sap                      SAP, 10 000 train / 5 000 test, discrete factors
  dci                      DCI (GBT importances), 10 000 train / 5 000 test
  betavae                  BetaVAE score, 10 000 train / 5 000 eval points of 64-pairs
  factorvae                FactorVAE score, 10 000 variance samples, 10 000 / 5 000 votes
  modularity_explicitness  Ridgeway & Mozer, 10 000 train / 5 000 test
  unsupervised             Gaussian total / Wasserstein correlation, mean pairwise MI

`representation_fn(images [B, H, W, C] uint8) -> [B, D]` returns encoder means.
`rng` is a numpy Generator; classifier seeds are drawn from it, so one rng fixes the
whole result.
"""

from __future__ import annotations

import numpy as np

from causal_disent.data.base import FactorDataset
from causal_disent.evaluation import sampling, scores
from causal_disent.evaluation.sampling import DEFAULT_BATCH_SIZE, RepresentationFn


def mig(dataset: FactorDataset, representation_fn: RepresentationFn, rng: np.random.Generator,
        num_train: int = 10_000, batch_size: int = DEFAULT_BATCH_SIZE,
        num_bins: int = scores.NUM_BINS) -> dict:
    """Mutual information gap; see `scores.mig_score`."""
    codes, factors = sampling.sample_codes_and_factors(
        dataset, representation_fn, rng, num_train, batch_size)
    return scores.mig_score(codes, factors, num_bins)


def sap(dataset: FactorDataset, representation_fn: RepresentationFn, rng: np.random.Generator,
        num_train: int = 10_000, num_test: int = 5_000, batch_size: int = DEFAULT_BATCH_SIZE,
        svm_c: float = scores.SAP_SVM_C) -> dict:
    """Separated attribute predictability; see `scores.sap_score`."""
    train, test = _train_and_test(dataset, representation_fn, rng, num_train, num_test, batch_size)
    return scores.sap_score(*train, *test, svm_c=svm_c)


def dci(dataset: FactorDataset, representation_fn: RepresentationFn, rng: np.random.Generator,
        num_train: int = 10_000, num_test: int = 5_000,
        batch_size: int = DEFAULT_BATCH_SIZE) -> dict:
    """Disentanglement, completeness, informativeness; see `scores.dci_scores`."""
    train, test = _train_and_test(dataset, representation_fn, rng, num_train, num_test, batch_size)
    return scores.dci_scores(*train, *test, seed=_seed(rng))


def betavae(dataset: FactorDataset, representation_fn: RepresentationFn, rng: np.random.Generator,
            num_train: int = 10_000, num_eval: int = 5_000,
            batch_size: int = 64) -> dict:
    """BetaVAE score; see `sampling.betavae_features`, `scores.betavae_classifier_score`."""
    train = sampling.betavae_features(dataset, representation_fn, rng, num_train, batch_size)
    evaluation = sampling.betavae_features(dataset, representation_fn, rng, num_eval, batch_size)
    return scores.betavae_classifier_score(*train, *evaluation, seed=_seed(rng))


def factorvae(dataset: FactorDataset, representation_fn: RepresentationFn, rng: np.random.Generator,
              num_train: int = 10_000, num_eval: int = 5_000,
              num_variance_estimate: int = 10_000, batch_size: int = 64,
              threshold: float = scores.FACTORVAE_STD_THRESHOLD) -> dict:
    """FactorVAE score; see `sampling.factorvae_votes`, `scores.factorvae_vote_score`.

    With no active code the score is 0 (as disentanglement_lib). "num_active_dims" is
    the number of active codes (disentanglement_lib reports len() of its boolean mask,
    i.e. always D: a known quirk, not copied).
    """
    global_variances = sampling.factorvae_global_variances(
        dataset, representation_fn, rng, num_variance_estimate, batch_size)
    active = scores.active_dims(global_variances, threshold)
    if not active.any():
        return {"train_accuracy": 0.0, "eval_accuracy": 0.0, "num_active_dims": 0}
    train_votes = sampling.factorvae_votes(
        dataset, representation_fn, rng, num_train, global_variances, batch_size, threshold)
    eval_votes = sampling.factorvae_votes(
        dataset, representation_fn, rng, num_eval, global_variances, batch_size, threshold)
    result = scores.factorvae_vote_score(train_votes, eval_votes)
    result.update(num_active_dims=int(active.sum()), train_votes=train_votes,
                  eval_votes=eval_votes, global_variances=global_variances)
    return result


def modularity_explicitness(dataset: FactorDataset, representation_fn: RepresentationFn,
                            rng: np.random.Generator, num_train: int = 10_000,
                            num_test: int = 5_000, batch_size: int = DEFAULT_BATCH_SIZE,
                            num_bins: int = scores.NUM_BINS) -> dict:
    """Modularity and explicitness; see `scores.modularity_explicitness_scores`."""
    train, test = _train_and_test(dataset, representation_fn, rng, num_train, num_test, batch_size)
    return scores.modularity_explicitness_scores(*train, *test, num_bins=num_bins, seed=_seed(rng))


def unsupervised(dataset: FactorDataset, representation_fn: RepresentationFn,
                 rng: np.random.Generator, num_train: int = 10_000,
                 batch_size: int = DEFAULT_BATCH_SIZE, num_bins: int = scores.NUM_BINS) -> dict:
    """Gaussian total correlation and friends; see `scores.unsupervised_scores`."""
    codes, _ = sampling.sample_codes_and_factors(
        dataset, representation_fn, rng, num_train, batch_size)
    return scores.unsupervised_scores(codes, num_bins)


def _train_and_test(dataset, representation_fn, rng, num_train, num_test, batch_size):
    return (
        sampling.sample_codes_and_factors(dataset, representation_fn, rng, num_train, batch_size),
        sampling.sample_codes_and_factors(dataset, representation_fn, rng, num_test, batch_size),
    )


def _seed(rng: np.random.Generator) -> int:
    return int(rng.integers(0, 2**31 - 1))
