"""Pairs for the weakly-supervised VAEs (data/weak_pairs.py): k-factor resampled pairs
as disentanglement_lib's simple_dynamics(k) draws them, inside one split, reproducible
per step; CT-VAE's transitions as the k = 1 source; bad sections refused."""

import ml_collections
import numpy as np
import pytest

from causal_disent.data import transitions, weak_pairs
from causal_disent.data.shapes3d_synth import FACTOR_SIZES, Shapes3DSynth
from causal_disent.data.splits import split_indices


@pytest.fixture(scope="module")
def dataset():
    return Shapes3DSynth()


@pytest.fixture(scope="module")
def split(dataset):
    return split_indices(dataset.num_images, (0.7, 0.15, 0.15), seed=0)


def factors_of(index):
    return np.stack(np.unravel_index(index, FACTOR_SIZES), axis=1)


def pairs_config(source, k):
    return ml_collections.ConfigDict({"source": source, "k": k})


@pytest.mark.parametrize("k", [1, 2, 4])
def test_resampled_pairs_change_at_most_the_drawn_factors_inside_the_split(dataset, split, k):
    source = weak_pairs.ResampledFactorPairs(dataset, split, seed=0, k=k)
    pairs = source.batch("train", 7, 4000)
    train = set(split["train"].tolist())
    assert all(i in train for i in pairs["x_index"]) and all(i in train for i in pairs["y_index"])
    differing = (factors_of(pairs["x_index"]) != factors_of(pairs["y_index"])).sum(axis=1)
    assert np.all(differing <= pairs["num_changed"])
    # The count is 1 or k, each half of the time.
    assert set(np.unique(pairs["num_changed"])) == ({1} if k == 1 else {1, k})
    if k > 1:
        assert abs(np.mean(pairs["num_changed"] == k) - 0.5) < 0.04


def test_each_factor_is_resampled_as_often_and_to_uniform_values(dataset):
    # Over the whole grid no pair is redrawn, so the draws are simple_dynamics(1)'s.
    everything = {"train": np.arange(dataset.num_images)}
    pairs = weak_pairs.ResampledFactorPairs(dataset, everything, seed=1, k=1).batch(
        "train", 0, 20000)
    x, y = factors_of(pairs["x_index"]), factors_of(pairs["y_index"])
    changed = x != y
    # A resampled factor keeps its value with probability 1 / its size.
    np.testing.assert_allclose(np.mean(~changed.any(axis=1)),
                               np.mean([1 / size for size in FACTOR_SIZES]), atol=0.01)
    # P(a factor changes) = (1 / F)·(1 − 1 / size).
    want = [(1 / len(FACTOR_SIZES)) * (1 - 1 / size) for size in FACTOR_SIZES]
    np.testing.assert_allclose(changed.mean(axis=0), want, atol=0.012)
    # The new shape (4 values) is uniform over all four among pairs that changed it.
    moved_shape = y[changed[:, 4], 4]
    np.testing.assert_allclose(np.bincount(moved_shape, minlength=4) / len(moved_shape),
                               0.25, atol=0.03)


def test_a_random_k_is_drawn_per_pair_from_one_to_f_minus_one(dataset, split):
    pairs = weak_pairs.ResampledFactorPairs(dataset, split, seed=0, k=-1).batch("train", 0, 6000)
    counts = pairs["num_changed"]
    assert counts.min() == 1 and counts.max() == len(FACTOR_SIZES) - 1


def test_a_step_s_pairs_are_a_function_of_seed_and_step(dataset, split):
    first = weak_pairs.ResampledFactorPairs(dataset, split, seed=0, k=2)
    again = weak_pairs.ResampledFactorPairs(dataset, split, seed=0, k=2)
    for key, values in first.batch("train", 3, 64).items():
        np.testing.assert_array_equal(values, again.batch("train", 3, 64)[key])
    assert not np.array_equal(first.batch("train", 3, 64)["x_index"],
                              first.batch("train", 4, 64)["x_index"])
    other_seed = weak_pairs.ResampledFactorPairs(dataset, split, seed=1, k=2)
    assert not np.array_equal(first.batch("train", 3, 64)["x_index"],
                              other_seed.batch("train", 3, 64)["x_index"])


def test_the_transitions_source_is_ct_vaes_sampler(dataset, split):
    source = weak_pairs.pair_source(pairs_config("transitions", 1), dataset, split, 0)
    ct_sampler = transitions.sampler_for(dataset, split, 0)
    for key, values in source.batch("train", 5, 32).items():
        np.testing.assert_array_equal(values, ct_sampler.batch("train", 5, 32)[key])


@pytest.mark.parametrize("source, k, message", [
    ("neighbours", 1, "vae.pairs.source must be one of"),
    ("transitions", 2, "k=2: CT-VAE's transitions change one factor"),
    ("resampled", 0, "vae.pairs.k must be -1"),
    ("resampled", 7, r"in 1\.\.6"),
])
def test_bad_pair_sections_are_refused_naming_the_field(dataset, source, k, message):
    with pytest.raises(ValueError, match=message):
        weak_pairs.check_pairs_config(pairs_config(source, k), dataset)


def test_a_split_too_small_to_pair_is_refused(dataset):
    # One image: a pair stays in the split only if it keeps every drawn factor's value.
    one = {"train": np.arange(1), "test": np.arange(1, dataset.num_images)}
    source = weak_pairs.ResampledFactorPairs(dataset, one, seed=0, k=3)
    with pytest.raises(ValueError, match="too small to pair its images"):
        source.batch("train", 0, 20000)
