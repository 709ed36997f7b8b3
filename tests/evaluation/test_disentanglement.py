import math

import numpy as np
import pytest
from sklearn.metrics import mutual_info_score

from causal_disent.data.base import FactorDataset
from causal_disent.evaluation import representations
from causal_disent.evaluation.card import metric_card
from causal_disent.evaluation.metrics import (
    betavae,
    common,
    dci,
    factorvae,
    mig,
    modularity_explicitness,
    sap,
    unsupervised,
)

SIZES = (4, 5, 3)


class TinyFactors(FactorDataset):
    """A 1x1 'image' whose channels are the factor indices, so they can be read back."""

    name = "tiny_factors"
    image_shape = (1, 1, len(SIZES))
    factor_names = ("a", "b", "c")
    factor_sizes = SIZES
    factor_values = tuple(np.arange(s, dtype=np.float64) for s in SIZES)

    def _images_at(self, index):
        return self.index_to_factors(index).astype(np.uint8).reshape(len(index), 1, 1, -1)


def identity_fn(images):
    return images.reshape(len(images), -1).astype(np.float64)


def random_fn(seed=0, dims=3):
    noise = np.random.default_rng(seed)
    return lambda images: noise.normal(size=(len(images), dims))


def uniform_factors(n, seed=0, sizes=SIZES):
    return np.random.default_rng(seed).integers(0, sizes, size=(n, len(sizes)))


def rotated(factors):
    """Codes where factors 0 and 1 are mixed at 45 degrees (factor 2 kept)."""
    codes = factors.astype(np.float64)
    codes[:, :2] = codes[:, :2] @ (np.array([[1.0, -1.0], [1.0, 1.0]]) / math.sqrt(2))
    return codes


def entropy(probabilities):
    p = np.asarray(probabilities, np.float64)
    return float(-(p[p > 0] * np.log(p[p > 0])).sum())


# --------------------------------------------------------------------------- #
# discretisation and MI
# --------------------------------------------------------------------------- #
def test_discretize_codes_uses_twenty_equal_width_bins():
    codes = np.stack([np.linspace(0.0, 1.0, 41), np.full(41, 3.0)], axis=1)
    labels = common.discretize_codes(codes)
    assert labels[:, 0].min() == 1 and labels[:, 0].max() == 20
    assert labels[0, 0] == 1 and labels[-1, 0] == 20  # the maximum falls in the last bin
    assert np.all(np.diff(labels[:, 0]) >= 0)
    assert np.bincount(labels[:, 0])[1:].tolist() == [2] * 19 + [3]
    assert len(np.unique(labels[:, 1])) == 1  # a constant code is one bin


def test_mig_on_hand_computed_toy():
    # 8 points, two binary factors; code 0 = factor 0, code 1 = factor 0 OR factor 1.
    f0 = np.array([0, 0, 0, 0, 1, 1, 1, 1])
    f1 = np.array([0, 1, 0, 1, 0, 1, 0, 1])
    factors = np.stack([f0, f1], axis=1)
    codes = np.stack([f0, f0 | f1], axis=1).astype(np.float64)
    result = mig.mig_score(codes, factors)
    log2 = math.log(2)
    # c1 is 1 on 6 of 8 points; given either factor = 0 it is a fair coin, else 1.
    mi_or_f0 = mi_or_f1 = entropy([1 / 4, 3 / 4]) - 0.5 * entropy([1 / 2, 1 / 2])
    expected_mi = np.array([[log2, 0.0], [mi_or_f0, mi_or_f1]])
    np.testing.assert_allclose(result["mutual_info"], expected_mi, atol=1e-12)
    for i in range(2):  # sklearn's mutual_info_score is the reference
        for j in range(2):
            assert result["mutual_info"][i, j] == pytest.approx(
                mutual_info_score(factors[:, j], codes[:, i]))
    np.testing.assert_allclose(result["factor_entropy"], [log2, log2])
    np.testing.assert_allclose(result["mig_per_factor"],
                               [(log2 - mi_or_f0) / log2, mi_or_f1 / log2], atol=1e-12)
    assert result["discrete_mig"] == pytest.approx(np.mean(result["mig_per_factor"]))


