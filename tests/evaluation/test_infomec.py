"""InfoM, InfoE and InfoC (evaluation/metrics/infomec.py) against the definition of
Hsu et al. (NeurIPS 2023, §5), computed by hand on small arrays."""

import math

import numpy as np
import pytest

from causal_disent.evaluation.metrics import infomec


def test_infom_and_infoc_follow_the_definition_on_a_hand_made_matrix():
    # Latent 0 holds source 0 alone; latent 1 holds half of source 0 and half of 1.
    nmi = np.array([[1.0, 0.5],
                    [0.0, 0.5]])
    infom, infoc = infomec.infom_infoc(nmi)
    # InfoM: shares max/sum per latent 1 and 0.5, mean 0.75, rescaled over F = 2.
    assert infom == pytest.approx((0.75 - 0.5) / 0.5)
    # InfoC: shares per source 1/1.5 and 1, mean 5/6, rescaled over L = 2.
    assert infoc == pytest.approx((5 / 6 - 0.5) / 0.5)


def test_a_latent_without_information_counts_as_spread_evenly():
    infom, _ = infomec.infom_infoc(np.array([[1.0, 0.0], [0.0, 0.0], [0.0, 0.0]]))
    # Latent 0's share 1, latent 1's taken as 1/3: mean 2/3, rescaled over F = 3.
    assert infom == pytest.approx((2 / 3 - 1 / 3) / (1 - 1 / 3))


def test_one_source_or_one_latent_leaves_nothing_to_be_modular_or_compact_over():
    infom, infoc = infomec.infom_infoc(np.array([[0.7, 0.2]]))
    assert math.isnan(infom) and infoc == pytest.approx((0.7 / 0.9 - 0.5) / 0.5)
    infom, infoc = infomec.infom_infoc(np.array([[0.7], [0.2]]))
    assert math.isnan(infoc) and infom == pytest.approx((0.7 / 0.9 - 0.5) / 0.5)


def test_discrete_nmi_is_the_mutual_information_over_the_source_entropy():
    source = np.array([0, 0, 1, 1])
    codes = np.stack([source, [0, 1, 0, 1], [0, 0, 0, 1]], axis=1)
    nmi = infomec.normalized_mutual_info(codes, source[:, None], True,
                                         np.random.default_rng(0))
    # p(s, z) for the third code: (0, 0) 1/2, (1, 0) 1/4, (1, 1) 1/4.
    by_hand = (0.5 * math.log(0.5 / (0.5 * 0.75)) + 0.25 * math.log(0.25 / (0.5 * 0.75))
               + 0.25 * math.log(0.25 / (0.5 * 0.25))) / math.log(2)
    np.testing.assert_allclose(nmi, [[1.0, 0.0, by_hand]], atol=1e-12)


def test_active_latents_drop_narrow_continuous_and_constant_discrete_dimensions():
    continuous = np.array([[0.0, 0.0, 0.0], [1.0, 0.04, 0.06]])
    assert infomec.active_latents(continuous, discrete=False).tolist() == [True, False, True]
    discrete = np.array([[0, 3, 1], [1, 3, 1], [2, 3, 2]])
    assert infomec.active_latents(discrete, discrete=True).tolist() == [True, False, True]


def test_codes_are_discrete_when_integer_valued_with_few_values():
    assert infomec.codes_are_discrete(np.array([[0.0, 2.0], [1.0, 5.0]]))
    assert not infomec.codes_are_discrete(np.array([[0.5, 2.0], [1.0, 5.0]]))
    assert not infomec.codes_are_discrete(np.arange(300.0)[:, None])


def grid_factors(sizes=(3, 4, 5), repeats=8):
    grid = np.stack(np.meshgrid(*[np.arange(size) for size in sizes], indexing="ij"), -1)
    return np.tile(grid.reshape(-1, len(sizes)), (repeats, 1))


def test_the_factors_themselves_reach_the_ceiling():
    factors = grid_factors()
    scores = infomec.infomec_scores(factors[:, ::-1], factors, np.random.default_rng(0))
    assert scores["discrete_codes"]
    assert scores["infom"] == pytest.approx(1.0) and scores["infoc"] == pytest.approx(1.0)
    assert scores["infoe"] > 0.99
    np.testing.assert_allclose(scores["nmi"], np.eye(3)[:, ::-1], atol=1e-12)


def test_continuous_codes_one_per_factor_score_high_and_mixed_codes_low():
    rng = np.random.default_rng(1)
    factors = grid_factors(repeats=10)
    aligned = factors + rng.normal(0, 0.05, factors.shape)
    aligned_scores = infomec.infomec_scores(aligned, factors, np.random.default_rng(2))
    assert not aligned_scores["discrete_codes"]
    assert aligned_scores["infom"] > 0.9 and aligned_scores["infoc"] > 0.9
    assert aligned_scores["infoe"] > 0.9
    rotation, _ = np.linalg.qr(rng.normal(size=(3, 3)))
    mixed = (factors / factors.max(axis=0)) @ rotation
    mixed_scores = infomec.infomec_scores(mixed, factors, np.random.default_rng(2))
    assert mixed_scores["infom"] < aligned_scores["infom"] - 0.3
    assert mixed_scores["infoc"] < aligned_scores["infoc"] - 0.3


def test_codes_independent_of_the_factors_explain_nothing():
    factors = grid_factors(repeats=10)
    noise = np.random.default_rng(3).normal(size=(len(factors), 4))
    assert infomec.infoe(noise, factors, False, seed=0) < 0.05


def test_one_rng_fixes_the_result():
    factors = grid_factors()
    codes = factors + np.random.default_rng(4).normal(0, 0.3, factors.shape)
    first = infomec.infomec_scores(codes, factors, np.random.default_rng(5))
    second = infomec.infomec_scores(codes, factors, np.random.default_rng(5))
    assert (first["infom"], first["infoe"], first["infoc"]) == (
        second["infom"], second["infoe"], second["infoc"])
