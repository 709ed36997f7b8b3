"""Unsupervised scores of the codes alone (no factors): the total correlation and
Wasserstein dependence of a Gaussian with the codes' covariance, and the mean
pairwise mutual information, as disentanglement_lib's unsupervised metrics, which
Locatello et al. ("Challenging common assumptions in the unsupervised learning of
disentangled representations", ICML 2019) report for the mean representation."""

from __future__ import annotations

import numpy as np
import scipy.linalg

from causal_disent.data.base import FactorDataset
from causal_disent.evaluation.metrics.common import (
    DEFAULT_BATCH_SIZE,
    NUM_BINS,
    CardEntry,
    RepresentationFn,
    discrete_mutual_info,
    discretize_codes,
    one_sample_parameters,
    sample_codes_and_factors,
)


def gaussian_total_correlation(covariance: np.ndarray) -> float:
    """Total correlation of N(0, Σ): ½ (Σ_i log Σ_ii − log det Σ), nats. 0 iff diagonal."""
    covariance = np.asarray(covariance, np.float64)
    return float(0.5 * (np.sum(np.log(np.diag(covariance))) - np.linalg.slogdet(covariance)[1]))


def gaussian_wasserstein_correlation(covariance: np.ndarray) -> float:
    """Squared 2-Wasserstein distance between N(0, Σ) and N(0, diag Σ)."""
    covariance = np.asarray(covariance, np.float64)
    root = scipy.linalg.sqrtm(covariance * np.diag(covariance)[:, None])
    return float(2.0 * np.trace(covariance) - 2.0 * np.trace(np.real(root)))


def unsupervised_scores(codes: np.ndarray, num_bins: int = NUM_BINS) -> dict:
    """disentanglement_lib's unsupervised metrics of [n, D] codes (reference n = 10 000).

    Covariance with np.cov (ddof 1). "mutual_info_score" is the mean pairwise MI
    (nats) between distinct discretised dimensions. A constant dimension makes the
    covariance singular and the total correlation inf/NaN, as in disentanglement_lib.
    """
    codes = np.asarray(codes, np.float64)
    if codes.ndim != 2 or len(codes) < 2:
        raise ValueError(f"codes must be [n, D] with n >= 2, got {codes.shape}")
    covariance = np.atleast_2d(np.cov(codes, rowvar=False))
    discrete = discretize_codes(codes, num_bins)
    pairwise = discrete_mutual_info(discrete, discrete)
    np.fill_diagonal(pairwise, 0.0)
    num_dims = codes.shape[1]
    with np.errstate(divide="ignore", invalid="ignore"):
        total_correlation = gaussian_total_correlation(covariance)
        wasserstein = gaussian_wasserstein_correlation(covariance)
    return {
        "gaussian_total_correlation": total_correlation,
        "gaussian_wasserstein_correlation": wasserstein,
        "gaussian_wasserstein_correlation_norm": wasserstein / float(np.trace(covariance)),
        "mutual_info_score": (float(pairwise.sum() / (num_dims**2 - num_dims))
                              if num_dims > 1 else 0.0),
    }


def unsupervised(dataset: FactorDataset, representation_fn: RepresentationFn,
                 rng: np.random.Generator, num_train: int = 10_000,
                 batch_size: int = DEFAULT_BATCH_SIZE, num_bins: int = NUM_BINS) -> dict:
    """`unsupervised_scores` of the codes of num_train i.i.d. points of `dataset`."""
    codes, _ = sample_codes_and_factors(
        dataset, representation_fn, rng, num_train, batch_size)
    return unsupervised_scores(codes, num_bins)


CARD_ENTRY = CardEntry(
    "unsupervised", unsupervised, one_sample_parameters,
    headline=("gaussian_total_correlation",),
    notes={"total_correlation": "of a Gaussian with the codes' covariance"})
