"""Tests for (X, Y, action) transition sampling inside image-level splits."""

import itertools

import numpy as np
import pytest

from causal_disent.data import transitions
from causal_disent.data.shapes3d_synth import FACTOR_NAMES, FACTOR_SIZES, Shapes3DSynth
from causal_disent.data.splits import SPLIT_NAMES, split_indices
from causal_disent.data.transitions import (
    TransitionSampler,
    action_names,
    action_of,
    direction_of_action,
    factor_of_action,
)

NUM_FACTORS = len(FACTOR_SIZES)
NUM_ACTIONS = 2 * NUM_FACTORS
N_PER_SPLIT = 5000


@pytest.fixture(scope="module")
def dataset() -> Shapes3DSynth:
    return Shapes3DSynth()


@pytest.fixture(scope="module")
def split(dataset):
    return split_indices(dataset.num_images, (0.7, 0.15, 0.15), seed=0)


@pytest.fixture(scope="module")
def sampler(dataset, split) -> TransitionSampler:
    return TransitionSampler(dataset, split, seed=0)


class GridDataset:
    """A factor dataset without images: flat index row-major over factor_sizes."""

    def __init__(self, factor_sizes, order="C"):
        self.factor_sizes = tuple(factor_sizes)
        self.factor_names = tuple(f"f{i}" for i in range(len(factor_sizes)))
        self.num_images = int(np.prod(factor_sizes))
        self._order = order

    def factors_to_index(self, factors):
        factors = np.asarray(factors)
        return np.ravel_multi_index(tuple(factors.T), self.factor_sizes, order=self._order)

    def index_to_factors(self, index):
        coords = np.unravel_index(np.asarray(index), self.factor_sizes, order=self._order)
        return np.stack(coords, axis=-1).astype(np.int64)


def _valid_transitions(dataset, members) -> set[tuple[int, int, int]]:
    """Brute force: every (x, y, action) with x, y in `members`."""
    members = set(int(i) for i in members)
    num_factors = len(dataset.factor_sizes)
    found = set()
    for x, action in itertools.product(sorted(members), range(2 * num_factors)):
        factor, step = action % num_factors, (1 if action < num_factors else -1)
        moved = dataset.index_to_factors(np.array([x]))[0].copy()
        moved[factor] += step
        if 0 <= moved[factor] < dataset.factor_sizes[factor]:
            y = int(dataset.factors_to_index(moved[None])[0])
            if y in members:
                found.add((x, y, action))
    return found


def _triples(batch) -> list[tuple[int, int, int]]:
    columns = (batch["x_index"], batch["y_index"], batch["action"])
    return list(zip(*(column.tolist() for column in columns)))


# --------------------------------------------------------------------------- #
# Action helpers
# --------------------------------------------------------------------------- #
def test_action_helpers_round_trip():
    factor, direction = np.meshgrid(np.arange(NUM_FACTORS), [1, -1], indexing="ij")
    action = action_of(factor, direction, NUM_FACTORS)
    assert action.dtype == np.int32
    np.testing.assert_array_equal(np.sort(action.ravel()), np.arange(NUM_ACTIONS))
    np.testing.assert_array_equal(action[:, 0], np.arange(NUM_FACTORS))  # increases first
    np.testing.assert_array_equal(action[:, 1], NUM_FACTORS + np.arange(NUM_FACTORS))
    np.testing.assert_array_equal(factor_of_action(action, NUM_FACTORS), factor)
    np.testing.assert_array_equal(direction_of_action(action, NUM_FACTORS), direction)
    every = np.arange(NUM_ACTIONS)
    back = action_of(
        factor_of_action(every, NUM_FACTORS), direction_of_action(every, NUM_FACTORS), NUM_FACTORS
    )
    np.testing.assert_array_equal(back, every)
    assert int(action_of(2, -1, NUM_FACTORS)) == NUM_FACTORS + 2


def test_action_names_follow_action_order():
    names = action_names(FACTOR_NAMES)
    assert len(names) == NUM_ACTIONS
    assert names[0] == "floor_hue+" and names[NUM_FACTORS] == "floor_hue-"
    assert names[-1] == "orientation-"
    for action, name in enumerate(names):
        factor = int(factor_of_action(action, NUM_FACTORS))
        sign = "+" if direction_of_action(action, NUM_FACTORS) > 0 else "-"
        assert name == FACTOR_NAMES[factor] + sign


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: action_of(6, 1, 6), "factor"),
        (lambda: action_of(-1, 1, 6), "factor"),
        (lambda: action_of(0, 0, 6), "direction"),
        (lambda: action_of(0, 2, 6), "direction"),
        (lambda: action_of(0.5, 1, 6), "integers"),
        (lambda: factor_of_action(12, 6), "action"),
        (lambda: direction_of_action(-1, 6), "action"),
        (lambda: factor_of_action(0, 0), "num_factors"),
    ],
)
def test_action_helpers_reject_bad_inputs(call, match):
    with pytest.raises(ValueError, match=match):
        call()


