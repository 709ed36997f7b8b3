import numpy as np
import pytest

from causal_disent.data import pipeline, registry, splits
from causal_disent.utils import threads


def test_splits_partition_every_image_with_the_right_sizes():
    parts = splits.split_indices(1000, (0.7, 0.15, 0.15), seed=3)
    assert [len(parts[name]) for name in splits.SPLIT_NAMES] == [700, 150, 150]
    everything = np.concatenate(list(parts.values()))
    np.testing.assert_array_equal(np.sort(everything), np.arange(1000))
    again = splits.split_indices(1000, (0.7, 0.15, 0.15), seed=3)
    other = splits.split_indices(1000, (0.7, 0.15, 0.15), seed=4)
    np.testing.assert_array_equal(parts["test"], again["test"])
    assert not np.array_equal(parts["test"], other["test"])


@pytest.mark.parametrize("fractions", [(0.7, 0.3), (0.8, 0.3, 0.1), (1.2, -0.1, -0.1)])
def test_bad_split_fractions_are_rejected(fractions):
    with pytest.raises(ValueError, match="split_fractions"):
        splits.split_indices(100, fractions, seed=0)


def test_epochs_are_permutations_and_steps_are_reproducible():
    indices = np.arange(100, 150)
    batcher = pipeline.EpochShuffledBatches(indices, global_batch_size=10, seed=7)
    assert batcher.steps_per_epoch == 5
    epoch0 = np.concatenate([batcher.global_batch_indices(s) for s in range(5)])
    epoch1 = np.concatenate([batcher.global_batch_indices(s) for s in range(5, 10)])
    np.testing.assert_array_equal(np.sort(epoch0), indices)
    np.testing.assert_array_equal(np.sort(epoch1), indices)
    assert not np.array_equal(epoch0, epoch1)
    fresh = pipeline.EpochShuffledBatches(indices, global_batch_size=10, seed=7)
    np.testing.assert_array_equal(fresh.global_batch_indices(7), batcher.global_batch_indices(7))


def test_host_slices_tile_the_global_batch():
    batcher = pipeline.EpochShuffledBatches(np.arange(64), global_batch_size=16, seed=0)
    slices = [batcher.local_batch_indices(3, process, 4) for process in range(4)]
    np.testing.assert_array_equal(np.concatenate(slices), batcher.global_batch_indices(3))


class _Counting:
    """A stand-in dataset whose 'image' is its index."""

    image_shape = (1,)
    num_images = 64

    def images(self, index):
        if np.any(index < 0):
            raise ValueError("negative index")
        return np.asarray(index)[:, None]


def test_prefetched_batches_equal_direct_batches():
    batcher = pipeline.EpochShuffledBatches(np.arange(40), global_batch_size=4, seed=1)
    direct = list(pipeline.image_batches(_Counting(), batcher, 3, 17, prefetch=0))
    ahead = list(pipeline.image_batches(_Counting(), batcher, 3, 17, prefetch=3))
    assert len(direct) == len(ahead) == 14
    for a, b in zip(direct, ahead):
        np.testing.assert_array_equal(a["image"], b["image"])


def test_errors_in_the_prefetch_thread_reach_the_consumer():
    batcher = pipeline.EpochShuffledBatches(np.arange(-8, 8), global_batch_size=16, seed=1)
    with pytest.raises(ValueError, match="negative index"):
        list(pipeline.image_batches(_Counting(), batcher, 0, 2, prefetch=2))


def test_unknown_dataset_suggests_the_closest_name():
    with pytest.raises(ValueError, match="Did you mean 'shapes3d_synth'"):
        registry.get_dataset("shapes3d_synt")


@pytest.mark.parametrize("name", ["dsprites_synth", "shapes3d_synth", "pendulum", "flow"])
def test_a_whole_split_rendered_on_threads_equals_one_render(name, monkeypatch):
    monkeypatch.setattr(threads, "worker_count", lambda: 3)
    dataset = registry.get_dataset(name)
    index = np.random.default_rng(0).choice(dataset.num_images, 23)
    images = pipeline.all_images(dataset, index, chunk=4)
    assert images.dtype == np.uint8 and images.shape == (23, *dataset.image_shape)
    np.testing.assert_array_equal(images, dataset.images(index))


def test_an_error_in_one_chunk_of_a_split_is_raised():
    with pytest.raises(ValueError, match="negative index"):
        pipeline.all_images(_Counting(), np.arange(-3, 20), chunk=4)


def test_a_cached_split_gives_the_images_of_its_indices():
    cached = pipeline.CachedImages(_Counting(), np.array([9, 2, 30]))
    np.testing.assert_array_equal(cached.images(np.array([30, 9])),
                                  _Counting().images(np.array([30, 9])))
    with pytest.raises(ValueError, match="outside the cached images"):
        cached.images(np.array([3]))


def test_a_negative_prefetch_is_refused_and_none_is_allowed():
    """-1 had trained as 0 (no prefetching) without a word."""
    import ml_collections

    from causal_disent.train import config_ranges

    config = ml_collections.ConfigDict({"vae": {"train": {"prefetch_batches": -1}}})
    with pytest.raises(ValueError, match=r"vae.train.prefetch_batches must be an integer >= 0 "
                                         r"\(0 = none\), got -1"):
        config_ranges.check_ranges(config)
    config.vae.train.prefetch_batches = 0
    config_ranges.check_ranges(config)
