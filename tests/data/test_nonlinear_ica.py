"""The synthetic nonlinear-ICA data: shapes, one seed fixes everything, the mixing is
a well-conditioned bijection (inverted exactly), and the segments modulate the
sources' variances (and means)."""

import numpy as np
import pytest

from causal_disent.data import nonlinear_ica


@pytest.fixture(scope="module")
def data():
    return nonlinear_ica.make_nonlinear_ica(seed=3, num_sources=4, num_segments=6,
                                            points_per_segment=2000)


def test_shapes_and_one_hot_segments(data):
    n = 6 * 2000
    assert data.x.shape == data.s.shape == (n, 4)
    assert data.u.shape == (n, 6) and data.u.dtype == np.float32
    np.testing.assert_array_equal(data.u.sum(axis=1), 1.0)
    np.testing.assert_array_equal(data.u.argmax(axis=1), data.segment)
    np.testing.assert_array_equal(np.bincount(data.segment), [2000] * 6)
    assert data.means.shape == data.stds.shape == (6, 4)
    assert len(data.weights) == 3 and all(w.shape == (4, 4) for w in data.weights)


def test_one_seed_fixes_everything_and_another_changes_it(data):
    again = nonlinear_ica.make_nonlinear_ica(seed=3, num_sources=4, num_segments=6,
                                             points_per_segment=2000)
    for name in ("x", "s", "u", "means", "stds"):
        np.testing.assert_array_equal(getattr(again, name), getattr(data, name))
    other = nonlinear_ica.make_nonlinear_ica(seed=4, num_sources=4, num_segments=6,
                                             points_per_segment=2000)
    assert not np.allclose(other.x, data.x)


@pytest.mark.parametrize("matrices, activation, slope", [
    ("orthogonal", "leaky_relu", 0.2), ("lower_quartile", "leaky_relu", 0.2),
    ("uniform_lower_quartile", "xtanh", 0.1)])  # the last: the iVAE authors' data