# --------------------------------------------------------------------------- #
# Shapes3D transitions
# --------------------------------------------------------------------------- #
def test_sampler_attributes(sampler):
    assert sampler.num_factors == NUM_FACTORS
    assert sampler.num_actions == NUM_ACTIONS
    assert sampler.split_names == SPLIT_NAMES


@pytest.mark.parametrize("split_name", SPLIT_NAMES)
def test_pairs_move_one_factor_one_step_inside_the_split(dataset, split, sampler, split_name):
    rng = np.random.default_rng(123)
    batch = sampler.sample(split_name, rng, N_PER_SPLIT)
    assert batch["x_index"].dtype == np.int64 and batch["y_index"].dtype == np.int64
    assert batch["action"].dtype == np.int32
    assert all(v.shape == (N_PER_SPLIT,) for v in batch.values())

    delta = dataset.index_to_factors(batch["y_index"]) - dataset.index_to_factors(batch["x_index"])
    moved = np.abs(delta).sum(axis=1)
    np.testing.assert_array_equal(moved, 1)  # exactly one factor, exactly one step
    factor = np.argmax(delta != 0, axis=1)
    np.testing.assert_array_equal(factor, factor_of_action(batch["action"], NUM_FACTORS))
    np.testing.assert_array_equal(
        delta[np.arange(N_PER_SPLIT), factor], direction_of_action(batch["action"], NUM_FACTORS)
    )

    members = split[split_name]
    assert np.isin(batch["x_index"], members).all()
    assert np.isin(batch["y_index"], members).all()

    counts = np.bincount(batch["action"], minlength=NUM_ACTIONS)
    assert counts.size == NUM_ACTIONS and (counts > 0).all()
    expected = N_PER_SPLIT / NUM_ACTIONS  # ~417, std ~20: 25% is ~5 std
    assert np.all(np.abs(counts - expected) < 0.25 * expected), counts


def test_pair_counts_match_brute_force(dataset, split, sampler):
    membership = np.full(dataset.num_images, -1)
    for split_id, name in enumerate(SPLIT_NAMES):
        membership[split[name]] = split_id
    factors = dataset.index_to_factors(np.arange(dataset.num_images))
    strides = np.array([int(np.prod(FACTOR_SIZES[f + 1 :])) for f in range(NUM_FACTORS)])
    for split_id, name in enumerate(SPLIT_NAMES):
        counts = sampler.pair_counts(name)
        for f in range(NUM_FACTORS):
            x = np.flatnonzero((factors[:, f] < FACTOR_SIZES[f] - 1) & (membership == split_id))
            expected = np.count_nonzero(membership[x + strides[f]] == split_id)
            assert counts[f] == counts[NUM_FACTORS + f] == expected


def test_batch_is_a_pure_function_of_seed_split_and_step(dataset, split, sampler):
    again = TransitionSampler(dataset, split, seed=0)
    for name in SPLIT_NAMES:
        first = sampler.batch(name, 7, 64)
        for key, value in again.batch(name, 7, 64).items():
            np.testing.assert_array_equal(value, first[key])
    # The documented stream: rng = default_rng([seed, split id, step]).
    direct = sampler.sample("validation", np.random.default_rng([0, 1, 7]), 64)
    np.testing.assert_array_equal(direct["x_index"], sampler.batch("validation", 7, 64)["x_index"])

    step7 = sampler.batch("train", 7, 64)
    assert not np.array_equal(step7["x_index"], sampler.batch("train", 8, 64)["x_index"])
    other_seed = TransitionSampler(dataset, split, seed=1).batch("train", 7, 64)
    assert not np.array_equal(step7["x_index"], other_seed["x_index"])


def test_fixed_set_is_the_same_everywhere_and_not_a_training_batch(dataset, split, sampler):
    again = TransitionSampler(dataset, split, seed=0)
    first = sampler.fixed_set("test", 500)
    for other in (sampler.fixed_set("test", 500), again.fixed_set("test", 500)):
        for key, value in other.items():
            np.testing.assert_array_equal(value, first[key])
    assert not np.array_equal(first["x_index"], sampler.batch("test", 0, 500)["x_index"])
    assert not np.array_equal(first["x_index"], sampler.batch("test", 1, 500)["x_index"])
    other_seed = TransitionSampler(dataset, split, seed=5).fixed_set("test", 500)
    assert not np.array_equal(first["x_index"], other_seed["x_index"])


