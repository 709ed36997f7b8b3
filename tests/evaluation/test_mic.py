import itertools

import numpy as np
import pytest

from causal_disent.evaluation.metrics import mic

RNG_SEED = 0


def uniform(n, seed=RNG_SEED):
    return np.random.default_rng(seed).uniform(-1.0, 1.0, n)


@pytest.mark.parametrize(
    "function", [lambda x: 2 * x + 1, np.square, lambda x: np.sin(2 * np.pi * x), np.exp],
    ids=["linear", "parabola", "sine", "exponential"],
)
def test_noiseless_functions_score_one(function):
    x = uniform(500)
    score, total = mic.mic_and_tic(x, function(x))
    assert score == pytest.approx(1.0, abs=1e-9)
    assert 0.5 < total <= 1.0 + 1e-9


def test_independent_noise_scores_low_and_falls_with_n():
    def mean_noise_mic(n):
        return np.mean([mic.mic(uniform(n, seed), uniform(n, seed + 100)) for seed in range(3)])

    small, large = mean_noise_mic(100), mean_noise_mic(1000)
    assert large < 0.2
    assert large < small


def test_symmetric_and_invariant_under_increasing_transforms():
    x = uniform(400)
    y = x**2 + 0.2 * uniform(400, seed=1)
    matrix = mic.characteristic_matrix(x, y)
    np.testing.assert_array_equal(mic.characteristic_matrix(y, x), matrix.T)
    assert mic.mic_and_tic(np.exp(3 * x), y**3 + 5) == mic.mic_and_tic(x, y)
    assert mic.mic_and_tic(np.argsort(np.argsort(x)), y) == mic.mic_and_tic(x, y)


def test_noisy_linear_mic_falls_as_noise_grows():
    x, noise = uniform(500), uniform(500, seed=1)
    scores = [mic.mic(x, x + scale * noise) for scale in (0.05, 0.3, 1.0, 3.0)]
    assert all(a > b for a, b in zip(scores, scores[1:])), scores
    assert scores[0] > 0.8 and scores[-1] < 0.35


def test_normalised_tic_in_unit_interval_and_higher_for_functions():
    x = uniform(500)
    functional = mic.tic(x, np.cos(3 * x))
    noise = mic.tic(x, uniform(500, seed=1))
    assert 0.0 <= noise < functional <= 1.0
    # normalised TIC is the mean cell of the characteristic matrix
    matrix = mic.characteristic_matrix(x, np.cos(3 * x))
    assert mic.tic(x, np.cos(3 * x), normalized=False) == pytest.approx(np.nansum(matrix))
    assert functional == pytest.approx(np.nanmean(matrix))


def test_matches_minepy_published_example():
    # minepy docs (examples/python_example.py, alpha=0.6, c=15): MIC and raw TIC.
    x = np.linspace(0, 1, 1000)
    y = np.sin(10 * np.pi * x) + x
    assert mic.mic_and_tic(x, y, normalized=False) == pytest.approx((1.0, 67.6612295532), rel=1e-10)
    y = y + np.random.RandomState(0).uniform(-1, 1, 1000)  # minepy's np.random.seed(0)
    assert mic.mic_and_tic(x, y, normalized=False) == pytest.approx(
        (0.505716693417, 28.7498326953), rel=1e-10
    )


def test_constant_and_tied_inputs():
    x = uniform(200)
    assert mic.mic_and_tic(np.full(200, 3.0), x) == (0.0, 0.0)
    assert mic.mic_and_tic(x, np.zeros(200)) == (0.0, 0.0)
    # A binary step of x: the best grid carries all of H(step), normalised by log 2.
    step = (x > 0).astype(float)
    fraction = step.mean()
    step_entropy = -fraction * np.log(fraction) - (1 - fraction) * np.log(1 - fraction)
    assert mic.mic(step, x) == pytest.approx(step_entropy / np.log(2))
    rounded = np.round(x, 1)  # 21 distinct values; unequal ties keep bins uneven
    assert mic.mic(rounded, x) > 0.99
    assert 0.0 <= mic.mic(rounded, uniform(200, seed=1)) < 0.5


# -- the grid search against brute force on tiny samples ------------------------ #
def partitions(values, max_bins):
    """Every partition of the sorted distinct values into at most max_bins intervals,
    as a [n] bin label per point."""
    distinct = np.unique(values)
    rank = np.searchsorted(distinct, values)
    for num_cuts in range(max_bins):
        for cuts in itertools.combinations(range(1, len(distinct)), num_cuts):
            yield np.searchsorted(np.array(cuts), rank, side="right")


