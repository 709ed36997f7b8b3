"""(X, Y, action) transitions of a dataset, sampled inside one split.

CT-VAE (Gendron et al., 2023) learns from pairs of images that agree in every
ground-truth factor but one, which moves to an adjacent value. With F factors
there are A = 2F actions: action f increases factor f by one step and action
F + f decreases it by one step. Nuisance factors (SmallNORB's instance) are never
moved. CelebA has attributes instead of a factor grid: its pairs differ in exactly
one of the first 10 attributes (`AttributeTransitionSampler`).

Images are split at image level (`splits.split_indices`); a pair belongs to a
split only if both of its images do, so no image of one split ever appears in
another split's pairs.

Sampling draws the action uniformly over the A actions (balanced classes), then
X uniformly among the images for which that move stays inside the factor grid,
Y = X moved one step, and redraws X (same action) until X and Y both lie in the
requested split. Given its action, a sampled X is therefore uniform over the
images of the split whose moved image is also in the split. Training batches may
instead draw the actions in the CT-VAE authors' mix (`ACTION_MIXES`,
`authors_factor_shares`); evaluation sets stay balanced.

Training batches are stateless: the batch of step s is a pure function of
(seed, split, s), so a run resumed at step s sees the data an uninterrupted
run would, with no sampler state to checkpoint.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np

# Candidates per pending pair and round: enough for each pair to find a
# partner with probability about 1 - e^-3 (95%) per round...
_TARGET_HITS_PER_ROUND = 3.0
# ...but never more than this, so a near-empty split cannot blow up memory.
_MAX_CANDIDATES_PER_PAIR = 4096
# Candidates drawn at once: keeps the working set of a block in a few MiB.
_BLOCK_CANDIDATES = 1 << 18
# Rounds before giving up. At 95% success per round a healthy split leaves a
# pair unfilled after 16 rounds with probability ~1e-21, so hitting the bound
# means the split really is too small (or too fragmented) to form pairs.
_MAX_ROUNDS = 16
# numpy's SeedSequence zero-pads entropy to 4 words, so [seed, split, step]
# and [seed, split, step, 0] give the same stream. A fifth, non-zero word keeps
# the evaluation stream apart from every batch stream (for seed, step < 2**32).
_FIXED_SET_ENTROPY_SUFFIX = (0, 0, 1)
_NO_SPLIT = -1


# --------------------------------------------------------------------------- #
# Action encoding
# --------------------------------------------------------------------------- #
def action_of(factor: np.ndarray, direction: np.ndarray, num_factors: int) -> np.ndarray:
    """Action index of moving `factor` one step in `direction`.

    Args:
      factor: [...] integer factor indices in [0, num_factors).
      direction: [...] +1 (increase) or -1 (decrease), broadcastable with factor.
      num_factors: F.
    Returns:
      [...] int32 actions: factor for +1, num_factors + factor for -1.
    """
    num_factors = _check_num_factors(num_factors)
    factor = _integer_array(factor, "factor")
    direction = _integer_array(direction, "direction")
    _check_range(factor, 0, num_factors, "factor")
    bad = (direction != 1) & (direction != -1)
    if np.any(bad):
        raise ValueError(f"direction must be +1 or -1, got {direction[bad].flat[0]}")
    return np.where(direction > 0, factor, num_factors + factor).astype(np.int32)


def factor_of_action(action: np.ndarray, num_factors: int) -> np.ndarray:
    """Factor each action moves: [...] int32 in [0, num_factors)."""
    num_factors = _check_num_factors(num_factors)
    action = _check_action(action, num_factors)
    return (action % num_factors).astype(np.int32)


def direction_of_action(action: np.ndarray, num_factors: int) -> np.ndarray:
    """Direction of each action: [...] int32, +1 (increase) or -1 (decrease)."""
    num_factors = _check_num_factors(num_factors)
    action = _check_action(action, num_factors)
    return np.where(action < num_factors, 1, -1).astype(np.int32)


def action_names(factor_names: Sequence[str]) -> list[str]:
    """Readable name of every action, in action order.

    E.g. ("floor_hue", "wall_hue") -> ["floor_hue+", "wall_hue+", "floor_hue-", "wall_hue-"].
    """
    names = list(factor_names)
    return [f"{name}+" for name in names] + [f"{name}-" for name in names]


# CelebA's CT-VAE actions: switch one of the first 10 attributes on (a) or off (A + a).
NUM_ACTION_ATTRIBUTES = 10

# How training batches draw their actions: "balanced" (uniform over the actions) or
# "authors" (each factor's share of the CT-VAE authors' transition pairs).
ACTION_MIXES = ("balanced", "authors")


def authors_factor_shares(factor_sizes) -> np.ndarray:
    """Each moved factor's share of the CT-VAE authors' transition pairs: their
    generator draws the same number of pairs for every adjacent value step of every
    factor, in both directions, so factor f gets a share ∝ size_f − 1 (Shapes3D:
    orientation 14/51, shape 3/51). [F] floats summing to 1."""
    steps = np.asarray(factor_sizes, float) - 1
    return steps / steps.sum()


def authors_action_probabilities(factor_sizes) -> np.ndarray:
    """[2F] probabilities of the actions in the authors' mix: each factor's share
    (`authors_factor_shares`) split evenly between its two directions."""
    shares = authors_factor_shares(factor_sizes)
    return np.concatenate([shares, shares]) / 2


def is_attribute_dataset(dataset) -> bool:
    """Binary attributes (CelebA) rather than a factor grid."""
    return not hasattr(dataset, "factor_sizes") and hasattr(dataset, "attribute_names")


def pair_list_of(dataset):
    """The explicit transition pairs a dataset brings (own_data.TransitionPairs), or None."""
    return getattr(dataset, "transition_pairs", None)


def moves_along_grid(dataset) -> bool:
    """Whether the dataset's transitions are one step along its factor grid (neither
    attribute pairs nor explicit pairs)."""
    return not is_attribute_dataset(dataset) and pair_list_of(dataset) is None


def grid_transitions_missing(dataset) -> str | None:
    """Why CT-VAE cannot draw transitions from `dataset`, or None when it can: pairs
    one step apart need a full factor grid unless the dataset lists its pairs."""
    if not moves_along_grid(dataset) or getattr(dataset, "full_grid", True):
        return None
    return (f"CT-VAE learns from pairs of images one factor step apart, drawn from a full "
            f"factor grid, and {dataset.name} has none ({dataset.grid_note}); list its "
            f"transition pairs (pairs.csv, or pair_x / pair_y / pair_action arrays: "
            f"docs/own_data.md) or give factor labels that fill the grid")


def action_factor_indices(dataset) -> tuple[int, ...]:
    """The factors that actions move, in order: every factor but the dataset's
    `nuisance_factors` (e.g. SmallNORB's instance), which transitions keep fixed."""
    nuisance = set(getattr(dataset, "nuisance_factors", ()))
    return tuple(f for f in range(len(dataset.factor_sizes)) if f not in nuisance)


def dataset_action_names(dataset) -> list[str]:
    """`action_names` of the factors (or attributes) that actions move."""
    if is_attribute_dataset(dataset):
        return action_names(dataset.attribute_names[:NUM_ACTION_ATTRIBUTES])
    if pair_list_of(dataset) is not None:
        return action_names(pair_list_of(dataset).variable_names)
    return action_names([dataset.factor_names[f] for f in action_factor_indices(dataset)])


def num_dataset_actions(dataset) -> int:
    return len(dataset_action_names(dataset))


def sampler_for(dataset, split: Mapping[str, np.ndarray], seed: int,
                action_mix: str = "balanced"):
    """The transition sampler that fits the dataset: factor grid or attributes, its
    training batches' actions drawn in `action_mix` (`ACTION_MIXES`)."""
    if not moves_along_grid(dataset):
        if action_mix != "balanced":
            raise ValueError(
                f"ct.objective.action_mix={action_mix!r} weighs the factors of a factor "
                f"grid, and this dataset's pairs are not drawn from one: use "
                f"action_mix='balanced'")
        if pair_list_of(dataset) is not None:
            return PairListSampler(pair_list_of(dataset), split, seed)
        return AttributeTransitionSampler(dataset, split, seed)
    if reason := grid_transitions_missing(dataset):
        raise ValueError(reason)
    return TransitionSampler(dataset, split, seed, action_mix)


# --------------------------------------------------------------------------- #
# Samplers
# --------------------------------------------------------------------------- #
class _SeededBatches:
    """`batch` and `fixed_set` of a sampler with `seed`, `split_names`, `_split_ids`
    and `sample`."""

    seed: int
    split_names: tuple[str, ...]
    _split_ids: dict[str, int]

    def _split_id(self, split_name: str) -> int:
        try:
            return self._split_ids[split_name]
        except (KeyError, TypeError):
            raise ValueError(
                f"unknown split {split_name!r}; known splits: {list(self.split_names)}"
            ) from None

    # Probabilities [A] of the actions in training batches; None: uniform.
    _batch_action_probabilities: np.ndarray | None = None

    def batch(self, split_name: str, step: int, n: int) -> dict[str, np.ndarray]:
        """The n transitions of training step `step`, a pure function of (seed, split, step).

        Returns the `sample` dict for rng = default_rng([seed, split id, step]), the
        actions drawn in the sampler's action mix.
        """
        split_id = self._split_id(split_name)
        if not _is_int(step) or step < 0:
            raise ValueError(f"step must be a non-negative integer, got {step!r}")
        rng = np.random.default_rng([self.seed, split_id, int(step)])
        if self._batch_action_probabilities is None:
            return self.sample(split_name, rng, n)
        return self.sample(split_name, rng, n, self._batch_action_probabilities)

    def fixed_set(self, split_name: str, n: int) -> dict[str, np.ndarray]:
        """A deterministic evaluation set of n transitions, the same on every call.

        Drawn from its own seed stream (never equal to a `batch`), so evaluation
        does not reuse training batches. Sets of different n are not prefixes
        of one another.
        """
        split_id = self._split_id(split_name)
        rng = np.random.default_rng([self.seed, split_id, *_FIXED_SET_ENTROPY_SUFFIX])
        return self.sample(split_name, rng, n)


class TransitionSampler(_SeededBatches):
    """Samples (X, Y, action) transitions of a factor dataset inside one split.

    Args:
      dataset: anything with `factor_sizes` (tuple of ints), `num_images` and
        `index_to_factors`, whose flat index is row-major over factor_sizes
        (e.g. `Shapes3DSynth`), and optionally `nuisance_factors` (factor indices
        no action moves; every pair keeps them fixed). No image is rendered here.
      split: {split name: 1-D integer image indices}, disjoint (as returned by
        `splits.split_indices`). A split's id, used in the seed of its batches,
        is its position in this mapping (train 0, validation 1, test 2 there).
      seed: non-negative integer; with the split id and the step it fixes every
        batch.
      action_mix: how `batch` draws the actions (`ACTION_MIXES`): uniformly, or in
        the authors' mix; `fixed_set` draws them uniformly either way.

    Attributes:
      num_factors: F, the factors that actions move.
      action_factors: their indices among the dataset's factors.
      num_actions: A = 2F.
      split_names: the split names, in id order.
    """

    def __init__(self, dataset, split: Mapping[str, np.ndarray], seed: int,
                 action_mix: str = "balanced") -> None:
        if not _is_int(seed) or seed < 0:
            raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
        if action_mix not in ACTION_MIXES:
            raise ValueError(f"ct.objective.action_mix must be one of {ACTION_MIXES}, got "
                             f"{action_mix!r}")
        self.seed = int(seed)
        sizes = tuple(int(s) for s in dataset.factor_sizes)
        if not sizes:
            raise ValueError("dataset has no factors")
        self.action_factors = action_factor_indices(dataset)
        too_small = [f for f in self.action_factors if sizes[f] < 2]
        if too_small:
            raise ValueError(
                f"every factor an action moves needs at least 2 values; "
                f"factor_sizes={sizes} (factor indices {too_small})"
            )
        self.factor_sizes = sizes
        self.num_factors = len(self.action_factors)
        self.num_actions = 2 * self.num_factors
        self.num_images = int(dataset.num_images)
        if self.num_images != math.prod(sizes):
            raise ValueError(
                f"dataset.num_images={self.num_images} is not the product of "
                f"factor_sizes={sizes} ({math.prod(sizes)})"
            )
        # Row-major strides: moving factor f by one step adds +-stride[f] to the flat index.
        self._strides = np.array([math.prod(sizes[f + 1 :]) for f in range(len(sizes))], np.int64)
        self._check_index_order(dataset)

        self.split_names = tuple(split)
        self._split_ids = {name: i for i, name in enumerate(self.split_names)}
        self._membership = self._membership_of(split)
        self._pair_counts = self._count_pairs()

        action = np.arange(self.num_actions)
        # The grid factor each action moves.
        self._action_factor = np.array(self.action_factors, np.int64)[action % self.num_factors]
        self._action_stride = self._strides[self._action_factor]
        # Images from which the action's move stays inside the grid: all but one
        # value of the moving factor.
        factor_size = np.array(sizes, np.int64)[self._action_factor]
        self._num_movable = self.num_images // factor_size * (factor_size - 1)
        if action_mix == "authors":
            self._batch_action_probabilities = authors_action_probabilities(
                [sizes[f] for f in self.action_factors])

    # -- public ------------------------------------------------------------- #
    def pair_counts(self, split_name: str) -> np.ndarray:
        """Number of distinct valid (X, Y) pairs of each action in a split: int64 [A]."""
        return self._pair_counts[self._split_id(split_name)].copy()

    def sample(self, split_name: str, rng: np.random.Generator, n: int,
               action_probabilities: np.ndarray | None = None) -> dict[str, np.ndarray]:
        """n transitions with both images in `split_name`.

        Args:
          split_name: one of `split_names`.
          rng: the only source of randomness; the result is a pure function of
            its state (and of the split).
          n: number of transitions, >= 0.
          action_probabilities: [A] probabilities of the actions; None: uniform.
        Returns:
          {"x_index": int64 [n], "y_index": int64 [n], "action": int32 [n]}:
          flat image indices and the action taking X to Y.
        Raises:
          ValueError: unknown split, bad n or rng, or a split in which some
            action has no (or too few) pairs to sample from.
        """
        split_id = self._split_id(split_name)
        if not isinstance(rng, np.random.Generator):
            raise ValueError(f"rng must be a numpy.random.Generator, got {type(rng).__name__}")
        if not _is_int(n) or n < 0:
            raise ValueError(f"n must be a non-negative integer, got {n!r}")
        n = int(n)
        if action_probabilities is None:
            action = rng.integers(0, self.num_actions, size=n).astype(np.int32)
        else:
            action = rng.choice(self.num_actions, size=n, p=action_probabilities).astype(np.int32)
        x_index = np.zeros(n, np.int64)
        if n == 0:
            return {"x_index": x_index, "y_index": x_index.copy(), "action": action}
        self._check_pairs_exist(split_name, split_id)

        pending = np.arange(n)
        for _ in range(_MAX_ROUNDS):
            pending = self._fill_round(split_id, rng, action, x_index, pending)
            if pending.size == 0:
                break
        else:
            raise ValueError(
                f"split {split_name!r} has too few images to form transition pairs: "
                f"{pending.size} of {n} pairs still unmatched after {_MAX_ROUNDS} rounds "
                f"(valid pairs per action: {self._pair_counts[split_id].tolist()})"
            )
        y_index = x_index + self._move(action)
        return {"x_index": x_index, "y_index": y_index, "action": action}

    # -- sampling ----------------------------------------------------------- #
    def _move(self, action: np.ndarray) -> np.ndarray:
        """Flat-index offset Y - X of each action: [...] int64."""
        sign = np.where(action < self.num_factors, 1, -1)
        return sign * self._action_stride[action]

    def _fill_round(
        self,
        split_id: int,
        rng: np.random.Generator,
        action: np.ndarray,
        x_index: np.ndarray,
        pending: np.ndarray,
    ) -> np.ndarray:
        """Draws candidates for the pending pairs, writes accepted X into x_index.

        Args:
          action: [n] int32 action of every pair.
          x_index: [n] int64, written in place for the pairs that find an X.
          pending: [P] positions in [0, n) still without an X.
        Returns:
          [P'] the positions still pending afterwards, in increasing order.
        """
        # Size the draw from the rarest pending action, so that each pair has a
        # good chance of a hit without a second round.
        acceptance = self._pair_counts[split_id] / self._num_movable
        lowest = acceptance[np.unique(action[pending])].min()
        per_pair = np.ceil(_TARGET_HITS_PER_ROUND / lowest)
        per_pair = int(np.clip(per_pair, 1, _MAX_CANDIDATES_PER_PAIR))
        block = max(1, _BLOCK_CANDIDATES // per_pair)
        still_pending = []
        for start in range(0, pending.size, block):
            slots = pending[start : start + block]
            slot_action = action[slots]
            x = self._draw_movable(rng, slot_action, per_pair)  # [B, per_pair]
            y = x + self._move(slot_action)[:, None]
            hit = (self._membership[x] == split_id) & (self._membership[y] == split_id)
            found = hit.any(axis=1)
            first = hit.argmax(axis=1)
            x_index[slots[found]] = x[found, first[found]]
            still_pending.append(slots[~found])
        return np.concatenate(still_pending)

    def _draw_movable(self, rng: np.random.Generator, action: np.ndarray, k: int) -> np.ndarray:
        """k images per action, uniform over those from which the action's move is valid.

        The valid images of an action form the factor grid with the moving
        factor's size cut by one: a uniform rank r in it maps back to a flat
        index by re-inserting the missing value of that factor (the last value
        for an increase, the first for a decrease).

        Args:
          action: [B] actions.
        Returns:
          [B, k] int64 flat indices X.
        """
        stride = self._action_stride[action][:, None]
        size = np.array(self.factor_sizes, np.int64)[self._action_factor[action]][:, None]
        rank = rng.integers(0, self._num_movable[action][:, None], size=(action.size, k))
        outer = rank // ((size - 1) * stride)
        x = rank + outer * stride
        return np.where((action >= self.num_factors)[:, None], x + stride, x)

    # -- setup and validation ----------------------------------------------- #
    def _check_index_order(self, dataset) -> None:
        # The sampler does its own index arithmetic for speed; make sure it
        # agrees with the dataset's (row-major) ordering on a few probes.
        last = self.num_images - 1
        probes = np.unique(np.array([0, 1, last // 3, last // 2, last], np.int64))
        expected = (probes[:, None] // self._strides) % np.array(self.factor_sizes)
        got = np.asarray(dataset.index_to_factors(probes))
        if got.shape != expected.shape or not np.array_equal(got, expected):
            raise ValueError(
                "dataset's flat index is not row-major over factor_sizes "
                f"{self.factor_sizes}: index_to_factors({probes.tolist()}) = {got.tolist()}, "
                f"expected {expected.tolist()}"
            )

    def _membership_of(self, split: Mapping[str, np.ndarray]) -> np.ndarray:
        """int8 [num_images]: the split id of every image, -1 for none."""
        if not split:
            raise ValueError("split must name at least one split")
        if len(split) > np.iinfo(np.int8).max:
            raise ValueError(f"at most {np.iinfo(np.int8).max} splits, got {len(split)}")
        membership = np.full(self.num_images, _NO_SPLIT, np.int8)
        for split_id, (name, indices) in enumerate(split.items()):
            indices = np.asarray(indices)
            if indices.ndim != 1 or (indices.size and not np.issubdtype(indices.dtype, np.integer)):
                raise ValueError(
                    f"split {name!r} must be a 1-D integer index array, "
                    f"got shape {indices.shape} dtype {indices.dtype}"
                )
            indices = indices.astype(np.int64)
            if indices.size and (indices.min() < 0 or indices.max() >= self.num_images):
                raise ValueError(
                    f"split {name!r} has indices outside [0, {self.num_images - 1}]"
                )
            if np.any(membership[indices] != _NO_SPLIT):
                raise ValueError(f"split {name!r} shares images with an earlier split")
            membership[indices] = split_id
            # Cheaper than np.unique: a repeated index is written once, not twice.
            if np.count_nonzero(membership == split_id) != indices.size:
                raise ValueError(f"split {name!r} lists some image more than once")
        return membership

    def _count_pairs(self) -> np.ndarray:
        """int64 [num_splits, A]: distinct valid pairs of each action in each split."""
        grid = self._membership.reshape(self.factor_sizes)
        counts = np.zeros((len(self.split_names), self.num_actions), np.int64)
        for k, f in enumerate(self.action_factors):
            low = [slice(None)] * grid.ndim
            high = [slice(None)] * grid.ndim
            low[f], high[f] = slice(0, -1), slice(1, None)
            low_split, high_split = grid[tuple(low)], grid[tuple(high)]
            same = (low_split == high_split) & (low_split != _NO_SPLIT)
            per_split = np.bincount(low_split[same], minlength=len(self.split_names))
            # A pair (v, v+1) serves both the increase and, reversed, the decrease.
            counts[:, k] = counts[:, self.num_factors + k] = per_split
        return counts

    def _check_pairs_exist(self, split_name: str, split_id: int) -> None:
        # Balanced actions need every action to have a pair. Checking up front
        # fails fast, and whatever the rng draws, instead of only once a drawn
        # pair-less action has spent every rejection round.
        empty = np.flatnonzero(self._pair_counts[split_id] == 0)
        if empty.size:
            raise ValueError(
                f"split {split_name!r} has too few images to form transition pairs: "
                f"no pair for actions {empty.tolist()} "
                f"(valid pairs per action: {self._pair_counts[split_id].tolist()})"
            )


def sample_one_attribute_pairs(
    attributes: np.ndarray,
    rng: np.random.Generator,
    num_pairs: int,
    num_attributes: int = 10,
    candidates: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Image pairs that differ in exactly one of the first `num_attributes` attributes.

    All such pairs of CelebA number in the billions, so they are sampled: the
    action uniformly among the possible ones (action a < A: attribute a goes from
    0 to 1; A + a: from 1 to 0), then X uniformly among the images that have a
    partner for it, then Y uniformly among X's partners. Attributes beyond
    `num_attributes` are ignored (they may differ).

    Args:
      attributes: [N, >= num_attributes] bool/0-1 attributes of all images.
      rng: numpy Generator.
      num_pairs: pairs to draw.
      num_attributes: A, the attributes that define the actions.
      candidates: optional [M] image indices to pair within (e.g. one split).
    Returns:
      (x, y, action): [num_pairs] int64 image indices and int32 actions in [0, 2A).
    Raises:
      ValueError if no pair exists.
    """
    attributes = np.asarray(attributes)
    if attributes.ndim != 2 or attributes.shape[1] < num_attributes:
        raise ValueError(
            f"attributes must have shape [N, >= {num_attributes}], got {attributes.shape}"
        )
    pool = np.arange(len(attributes)) if candidates is None else np.asarray(candidates, np.int64)
    bits = attributes[pool, :num_attributes].astype(np.int64)
    codes = bits @ (1 << np.arange(num_attributes, dtype=np.int64))
    order = np.argsort(codes, kind="stable")
    counts = np.bincount(codes, minlength=1 << num_attributes)
    starts = np.cumsum(counts) - counts
    # Positions (into pool) that have a partner, per action.
    movers = []
    for action in range(2 * num_attributes):
        attribute, decrease = action % num_attributes, action >= num_attributes
        has_partner = counts[codes ^ (1 << attribute)] > 0
        movers.append(np.flatnonzero(has_partner & (bits[:, attribute] == int(decrease))))
    possible = np.array([a for a in range(2 * num_attributes) if len(movers[a])], np.int32)
    if not len(possible):
        raise ValueError("no two images differ in exactly one of the first attributes")
    actions = rng.choice(possible, size=num_pairs)
    x = np.empty(num_pairs, np.int64)
    y = np.empty(num_pairs, np.int64)
    for action in np.unique(actions):
        slots = np.flatnonzero(actions == action)
        chosen = rng.choice(movers[action], size=len(slots))
        partner_codes = codes[chosen] ^ (1 << (action % num_attributes))
        offsets = rng.integers(0, counts[partner_codes])
        x[slots] = pool[chosen]
        y[slots] = pool[order[starts[partner_codes] + offsets]]
    return x, y, actions.astype(np.int32)


class AttributeTransitionSampler(_SeededBatches):
    """CelebA transitions: image pairs of one split that differ in exactly one of the
    first `NUM_ACTION_ATTRIBUTES` binary attributes (the others may differ).

    Action a < A switches attribute a on, A + a switches it off. The action is drawn
    uniformly among those with a pair in the split, then X among the images that
    have a partner, then Y among X's partners (`sample_one_attribute_pairs`).

    Args:
      dataset: anything with `attribute_names` and `attributes(index)` ([n, >= 10] 0/1).
      split: {split name: 1-D image indices}; a split's id is its position.
      seed: non-negative integer.
    """

    def __init__(self, dataset, split: Mapping[str, np.ndarray], seed: int) -> None:
        self.seed = _checked_seed(seed)
        self.num_factors = NUM_ACTION_ATTRIBUTES
        self.num_actions = 2 * NUM_ACTION_ATTRIBUTES
        self.split_names = tuple(split)
        self._split_ids = {name: i for i, name in enumerate(self.split_names)}
        self._split = {name: np.asarray(indices, np.int64) for name, indices in split.items()}
        self._attributes = np.asarray(dataset.attributes(np.arange(dataset.num_images)))

    def sample(self, split_name: str, rng: np.random.Generator, n: int) -> dict[str, np.ndarray]:
        """n pairs inside `split_name`: {"x_index", "y_index": int64 [n], "action": int32 [n]}."""
        self._split_id(split_name)
        if not _is_int(n) or n < 0:
            raise ValueError(f"n must be a non-negative integer, got {n!r}")
        x, y, action = sample_one_attribute_pairs(
            self._attributes, rng, int(n), NUM_ACTION_ATTRIBUTES, candidates=self._split[split_name]
        )
        return {"x_index": x, "y_index": y, "action": action}


class PairListSampler(_SeededBatches):
    """Transitions drawn from a dataset's explicit pairs (own_data.TransitionPairs).

    A pair belongs to the split its `split` names when the pairs carry one, else to
    the split holding both its images (a pair across splits is in none). The action
    is drawn uniformly among those with a pair in the split, then the pair uniformly
    among that action's pairs.

    Args:
      pairs: TransitionPairs over the dataset's image indices.
      split: {split name: 1-D image indices}; a split's id is its position.
      seed: non-negative integer.
    """

    def __init__(self, pairs, split: Mapping[str, np.ndarray], seed: int) -> None:
        self.seed = _checked_seed(seed)
        self.num_factors = len(pairs.variable_names)
        self.num_actions = pairs.num_actions
        self.split_names = tuple(split)
        self._split_ids = {name: i for i, name in enumerate(self.split_names)}
        self._pairs = pairs
        if pairs.split is not None:
            members = {name: np.flatnonzero(pairs.split == name) for name in self.split_names}
        else:
            where = np.full(int(max(pairs.x_index.max(), pairs.y_index.max())) + 1, -1, np.int64)
            for split_id, indices in enumerate(split.values()):
                indices = np.asarray(indices, np.int64)
                where[indices[indices < len(where)]] = split_id
            inside = where[pairs.x_index] == where[pairs.y_index]
            members = {name: np.flatnonzero(inside & (where[pairs.x_index] == split_id))
                       for split_id, name in enumerate(self.split_names)}
        # Per split, per action: the pair numbers.
        self._by_action = {name: [rows[pairs.action[rows] == a] for a in range(self.num_actions)]
                           for name, rows in members.items()}

    def pair_counts(self, split_name: str) -> np.ndarray:
        """Number of listed pairs of each action in a split: int64 [A]."""
        self._split_id(split_name)
        return np.array([len(rows) for rows in self._by_action[split_name]], np.int64)

    def sample(self, split_name: str, rng: np.random.Generator, n: int) -> dict[str, np.ndarray]:
        """n pairs of `split_name`: {"x_index", "y_index": int64 [n], "action": int32 [n]}."""
        self._split_id(split_name)
        if not _is_int(n) or n < 0:
            raise ValueError(f"n must be a non-negative integer, got {n!r}")
        counts = self.pair_counts(split_name)
        possible = np.flatnonzero(counts)
        if not len(possible):
            raise ValueError(f"no listed pair has both images in the {split_name!r} split")
        actions = rng.choice(possible, size=int(n)).astype(np.int32)
        chosen = np.empty(int(n), np.int64)
        for action in np.unique(actions):
            slots = np.flatnonzero(actions == action)
            chosen[slots] = rng.choice(self._by_action[split_name][action], size=len(slots))
        return {"x_index": self._pairs.x_index[chosen], "y_index": self._pairs.y_index[chosen],
                "action": actions}


# --------------------------------------------------------------------------- #
# Helpers
# --------------------------------------------------------------------------- #
def _checked_seed(seed) -> int:
    if not _is_int(seed) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    return int(seed)


def _check_num_factors(num_factors: int) -> int:
    if not _is_int(num_factors) or num_factors < 1:
        raise ValueError(f"num_factors must be a positive integer, got {num_factors!r}")
    return int(num_factors)


def _is_int(value) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool)


def _integer_array(value: np.ndarray, what: str) -> np.ndarray:
    array = np.asarray(value)
    if array.dtype == np.bool_ or not np.issubdtype(array.dtype, np.integer):
        raise ValueError(f"{what} must hold integers, got dtype {array.dtype}")
    return array.astype(np.int64)


def _check_action(action: np.ndarray, num_factors: int) -> np.ndarray:
    action = _integer_array(action, "action")
    _check_range(action, 0, 2 * num_factors, "action")
    return action


def _check_range(array: np.ndarray, low: int, high: int, what: str) -> None:
    bad = (array < low) | (array >= high)
    if np.any(bad):
        raise ValueError(f"{what} must be in [{low}, {high - 1}], got {array[bad].flat[0]}")