def test_empty_sample(sampler):
    batch = sampler.batch("train", 0, 0)
    assert [batch[k].shape for k in ("x_index", "y_index", "action")] == [(0,)] * 3
    assert batch["action"].dtype == np.int32


def test_sampling_rejects_bad_inputs(sampler):
    known = r"unknown split 'training'; known splits: \['train', 'validation', 'test'\]"
    with pytest.raises(ValueError, match=known):
        sampler.batch("training", 0, 4)
    with pytest.raises(ValueError, match="unknown split"):
        sampler.fixed_set("tset", 4)
    with pytest.raises(ValueError, match="n must be"):
        sampler.batch("train", 0, -1)
    with pytest.raises(ValueError, match="n must be"):
        sampler.sample("train", np.random.default_rng(0), 2.5)
    with pytest.raises(ValueError, match="step must be"):
        sampler.batch("train", -1, 4)
    with pytest.raises(ValueError, match="rng"):
        sampler.sample("train", 0, 4)


def test_construction_rejects_bad_splits_and_seeds(dataset, split):
    with pytest.raises(ValueError, match="seed"):
        TransitionSampler(dataset, split, seed=-1)
    overlapping = {"train": split["train"], "test": split["train"][:10]}
    with pytest.raises(ValueError, match="shares images"):
        TransitionSampler(dataset, overlapping, seed=0)
    with pytest.raises(ValueError, match="more than once"):
        TransitionSampler(dataset, {"train": np.array([0, 1, 1])}, seed=0)
    with pytest.raises(ValueError, match="outside"):
        TransitionSampler(dataset, {"train": np.array([dataset.num_images])}, seed=0)
    with pytest.raises(ValueError, match="at least one split"):
        TransitionSampler(dataset, {}, seed=0)


def test_split_with_too_few_pairs_is_reported(dataset):
    strides = [int(np.prod(FACTOR_SIZES[f + 1 :])) for f in range(NUM_FACTORS)]
    # Image 0 and its neighbour along every factor: exactly one pair per action,
    # among 480 000 images, so rejection sampling exhausts its rounds.
    rare = np.array([0] + strides)
    last = dataset.num_images - 1
    lonely = np.array([last, last - strides[0] - strides[1]])  # two images, no pair at all
    sampler = TransitionSampler(dataset, {"rare": rare, "lonely": lonely}, seed=0)
    np.testing.assert_array_equal(sampler.pair_counts("rare"), 1)
    with pytest.raises(ValueError, match=r"'rare' has too few images.*rounds"):
        sampler.batch("rare", 0, 20)
    with pytest.raises(ValueError, match=r"'lonely' has too few images.*no pair"):
        sampler.batch("lonely", 0, 1)


# --------------------------------------------------------------------------- #
# Hand-checkable grid
# --------------------------------------------------------------------------- #
def test_tiny_grid_samples_exactly_the_valid_transitions():
    # Factor sizes (2, 3): image i has factors divmod(i, 3).
    #   0:(0,0) 1:(0,1) 2:(0,2)
    #   3:(1,0) 4:(1,1) 5:(1,2)
    grid = GridDataset((2, 3))
    split = {"a": np.array([4, 0, 2, 1]), "b": np.array([3, 5])}
    # In "a": f0+ only 1->4 (0->3 and 2->5 leave the split); f1+ 0->1, 1->2; and reversed.
    expected = {(1, 4, 0), (0, 1, 1), (1, 2, 1), (4, 1, 2), (1, 0, 3), (2, 1, 3)}
    assert _valid_transitions(grid, split["a"]) == expected
    assert _valid_transitions(grid, split["b"]) == set()

    sampler = TransitionSampler(grid, split, seed=3)
    np.testing.assert_array_equal(sampler.pair_counts("a"), [1, 2, 1, 2])
    triples = _triples(sampler.batch("a", 0, 4000))
    assert set(triples) == expected
    # Balanced actions, and X uniform among an action's pairs.
    frequency = {t: triples.count(t) / len(triples) for t in expected}
    for (x, y, action), p in frequency.items():
        pairs_of_action = sum(a == action for _, _, a in expected)
        assert abs(p - 1 / 4 / pairs_of_action) < 0.03, (x, y, action, p)
    with pytest.raises(ValueError, match="'b' has too few images"):
        sampler.batch("b", 0, 1)


