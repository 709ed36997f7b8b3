"""The mean correlation coefficient: 1 for sources recovered up to permutation, sign,
scale and shift, ≈ 0 for unrelated codes, a case by hand, and the best matching
where the greedy one is worse."""

import numpy as np
import pytest

from causal_disent.evaluation.metrics import mcc


def test_a_permuted_sign_flipped_scaled_copy_scores_one():
    sources = np.random.default_rng(0).normal(size=(500, 4))
    permutation = np.array([2, 0, 3, 1])
    codes = sources[:, permutation] * np.array([-3.0, 0.5, 2.0, -0.1]) + 7.0
    result = mcc.mean_correlation_coefficient(sources, codes)
    np.testing.assert_allclose(result["mcc"], 1.0, rtol=1e-12)
    # Source j sits in code dimension argsort(permutation)[j].
    np.testing.assert_array_equal(result["matching"], np.argsort(permutation))
    np.testing.assert_allclose(np.abs(result["correlations"]).max(axis=1), 1.0, rtol=1e-12)


def test_independent_noise_scores_near_zero():
    rng = np.random.default_rng(1)
    result = mcc.mean_correlation_coefficient(rng.normal(size=(200_000, 3)),
                                              rng.normal(size=(200_000, 3)))
    # |ρ| of independent samples is about 1/√n = 0.002; the best matching of nine
    # such values stays below 0.01.
    assert result["mcc"] < 0.01


def test_hand_case():
    s1, s2 = np.array([1.0, 1, -1, -1]), np.array([1.0, -1, 1, -1])  # orthogonal, mean 0
    sources = np.stack([s1, s2], axis=1)
    codes = np.stack([s2, s1 + s2], axis=1)
    result = mcc.mean_correlation_coefficient(sources, codes)
    # ρ(s1, s2) = 0, ρ(s1, s1 + s2) = ρ(s2, s1 + s2) = 1/√2, ρ(s2, s2) = 1: the best
    # matching puts s2 on code 0 and s1 on code 1.
    np.testing.assert_allclose(result["correlations"],
                               [[0.0, 1 / np.sqrt(2)], [1.0, 1 / np.sqrt(2)]], atol=1e-12)
    np.testing.assert_array_equal(result["matching"], [1, 0])
    np.testing.assert_allclose(result["mcc"], (1 / np.sqrt(2) + 1) / 2, rtol=1e-12)


def test_best_matching_beats_the_greedy_one():
    # Greedy takes 0.9 first and is left with 0.1 (sum 1.0); the best sum is 0.8 + 0.8.
    np.testing.assert_array_equal(mcc.best_matching(np.array([[0.9, 0.8], [0.8, 0.1]])),
                                  [1, 0])


def test_extra_and_constant_code_dimensions():
    rng = np.random.default_rng(2)
    sources = rng.normal(size=(300, 2))
    codes = np.hstack([np.full((300, 1), 4.0), rng.normal(size=(300, 1)), sources[:, ::-1]])
    result = mcc.mean_correlation_coefficient(sources, codes)
    np.testing.assert_array_equal(result["correlations"][:, 0], 0.0)  # constant: 0, no NaN
    np.testing.assert_array_equal(result["matching"], [3, 2])
    np.testing.assert_allclose(result["mcc"], 1.0, rtol=1e-12)


@pytest.mark.parametrize("sources, codes, message", [
    (np.zeros((5, 3)), np.zeros((5, 2)), "at least as many code dimensions as sources"),
    (np.zeros((5, 2)), np.zeros((4, 2)), r"sources \(5 rows\) and codes \(4 rows\) differ"),
    (np.zeros(5), np.zeros((5, 1)), "must be 2-D"),
    (np.zeros((1, 1)), np.zeros((1, 1)), "need at least 2 samples"),
    (np.zeros((3, 1)), np.array([[0.0], [np.nan], [1.0]]), "NaN or inf"),
])
def test_bad_inputs_are_refused(sources, codes, message):
    with pytest.raises(ValueError, match=message):
        mcc.mean_correlation_coefficient(sources, codes)
