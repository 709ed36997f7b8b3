"""The observed auxiliary variable u of data/auxiliary.py: the one-hot of a factor at
each image, in the training batches of one model and of many seeds at once."""

import numpy as np
import pytest

from causal_disent.data import auxiliary, pipeline, registry


@pytest.fixture(scope="module")
def dsprites():
    return registry.get_dataset("dsprites_synth")


def test_one_hot_factor_is_the_factor_of_each_index(dsprites):
    index = np.array([0, 1, 12345, dsprites.num_images - 1])
    u = auxiliary.one_hot_factor(dsprites, "scale")(index)
    assert u.shape == (4, dsprites.factor_sizes[1]) and u.dtype == np.float32
    np.testing.assert_array_equal(u.argmax(axis=1), dsprites.index_to_factors(index)[:, 1])
    np.testing.assert_array_equal(u.sum(axis=1), 1.0)


def test_unknown_factor_names_the_known_ones(dsprites):
    with pytest.raises(ValueError, match="'colour' is not a factor of dsprites_synth .*shape"):
        auxiliary.one_hot_factor(dsprites, "colour")


def test_batches_carry_u_of_their_own_images(dsprites):
    u_of = auxiliary.one_hot_factor(dsprites, "shape")
    indices = np.arange(0, dsprites.num_images, 997)
    batcher = pipeline.EpochShuffledBatches(indices, 8, seed=0)
    (batch,) = pipeline.image_batches(dsprites, batcher, 3, 4, prefetch=0, auxiliary=u_of)
    index = batcher.global_batch_indices(3)
    np.testing.assert_array_equal(batch["image"], dsprites.images(index))
    np.testing.assert_array_equal(batch["auxiliary"], u_of(index))
    batchers = [pipeline.EpochShuffledBatches(indices, 8, seed) for seed in (0, 1)]
    (stacked,) = pipeline.seed_stacked_image_batches(dsprites, batchers, 3, 4, prefetch=0,
                                                     auxiliary=u_of)
    assert stacked["image"].shape == (2, 8, *dsprites.image_shape)
    for k, seeded in enumerate(batchers):
        np.testing.assert_array_equal(stacked["auxiliary"][k],
                                      u_of(seeded.global_batch_indices(3)))
    assert not np.array_equal(stacked["image"][0], stacked["image"][1])
