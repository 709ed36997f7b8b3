"""Mean correlation coefficient (MCC): how well codes recover known continuous
sources up to permutation, sign and scale, the score of the nonlinear-ICA
experiments of Khemakhem et al., "Variational Autoencoders and Nonlinear ICA: A
Unifying Framework", AISTATS 2020, §6 (and of Hyvärinen & Morioka, "Unsupervised
Feature Extraction by Time-Contrastive Learning and Nonlinear ICA", NeurIPS 2016).

For [n, d] sources and [n, k] codes (k >= d): the [d, k] absolute Pearson
correlations, the one-to-one matching of sources to code dimensions that maximises
their sum (the Hungarian method, scipy's linear_sum_assignment), and the mean of
the matched correlations over the d sources. 1 means every source is an affine
function of its own code dimension; ≈ 0 means codes unrelated to the sources.

Not on the metric card: it needs continuous ground-truth sources, which a
FactorDataset's discrete factors are not (data/nonlinear_ica.py has them).
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import linear_sum_assignment


def check_sources_codes(sources: np.ndarray, codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Validated float64 [n, d] sources and [n, k] codes, k >= d, n >= 2, finite."""
    sources = np.asarray(sources, np.float64)
    codes = np.asarray(codes, np.float64)
    if sources.ndim != 2 or codes.ndim != 2:
        raise ValueError(f"sources and codes must be 2-D [n, d] and [n, k], got "
                         f"{sources.shape} and {codes.shape}")
    if len(sources) != len(codes):
        raise ValueError(f"sources ({len(sources)} rows) and codes ({len(codes)} rows) "
                         "differ in n")
    if len(sources) < 2:
        raise ValueError(f"need at least 2 samples, got {len(sources)}")
    if codes.shape[1] < sources.shape[1]:
        raise ValueError(f"need at least as many code dimensions as sources to match one "
                         f"to one; got {codes.shape[1]} for {sources.shape[1]}")
    if not (np.all(np.isfinite(sources)) and np.all(np.isfinite(codes))):
        raise ValueError("sources or codes hold NaN or inf")
    return sources, codes


def correlation_matrix(sources: np.ndarray, codes: np.ndarray) -> np.ndarray:
    """[d, k] Pearson correlation of each source with each code dimension; a constant
    column correlates 0 with everything."""
    centred_sources = sources - sources.mean(axis=0)
    centred_codes = codes - codes.mean(axis=0)
    norms = np.outer(np.linalg.norm(centred_sources, axis=0),
                     np.linalg.norm(centred_codes, axis=0))
    products = centred_sources.T @ centred_codes
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(norms > 0, products / norms, 0.0)


def best_matching(scores: np.ndarray) -> np.ndarray:
    """[d] the code dimension matched to each source: the one-to-one assignment of the
    [d, k] `scores` (k >= d) with the largest sum."""
    rows, columns = linear_sum_assignment(scores, maximize=True)
    matching = np.empty(scores.shape[0], np.int64)
    matching[rows] = columns
    return matching


def mean_correlation_coefficient(sources: np.ndarray, codes: np.ndarray) -> dict:
    """MCC of [n, k] codes against [n, d] sources (see the module docstring).

    Returns {"mcc": float, "matched_correlations": [d] |ρ| of each source with its
    matched dimension, "matching": [d] that dimension, "correlations": [d, k] signed
    Pearson correlations}.
    """
    sources, codes = check_sources_codes(sources, codes)
    correlations = correlation_matrix(sources, codes)
    matching = best_matching(np.abs(correlations))
    matched = np.abs(correlations[np.arange(len(matching)), matching])
    return {"mcc": float(matched.mean()), "matched_correlations": matched,
            "matching": matching, "correlations": correlations}