def test_mig_identity_constant_shuffled_duplicated_rotated():
    factors = uniform_factors(3000)
    identity = mig.mig_score(factors.astype(np.float32), factors)["discrete_mig"]
    assert identity > 0.98
    assert mig.mig_score(np.ones((3000, 3)), factors)["discrete_mig"] == 0.0
    shuffled = np.random.default_rng(1).permutation(factors)
    assert mig.mig_score(shuffled.astype(float), factors)["discrete_mig"] < 0.02
    duplicated = factors[:, [0, 0, 1, 2]].astype(float)
    result = mig.mig_score(duplicated, factors)
    assert result["mig_per_factor"][0] == pytest.approx(0.0, abs=1e-12)
    assert result["mig_per_factor"][1:].min() > 0.98
    assert mig.mig_score(rotated(factors), factors)["discrete_mig"] < identity - 0.3


# --------------------------------------------------------------------------- #
# SAP
# --------------------------------------------------------------------------- #
def test_sap_identity_high_constant_and_shuffled_low():
    train, test = uniform_factors(600, 0), uniform_factors(300, 1)
    identity = sap.sap_score(train.astype(float), train, test.astype(float), test)
    assert identity["score_matrix"].shape == (3, 3)
    assert identity["sap_score"] > 0.3  # top-1 much above top-2 for every factor
    assert np.all(np.argmax(identity["score_matrix"], axis=0) == [0, 1, 2])
    constant = sap.sap_score(np.zeros((600, 3)), train, np.zeros((300, 3)), test)
    assert constant["sap_score"] == 0.0
    shuffled = sap.sap_score(np.random.default_rng(2).permutation(train).astype(float), train,
                             np.random.default_rng(3).permutation(test).astype(float), test)
    assert shuffled["sap_score"] < 0.1


# --------------------------------------------------------------------------- #
# DCI
# --------------------------------------------------------------------------- #
def test_dci_from_importance_hand_cases():
    ideal = dci.dci_from_importance(np.eye(3))
    assert ideal["disentanglement"] == pytest.approx(1.0, abs=1e-6)
    assert ideal["completeness"] == pytest.approx(1.0, abs=1e-6)
    uniform = dci.dci_from_importance(np.ones((3, 3)))
    assert uniform["disentanglement"] == pytest.approx(0.0, abs=1e-9)
    assert uniform["completeness"] == pytest.approx(0.0, abs=1e-9)
    one_code = dci.dci_from_importance(np.array([[1.0, 1.0], [0.0, 0.0]]))
    assert one_code["disentanglement"] == pytest.approx(0.0, abs=1e-6)  # code 0 serves both
    assert one_code["completeness"] == pytest.approx(1.0, abs=1e-6)  # each factor in one code
    # weighted: code 0 (weight 3/4) pure, code 1 (weight 1/4) split evenly
    mixed = dci.dci_from_importance(np.array([[3.0, 0.0], [0.5, 0.5]]))
    assert mixed["disentanglement"] == pytest.approx(0.75, abs=1e-6)
    assert dci.dci_from_importance(np.zeros((2, 2)))["disentanglement"] == pytest.approx(0.0)


def test_dci_identity_constant_rotated():
    sizes = (3, 4, 3)
    train, test = uniform_factors(300, 0, sizes), uniform_factors(150, 1, sizes)
    identity = dci.dci_scores(train.astype(float), train, test.astype(float), test)
    assert identity["disentanglement"] > 0.95 and identity["completeness"] > 0.95
    assert identity["informativeness_test"] == pytest.approx(1.0)
    assert identity["importance_matrix"].shape == (3, 3)
    constant = dci.dci_scores(np.zeros((300, 3)), train, np.zeros((150, 3)), test)
    assert constant["disentanglement"] == pytest.approx(0.0, abs=1e-9)
    assert constant["informativeness_test"] < 0.5
    mixed = dci.dci_scores(rotated(train), train, rotated(test), test)
    assert mixed["disentanglement"] < identity["disentanglement"] - 0.2