def test_tiny_grid_all_pairs_when_everything_is_one_split():
    grid = GridDataset((2, 3, 2))
    sampler = TransitionSampler(grid, {"all": np.arange(grid.num_images)}, seed=0)
    expected = _valid_transitions(grid, np.arange(grid.num_images))
    # Per factor of size s, every one of the 12 / s lines has s - 1 pairs, both ways.
    assert len(expected) == 2 * (6 * 1 + 4 * 2 + 6 * 1)
    triples = set(_triples(sampler.fixed_set("all", 3000)))
    assert triples == expected


def test_datasets_the_sampler_cannot_use_are_rejected():
    with pytest.raises(ValueError, match="row-major"):
        TransitionSampler(GridDataset((2, 3), order="F"), {"all": np.arange(6)}, seed=0)
    with pytest.raises(ValueError, match="at least 2 values"):
        TransitionSampler(GridDataset((2, 1)), {"all": np.arange(2)}, seed=0)


def test_module_has_no_global_rng_use():
    source = open(transitions.__file__).read()
    banned = ("np.random.seed", "np.random.rand", "np.random.randint", "np.random.choice")
    for call in banned + ("import random",):
        assert call not in source


def test_nuisance_factors_are_never_moved():
    """SmallNORB-style: the instance factor is held fixed, so A = 2 * (F - 1)."""
    dataset = GridDataset((3, 4, 5))
    dataset.nuisance_factors = (1,)
    split = {"train": np.arange(dataset.num_images)}
    sampler = TransitionSampler(dataset, split, seed=0)
    assert sampler.num_factors == 2 and sampler.num_actions == 4
    assert sampler.action_factors == (0, 2)
    assert transitions.dataset_action_names(dataset) == ["f0+", "f2+", "f0-", "f2-"]
    batch = sampler.sample("train", np.random.default_rng(0), 3000)
    delta = dataset.index_to_factors(batch["y_index"]) - dataset.index_to_factors(batch["x_index"])
    np.testing.assert_array_equal(np.abs(delta).sum(axis=1), 1)
    np.testing.assert_array_equal(delta[:, 1], 0)
    moved = np.array([0, 2])[batch["action"] % 2]
    np.testing.assert_array_equal(np.argmax(delta != 0, axis=1), moved)
    np.testing.assert_array_equal(
        delta[np.arange(3000), moved], np.where(batch["action"] < 2, 1, -1)
    )
    # Pairs per action: all (v, v+1) neighbours of the moving factor.
    np.testing.assert_array_equal(sampler.pair_counts("train"), [2 * 4 * 5, 3 * 4 * 4] * 2)


def test_authors_action_mix_weighs_factors_by_their_value_steps(dataset, split, sampler):
    """action_mix="authors": training batches draw factor f's two actions with
    probability (size_f − 1) / Σ (size − 1) / 2 each, as the CT-VAE authors' pairs
    hold them (Shapes3D: orientation 14/51, shape 3/51); evaluation sets stay balanced,
    and the pairs given an action are drawn as before."""
    authors = TransitionSampler(dataset, split, seed=0, action_mix="authors")
    shares = transitions.authors_factor_shares(FACTOR_SIZES)
    np.testing.assert_allclose(shares, (np.array(FACTOR_SIZES) - 1) / 51)
    actions = np.concatenate([authors.batch("train", step, 1000)["action"] for step in range(20)])
    frequency = np.bincount(actions, minlength=NUM_ACTIONS) / len(actions)
    expected = np.concatenate([shares, shares]) / 2
    # 20 000 draws: each frequency within 4 binomial standard deviations.
    assert np.all(np.abs(frequency - expected) < 4 * np.sqrt(expected / len(actions)))
    assert frequency[5] > 4 * frequency[4]  # orientation+ against shape+
    for key, value in authors.fixed_set("test", 300).items():
        np.testing.assert_array_equal(value, sampler.fixed_set("test", 300)[key])
    batch = authors.batch("train", 3, 500)
    delta = dataset.index_to_factors(batch["y_index"]) - dataset.index_to_factors(batch["x_index"])
    np.testing.assert_array_equal(np.abs(delta).sum(axis=1), 1)
    np.testing.assert_array_equal(np.argmax(delta != 0, axis=1),
                                  factor_of_action(batch["action"], NUM_FACTORS))
    assert np.isin(batch["x_index"], split["train"]).all()
    assert np.isin(batch["y_index"], split["train"]).all()
    with pytest.raises(ValueError, match=r"ct.objective.action_mix must be one of"):
        TransitionSampler(dataset, split, seed=0, action_mix="paper")