def test_the_mixing_is_a_well_conditioned_bijection(matrices, activation, slope):
    data = nonlinear_ica.make_nonlinear_ica(seed=3, num_sources=4, num_segments=6,
                                            points_per_segment=2000, matrices=matrices,
                                            activation=activation, slope=slope)
    assert (data.activation, data.slope) == (activation, slope)
    np.testing.assert_allclose(
        nonlinear_ica.unmix(data.x, data.weights, slope, activation), data.s,
        rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(
        nonlinear_ica.mix(data.s, data.weights, slope, activation), data.x)
    for weight in data.weights:
        if matrices == "orthogonal":
            np.testing.assert_allclose(weight.T @ weight, np.eye(4), atol=1e-12)
        elif matrices == "lower_quartile":
            np.testing.assert_allclose(np.linalg.norm(weight, axis=0), 1.0)
            # Below the lower quartile of 4x4 unit-column Gaussian matrices (about 4.6).
            assert 1.2 < np.linalg.cond(weight) < 5.5
        else:  # the authors': U(−1, 1) entries, unit-norm rows (their A's columns)
            assert np.all(np.abs(weight) <= 1.0)
            np.testing.assert_allclose(np.linalg.norm(weight, axis=1), 1.0)
            assert np.linalg.cond(weight) <= np.quantile(
                [np.linalg.cond(nonlinear_ica.random_unit_row_uniform_matrix(
                    np.random.default_rng(seed), 4)) for seed in range(2000)], 0.3)
    # The activation bends: f is not affine (the best affine fit leaves a residual).
    design = np.hstack([data.s, np.ones((len(data.s), 1))])
    residual = data.x - design @ np.linalg.lstsq(design, data.x, rcond=None)[0]
    assert residual.std() > 0.1 * data.x.std()


def test_one_matrix_mixes_in_every_layer_when_repeated():
    data = nonlinear_ica.make_nonlinear_ica(seed=5, num_sources=3, num_segments=2,
                                            points_per_segment=10, num_layers=3,
                                            matrices="uniform_lower_quartile",
                                            repeat_matrix=True)
    assert len(data.weights) == 3
    assert data.weights[0] is data.weights[1] is data.weights[2]


def test_orthogonal_matrices_are_haar_distributed_in_sign():
    # QR alone would tie the signs of Q to R's; the correction makes every entry's
    # sign a fair coin.
    rng = np.random.default_rng(0)
    draws = np.stack([nonlinear_ica.random_orthogonal_matrix(rng, 3) for _ in range(4000)])
    np.testing.assert_allclose(np.mean(draws > 0, axis=0), 0.5, atol=0.04)


def test_leaky_relu_inverse_by_hand():
    y = nonlinear_ica.leaky_relu(np.array([-2.0, 0.0, 3.0]), 0.2)
    np.testing.assert_allclose(y, [-0.4, 0.0, 3.0])
    np.testing.assert_allclose(nonlinear_ica.inverse_leaky_relu(y, 0.2), [-2.0, 0.0, 3.0])


def test_xtanh_inverse_by_hand():
    x = np.array([-40.0, -2.0, 0.0, 0.3, 3.0, 25.0])
    y = nonlinear_ica.xtanh(x, 0.1)
    np.testing.assert_allclose(y[2:4], [0.0, np.tanh(0.3) + 0.03])
    np.testing.assert_allclose(nonlinear_ica.inverse_xtanh(y, 0.1), x, rtol=1e-12,
                               atol=1e-12)


def test_one_layer_is_linear_mixing():
    data = nonlinear_ica.make_nonlinear_ica(seed=0, num_sources=3, num_segments=2,
                                            points_per_segment=10, num_layers=1)
    np.testing.assert_allclose(data.x, data.s @ data.weights[0].T)


@pytest.mark.parametrize("distribution", ["gaussian", "laplace"])
def test_segments_modulate_the_sources_variances(distribution):
    data = nonlinear_ica.make_nonlinear_ica(seed=1, num_sources=3, num_segments=5,
                                            points_per_segment=20_000,
                                            distribution=distribution)
    # Every segment and source has its own standard deviation, drawn in std_range,
    # which the samples match.
    assert np.all((data.stds >= 0.5) & (data.stds <= 3.0))
    assert len(np.unique(data.stds)) == data.stds.size
    assert np.all(data.stds.max(axis=0) / data.stds.min(axis=0) > 1.5)
    sample_stds = np.stack([data.s[data.segment == m].std(axis=0) for m in range(5)])
    np.testing.assert_allclose(sample_stds, data.stds, rtol=0.05)
    np.testing.assert_array_equal(data.means, 0.0)
    # Laplace sources have heavier tails: excess kurtosis 3 against 0.
    standardised = (data.s - data.means[data.segment]) / data.stds[data.segment]
    kurtosis = np.mean(standardised**4) - 3
    assert abs(kurtosis - (3.0 if distribution == "laplace" else 0.0)) < 0.3


def test_mean_range_draws_per_segment_means():
    data = nonlinear_ica.make_nonlinear_ica(seed=2, num_sources=2, num_segments=4,
                                            points_per_segment=20_000, mean_range=5.0)
    assert np.all(np.abs(data.means) <= 5.0) and np.abs(data.means).max() > 1.0
    sample_means = np.stack([data.s[data.segment == m].mean(axis=0) for m in range(4)])
    np.testing.assert_allclose(sample_means, data.means, atol=0.1)


@pytest.mark.parametrize("override, message", [
    ({"num_sources": 0}, "num_sources must be positive, got 0"),
    ({"num_layers": 0}, "num_layers must be positive, got 0"),
    ({"distribution": "uniform"}, "distribution 'uniform' is unknown"),
    ({"std_range": (0.0, 1.0)}, r"std_range must be \(low, high\) with 0 < low <= high"),
    ({"mean_range": -1.0}, "mean_range must be >= 0"),
    ({"slope": 0.0}, r"slope must be in \(0, 1\]"),
    ({"matrices": "random"}, "matrices 'random' is unknown; known: orthogonal, "
                             "lower_quartile, uniform_lower_quartile"),
    ({"activation": "relu"}, "activation 'relu' is unknown; known: leaky_relu, xtanh"),
])
def test_bad_arguments_name_themselves(override, message):
    with pytest.raises(ValueError, match=message):
        nonlinear_ica.make_nonlinear_ica(seed=0, **override)