def test_gbt_importances_do_not_depend_on_the_number_of_workers():
    sizes = (3, 4, 3)
    train, test = uniform_factors(200, 0, sizes), uniform_factors(100, 1, sizes)
    codes = rotated(train) + np.random.default_rng(2).normal(0, 0.3, train.shape)
    test_codes = rotated(test)
    one = dci.gbt_importance_matrix(codes, train, test_codes, test, seed=3, num_workers=1)
    two = dci.gbt_importance_matrix(codes, train, test_codes, test, seed=3, num_workers=2)
    for a, b in zip(one, two):
        np.testing.assert_array_equal(a, b)

# --------------------------------------------------------------------------- #
# BetaVAE and FactorVAE on a tiny dataset
# --------------------------------------------------------------------------- #
def test_fixed_factor_batches_share_the_fixed_factor():
    fixed, factors = factorvae.fixed_factor_batches(TinyFactors(), np.random.default_rng(0), 50, 8)
    assert factors.shape == (50, 8, 3)
    for p in range(50):
        assert len(np.unique(factors[p, :, fixed[p]])) == 1
    assert set(fixed.tolist()) == {0, 1, 2}


def test_betavae_features_zero_exactly_at_the_shared_factor():
    features, labels = betavae.betavae_features(
        TinyFactors(), identity_fn, np.random.default_rng(0), 40, batch_size=8)
    assert features.shape == (40, 3)
    np.testing.assert_array_equal(features[np.arange(40), labels], 0.0)


def test_betavae_identity_one_random_chance():
    dataset, rng = TinyFactors(), np.random.default_rng(0)
    identity = betavae.betavae(dataset, identity_fn, rng, num_train=200, num_eval=100,
                               batch_size=16)
    assert identity["eval_accuracy"] > 0.97
    chance = betavae.betavae(dataset, random_fn(), rng, num_train=200, num_eval=300,
                             batch_size=16)
    assert abs(chance["eval_accuracy"] - 1 / 3) < 0.12


def test_factorvae_vote_score_hand_case():
    train = np.array([[5, 0, 1], [1, 4, 3]])  # code 2 is assigned to factor 1
    evaluation = np.array([[2, 1, 0], [0, 1, 2]])
    result = factorvae.factorvae_vote_score(train, evaluation)
    assert result["train_accuracy"] == pytest.approx((5 + 4 + 3) / 14)
    assert result["eval_accuracy"] == pytest.approx((2 + 1 + 2) / 6)


def test_factorvae_identity_one_random_chance_constant_zero():
    dataset, rng = TinyFactors(), np.random.default_rng(0)
    identity = factorvae.factorvae(dataset, identity_fn, rng, num_train=100, num_eval=100,
                                   num_variance_estimate=500, batch_size=16)
    assert identity["eval_accuracy"] == 1.0 and identity["num_active_dims"] == 3
    votes = identity["train_votes"]
    np.testing.assert_array_equal(votes, np.diag(np.diag(votes)))  # factor k votes code k
    chance = factorvae.factorvae(dataset, random_fn(dims=4), rng, num_train=300,
                                 num_eval=300, num_variance_estimate=500, batch_size=16)
    assert abs(chance["eval_accuracy"] - 1 / 3) < 0.12
    dead = factorvae.factorvae(dataset, lambda x: np.zeros((len(x), 2)), rng,
                               num_train=10, num_eval=10, num_variance_estimate=50)
    assert dead == {"train_accuracy": 0.0, "eval_accuracy": 0.0, "num_active_dims": 0}


def test_factorvae_prunes_codes_with_small_std():
    codes = np.zeros((2, 4, 3))
    codes[:, :, 0] = [[0, 0, 0, 0], [0, 0, 0, 0]]  # zero local variance but inactive
    codes[:, :, 1] = [[0, 1, 0, 1], [0, 0, 0, 0.5]]
    codes[:, :, 2] = [[0, 0.1, 0, 0.1], [0, 1, 0, 1]]
    voted = factorvae.factorvae_argmin_codes(codes, np.array([1e-4, 1.0, 1.0]))
    np.testing.assert_array_equal(voted, [2, 1])


