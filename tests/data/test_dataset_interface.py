"""Every procedural dataset offers the one ground-truth interface, and transitions
built from it move exactly one factor by one step with the right action."""

import numpy as np
import pytest

from causal_disent.data import describe, registry, show, splits, transitions

PROCEDURAL = ("shapes3d_synth", "dsprites_synth", "cars3d_synth", "sprites_synth",
              "pendulum", "flow")
NUM_PAIRS = 4000


@pytest.fixture(scope="module", params=PROCEDURAL)
def dataset(request):
    return registry.get_dataset(request.param)


def test_factor_metadata_is_consistent(dataset):
    num_factors = len(dataset.factor_names)
    assert num_factors == len(dataset.factor_sizes) == len(dataset.factor_values) > 0
    assert dataset.num_images == int(np.prod(dataset.factor_sizes))
    for size, values in zip(dataset.factor_sizes, dataset.factor_values):
        assert len(values) == size >= 2
        assert np.all(np.diff(np.asarray(values, np.float64)) > 0), "values must increase"


def test_index_and_factor_tuples_round_trip(dataset):
    rng = np.random.default_rng(0)
    factors = dataset.sample_factors(rng, 500)
    index = dataset.factors_to_index(factors)
    np.testing.assert_array_equal(dataset.index_to_factors(index), factors)
    # Row-major: the last factor varies fastest.
    last = dataset.index_to_factors(np.array([0, 1]))
    np.testing.assert_array_equal(last[1] - last[0], np.eye(len(dataset.factor_sizes))[-1])
    np.testing.assert_allclose(
        dataset.factor_values_of(factors)[:, 0],
        np.asarray(dataset.factor_values[0], np.float64)[factors[:, 0]],
    )


def test_images_have_the_declared_shape_and_agree_with_render(dataset):
    rng = np.random.default_rng(1)
    factors = dataset.sample_factors(rng, 8)
    images = dataset.images(dataset.factors_to_index(factors))
    assert images.dtype == np.uint8 and images.shape == (8, *dataset.image_shape)
    np.testing.assert_array_equal(dataset.render(factors), images)


def test_each_factor_alone_changes_the_image(dataset):
    """What the contact sheet shows: moving one factor one step changes the image."""
    base = show.default_base_factors(dataset)
    for factor, size in enumerate(dataset.factor_sizes):
        moved = base.copy()
        moved[factor] = (base[factor] + 1) % size
        first, second = dataset.render(np.stack([base, moved]))
        assert np.any(first != second), dataset.factor_names[factor]


def test_bad_input_is_rejected_clearly(dataset):
    with pytest.raises(ValueError, match="index must be in"):
        dataset.images(np.array([dataset.num_images]))
    with pytest.raises(ValueError, match="integers"):
        dataset.images(np.array([0.5]))
    with pytest.raises(ValueError, match="shape"):
        dataset.render(np.zeros((2, len(dataset.factor_sizes) + 1), np.int64))


def test_transitions_move_one_factor_one_step_with_the_right_action(dataset):
    split = splits.dataset_split(dataset, (0.7, 0.15, 0.15), seed=0)
    sampler = transitions.TransitionSampler(dataset, split, seed=0)
    num_factors = len(dataset.factor_sizes)
    assert sampler.num_actions == 2 * num_factors
    batch = sampler.sample("train", np.random.default_rng(2), NUM_PAIRS)
    delta = dataset.index_to_factors(batch["y_index"]) - dataset.index_to_factors(batch["x_index"])
    np.testing.assert_array_equal(np.abs(delta).sum(axis=1), 1)
    factor = np.argmax(delta != 0, axis=1)
    np.testing.assert_array_equal(factor, transitions.factor_of_action(batch["action"], num_factors))
    np.testing.assert_array_equal(
        delta[np.arange(NUM_PAIRS), factor],
        transitions.direction_of_action(batch["action"], num_factors),
    )
    assert np.isin(batch["x_index"], split["train"]).all()
    assert np.isin(batch["y_index"], split["train"]).all()


def test_description_matches_the_dataset(dataset):
    info = describe.describe(dataset)
    assert info["num_images"] == dataset.num_images
    assert [f["size"] for f in info["factors"]] == list(dataset.factor_sizes)
    assert sum(info["splits"].values()) == dataset.num_images
    assert info["num_actions"] == 2 * len(dataset.factor_sizes)


def test_images_of_an_unexpected_shape_are_a_clear_error():
    """Data on disk that does not match the dataset's definition is named, not used."""
    from causal_disent.data.base import FactorDataset

    class Mismatched(FactorDataset):
        name = "mismatched"
        image_shape = (8, 8, 3)
        factor_names = ("a",)
        factor_sizes = (2,)
        factor_values = (np.arange(2.0),)

        def _images_at(self, index):
            return np.zeros((len(index), 8, 8, 1), np.uint8)

    with pytest.raises(ValueError, match=r"shape \(1, 8, 8, 3\).*re-prepare"):
        Mismatched().images(np.array([0]))