def mutual_information(a, b):
    joint = np.zeros((a.max() + 1, b.max() + 1))
    np.add.at(joint, (a, b), 1.0)
    joint /= joint.sum()
    outer = joint.sum(1, keepdims=True) * joint.sum(0, keepdims=True)
    nonzero = joint > 0
    return float(np.sum(joint[nonzero] * np.log(joint[nonzero] / outer[nonzero])))


def equipartition(values, num_bins):
    _, rank, sizes = np.unique(values, return_inverse=True, return_counts=True)
    return mic._equipartition(sizes, num_bins)[rank]


@pytest.mark.parametrize("seed, ties", [(0, False), (1, False), (2, True)])
def test_characteristic_matrix_against_brute_force(seed, ties):
    # alpha = 1: B = n = 8 allows grids up to 4x2, 2x4 and 2x3 on 8 points.
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 4, 8) if ties else rng.normal(size=8)
    y = rng.normal(size=8)
    matrix = mic.characteristic_matrix(x, y, alpha=1.0)
    assert matrix.shape == (3, 3)
    for i, j in np.ndindex(matrix.shape):
        columns, rows = i + 2, j + 2
        if columns * rows > 8:
            assert np.isnan(matrix[i, j])
            continue
        # Exact given the equipartitioned axis: with no superclumps on 8 points the
        # dynamic programme over clump boundaries finds the best cut of the other
        # axis (a line inside a one-row clump can move to its edge without loss).
        x_rows = equipartition(y, rows)
        best_x = max(mutual_information(p, x_rows) for p in partitions(x, columns))
        best_x /= np.log(min(columns, x_rows.max() + 1))
        y_columns = equipartition(x, columns)
        best_y = max(mutual_information(y_columns, p) for p in partitions(y, rows))
        best_y /= np.log(min(rows, y_columns.max() + 1))
        assert matrix[i, j] == pytest.approx(max(best_x, best_y), abs=1e-9)
        # ... and never above the maximal information over every grid.
        if not ties:  # distinct values: the equipartitions have all their bins
            exact = max(
                mutual_information(p, q)
                for p in partitions(x, columns) for q in partitions(y, rows)
            ) / np.log(min(columns, rows))
            assert matrix[i, j] <= exact + 1e-9
            both_equal = mutual_information(equipartition(x, columns), equipartition(y, rows))
            assert matrix[i, j] >= both_equal / np.log(min(columns, rows)) - 1e-9


def test_equipartition_keeps_ties_and_balances_counts():
    labels = mic._equipartition(np.ones(12, np.int64), 4)
    np.testing.assert_array_equal(np.bincount(labels), [3, 3, 3, 3])
    labels = mic._equipartition(np.array([1, 5, 1, 1, 1, 1]), 3)  # a tie of 5 points
    assert labels.max() + 1 <= 3 and np.all(np.diff(labels) >= 0)


# -- concepts vs labels --------------------------------------------------------- #
def test_concept_mic_tic_high_for_monotone_concepts_and_low_when_shuffled():
    rng = np.random.default_rng(0)
    labels = rng.uniform(-1.0, 1.0, (400, 3))
    concepts = np.tanh(2 * labels) + 0.02 * rng.normal(size=labels.shape)
    good = mic.concept_mic_tic(concepts, labels)
    shuffled = mic.concept_mic_tic(concepts, rng.permutation(labels))
    assert good["mic"] > 90 and good["tic"] > 60
    assert shuffled["mic"] < 30 and shuffled["tic"] < 15
    assert len(good["mic_per_concept"]) == 3
    assert good["mic"] == pytest.approx(np.mean(good["mic_per_concept"]))


@pytest.mark.parametrize(
    "x, y, kwargs",
    [(np.zeros(5), np.zeros(6), {}), (np.zeros((5, 2)), np.zeros((5, 2)), {}),
     (np.zeros(1), np.zeros(1), {}), (np.array([0.0, np.nan]), np.zeros(2), {}),
     (np.zeros(5), np.zeros(5), {"alpha": 1.5}), (np.zeros(5), np.zeros(5), {"clumps_factor": 0})],
)
def test_rejects_bad_input(x, y, kwargs):
    with pytest.raises(ValueError):
        mic.mic(x, y, **kwargs)


def test_concept_mic_tic_rejects_mismatched_shapes():
    with pytest.raises(ValueError, match="one shape"):
        mic.concept_mic_tic(np.zeros((10, 3)), np.zeros((10, 2)))