# --------------------------------------------------------------------------- #
# modularity, explicitness, unsupervised
# --------------------------------------------------------------------------- #
def test_modularity_hand_cases():
    modularity = modularity_explicitness.modularity_from_mutual_info
    assert modularity(np.eye(3))[0] == pytest.approx(1.0)
    # one code equally informative about 2 of 3 factors: 1 - 1 / 2
    value, per_code = modularity(np.array([[1.0, 1.0, 0.0], [0, 0, 0]]))
    np.testing.assert_allclose(per_code, [0.5, 0.0])  # a dead code scores 0
    assert value == pytest.approx(0.25)


def test_modularity_explicitness_identity_and_random():
    train, test = uniform_factors(800, 0), uniform_factors(400, 1)
    scores = modularity_explicitness.modularity_explicitness_scores
    identity = scores(train.astype(float), train, test.astype(float), test)
    assert identity["modularity_score"] > 0.98
    assert identity["explicitness_score_test"] > 0.9
    noise = np.random.default_rng(5)
    random = scores(noise.normal(size=(800, 3)), train, noise.normal(size=(400, 3)), test)
    assert abs(random["explicitness_score_test"] - 0.5) < 0.1
    assert random["explicitness_score_test"] < identity["explicitness_score_test"] - 0.3
    rotated_scores = scores(rotated(train), train, rotated(test), test)
    assert rotated_scores["modularity_score"] < identity["modularity_score"] - 0.1


def test_gaussian_total_correlation():
    assert unsupervised.gaussian_total_correlation(np.diag([1.0, 4.0, 0.5])) == pytest.approx(0.0)
    rho = 0.6
    covariance = np.array([[2.0, rho * 2.0], [rho * 2.0, 2.0]])
    expected = -0.5 * math.log(1 - rho**2)
    assert unsupervised.gaussian_total_correlation(covariance) == pytest.approx(expected)
    assert unsupervised.gaussian_wasserstein_correlation(np.diag([1.0, 3.0])) == pytest.approx(
        0.0, abs=1e-9)
    independent = unsupervised.unsupervised_scores(
        np.random.default_rng(0).normal(size=(2000, 3)))
    assert independent["gaussian_total_correlation"] < 0.01
    z = np.random.default_rng(1).normal(size=(4000, 2))
    correlated = np.stack([z[:, 0], rho * z[:, 0] + math.sqrt(1 - rho**2) * z[:, 1]], axis=1)
    assert unsupervised.unsupervised_scores(correlated)[
        "gaussian_total_correlation"] == pytest.approx(-0.5 * math.log(1 - rho**2), abs=0.03)
    assert independent["mutual_info_score"] < 0.2


def test_gaussian_scores_of_singular_covariances_are_defined_without_warnings():
    """A collapsed (constant) unit adds no total correlation, where the textbook
    formula gives NaN; linearly dependent units have an infinite one; the
    Wasserstein score matches scipy's matrix square root where that is exact."""
    import warnings

    import scipy.linalg

    rho = 0.6
    pair = np.array([[2.0, rho * 2.0], [rho * 2.0, 2.0]])
    with_constant = np.zeros((3, 3))
    with_constant[:2, :2] = pair
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert unsupervised.gaussian_total_correlation(with_constant) == pytest.approx(
            -0.5 * math.log(1 - rho**2))
        assert unsupervised.gaussian_total_correlation(np.ones((2, 2))) == math.inf
        assert unsupervised.gaussian_total_correlation(np.zeros((2, 2))) == 0.0
        codes = np.random.default_rng(0).normal(size=(500, 3))
        codes[:, 1] = 0.5  # a collapsed unit
        scores = unsupervised.unsupervised_scores(codes)
        assert scores["num_constant_dimensions"] == 1
        assert np.isfinite(scores["gaussian_total_correlation"])
        singular_w = unsupervised.gaussian_wasserstein_correlation(with_constant)
    assert singular_w == pytest.approx(unsupervised.gaussian_wasserstein_correlation(pair))
    covariance = np.cov(np.random.default_rng(1).normal(size=(50, 4)) @ np.ones((4, 4)) * 0.3
                        + np.random.default_rng(2).normal(size=(50, 4)), rowvar=False)
    reference = 2 * np.trace(covariance) - 2 * np.trace(np.real(
        scipy.linalg.sqrtm(covariance * np.diag(covariance)[:, None])))
    assert unsupervised.gaussian_wasserstein_correlation(covariance) == pytest.approx(reference)


# --------------------------------------------------------------------------- #
# end to end through a dataset, and bad input
# --------------------------------------------------------------------------- #
def test_sampling_metrics_run_on_tiny_dataset():
    dataset, rng = TinyFactors(), np.random.default_rng(0)
    assert mig.mig(dataset, identity_fn, rng, num_train=1000)["discrete_mig"] > 0.95
    assert sap.sap(dataset, identity_fn, rng, num_train=300, num_test=200)[
        "sap_score"] > 0.2
    dci_result = dci.dci(dataset, identity_fn, rng, num_train=200, num_test=100)
    assert dci_result["disentanglement"] > 0.9 and dci_result["informativeness_test"] == 1.0
    modular = modularity_explicitness.modularity_explicitness(
        dataset, identity_fn, rng, num_train=300, num_test=200)
    assert modular["modularity_score"] > 0.95 and modular["explicitness_score_test"] > 0.9
    codes = unsupervised.unsupervised(dataset, identity_fn, rng, num_train=500)
    assert codes["gaussian_total_correlation"] < 0.05


class TinyFactorsWithNuisance(TinyFactors):
    """TinyFactors whose factor "b" is a nuisance, as SmallNORB's instance."""

    name = "tiny_factors_nuisance"
    nuisance_factors = (1,)


def test_a_nuisance_factor_varies_in_the_images_but_is_never_scored():
    dataset, rng = TinyFactorsWithNuisance(), np.random.default_rng(0)
    codes, factors = common.sample_codes_and_factors(dataset, identity_fn, rng, 400)
    np.testing.assert_array_equal(codes[:, [0, 2]], factors)  # only "a" and "c" returned
    assert len(np.unique(codes[:, 1])) == SIZES[1]  # while "b" varies in the images

    def scored_codes(images):  # holds the scored factors and nothing of the nuisance
        return identity_fn(images)[:, [0, 2]]

    # Scored over all three factors these codes would lose a third of MIG and of the
    # FactorVAE votes (disentanglement_lib scores SmallNORB without its instance).
    assert mig.mig(dataset, scored_codes, rng, num_train=1000)["discrete_mig"] > 0.95
    votes = factorvae.factorvae(dataset, scored_codes, rng, num_train=100, num_eval=100,
                                num_variance_estimate=500, batch_size=16)
    assert votes["eval_accuracy"] == 1.0 and votes["eval_votes"].shape == (2, 2)
    features, labels = betavae.betavae_features(dataset, identity_fn, rng, 40, batch_size=8)
    assert set(labels.tolist()) == {0, 1}
    np.testing.assert_array_equal(features[np.arange(40), np.array([0, 2])[labels]], 0.0)


def test_the_card_and_its_ceiling_leave_a_nuisance_factor_out():
    dataset = TinyFactorsWithNuisance()
    card = metric_card(dataset, representations.identity_representation(dataset), ["mig"],
                       num_samples=500)
    assert card["dataset"]["factor_names"] == ["a", "c"]
    assert card["dataset"]["factor_sizes"] == [SIZES[0], SIZES[2]]
    assert card["dataset"]["unscored_factors"] == ["b"]
    assert card["metrics"]["mig"]["scores"]["discrete_mig"] > 0.95
    assert "unscored_factors" not in metric_card(
        TinyFactors(), representations.identity_representation(TinyFactors()), ["mig"],
        num_samples=50)["dataset"]


def test_bad_inputs_fail_clearly():
    with pytest.raises(ValueError, match="differ in n"):
        mig.mig_score(np.zeros((5, 2)), np.zeros((4, 2), int))
    with pytest.raises(ValueError, match="integer"):
        mig.mig_score(np.zeros((5, 2)), np.zeros((5, 2)))
    with pytest.raises(ValueError, match=r"\[B, D\]"):
        common.representations_of(TinyFactors(), lambda x: np.zeros(len(x)),
                                  np.zeros((3, 3), int))
