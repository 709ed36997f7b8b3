"""Pairs of images that share all but a few ground-truth factors, for the
weakly-supervised VAEs (objectives/weak_vae.py), drawn inside one split as
`vae.pairs` says:

  source="transitions"  CT-VAE's pairs (data/transitions.py): one factor moved one
                        step up or down, the action uniform. These are the pairs
                        CT-VAE's stage 2 learns from (k = 1 changed factor).
  source="resampled"    the pairs of Locatello et al., "Weakly-Supervised
                        Disentanglement Without Compromises", ICML 2020, §5
                        (disentanglement_lib's `simple_dynamics(k)`): x1 uniform
                        over the split's images; the number of factors to change
                        drawn uniformly from {1, k} (k = -1: k itself first drawn
                        from 1, ..., F − 1, per pair); that many factors picked
                        without replacement, each given a value drawn uniformly
                        from all its values, so that one may keep its value; x2 the
                        image of the new factors. A pair whose x2 lies outside the
                        split is drawn again (disentanglement_lib has no splits), so
                        pairs that kept their values are a little more common: on
                        3D Shapes' 70 % training split, 16.6 % of k = 1 pairs
                        against 12.4 % over the whole grid.

Either source's `batch(split_name, step, n)` is a pure function of (seed, split,
step), as the transition samplers' are: a resumed run sees the pairs an
uninterrupted one would. Nuisance factors (`nuisance_factors`, SmallNORB's instance)
are never changed."""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np

from causal_disent.data import transitions

SOURCES = ("transitions", "resampled")
# Rounds of redrawing the pairs that left the split before giving up: a split that
# keeps a tenth of the images keeps a redrawn pair with probability about a tenth,
# and 64 rounds leave one unfilled with probability 0.9^64 ≈ 1e-3 per pair, so
# running out means the split is far too small to pair its images this way.
_MAX_ROUNDS = 64
# A fifth word of the seed's entropy, so that these pairs' streams differ from the
# transition samplers' of the same (seed, split, step).
_ENTROPY_SUFFIX = (0, 0, 2)


def check_pairs_config(pairs, dataset) -> None:
    """ValueError naming the field of `pairs` (the section `vae.pairs`) at fault for
    `dataset`: an unknown source, a k out of range, or a dataset the source cannot
    pair."""
    if pairs.source not in SOURCES:
        raise ValueError(f"vae.pairs.source must be one of {SOURCES}, got {pairs.source!r}")
    k = pairs.k
    if pairs.source == "transitions":
        if k != 1:
            raise ValueError(f"vae.pairs.k={k}: CT-VAE's transitions change one factor "
                             "(k = 1); k-factor pairs are vae.pairs.source='resampled'")
        return
    if not hasattr(dataset, "factor_sizes"):
        raise ValueError("vae.pairs.source='resampled' draws new factor values, and this "
                         "dataset has no factor grid: use source='transitions'")
    num_factors = len(transitions.action_factor_indices(dataset))
    if not (isinstance(k, int) and (k == -1 or 1 <= k <= num_factors)):
        raise ValueError(f"vae.pairs.k must be -1 (a random k per pair) or in 1..{num_factors} "
                         f"(the factors a pair can change), got {k!r}")


def pair_source(pairs, dataset, split: Mapping[str, np.ndarray], seed: int):
    """The source of `pairs` (the section `vae.pairs`, checked) for the dataset's
    `split`, seeded by `seed`: an object whose `batch(split_name, step, n)` gives
    {"x_index", "y_index"} (int64 [n] flat image indices) and more per pair."""
    check_pairs_config(pairs, dataset)
    if pairs.source == "transitions":
        return transitions.sampler_for(dataset, split, seed)
    return ResampledFactorPairs(dataset, split, seed, pairs.k)


class ResampledFactorPairs:
    """Pairs with k factors resampled (source "resampled" of the module's docstring).

    Args:
      dataset: anything with `factor_sizes` and `num_images`, its flat index
        row-major over the factors (as every factor-grid dataset here), and optionally
        `nuisance_factors`.
      split: {split name: 1-D image indices}, disjoint; a split's id, part of its
        batches' seed, is its position.
      seed: non-negative integer.
      k: -1, or the number of factors a pair may change besides 1.
    """

    def __init__(self, dataset, split: Mapping[str, np.ndarray], seed: int, k: int) -> None:
        if not isinstance(seed, (int, np.integer)) or seed < 0:
            raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
        self.seed = int(seed)
        self.factor_sizes = np.array([int(size) for size in dataset.factor_sizes], np.int64)
        if int(dataset.num_images) != math.prod(self.factor_sizes.tolist()):
            raise ValueError(f"dataset.num_images={dataset.num_images} is not the product of "
                             f"factor_sizes={tuple(self.factor_sizes.tolist())}")
        self.changeable = np.array(transitions.action_factor_indices(dataset), np.int64)
        self.k = int(k)
        self._strides = np.array([math.prod(self.factor_sizes[f + 1:].tolist())
                                  for f in range(len(self.factor_sizes))], np.int64)
        self.split_names = tuple(split)
        self._splits = {name: np.asarray(indices, np.int64) for name, indices in split.items()}
        self._membership = np.full(int(dataset.num_images), -1, np.int8)
        for split_id, indices in enumerate(self._splits.values()):
            self._membership[indices] = split_id

    def batch(self, split_name: str, step: int, n: int) -> dict[str, np.ndarray]:
        """The n pairs of training step `step`: {"x_index", "y_index", "num_changed"
        (the factors resampled, some perhaps to their own value)}, a pure function of
        (seed, split, step)."""
        if split_name not in self._splits:
            raise ValueError(f"unknown split {split_name!r}; known splits: "
                             f"{list(self.split_names)}")
        split_id = self.split_names.index(split_name)
        rng = np.random.default_rng([self.seed, split_id, int(step), *_ENTROPY_SUFFIX])
        indices = self._splits[split_name]
        if len(indices) == 0:
            raise ValueError(f"split {split_name!r} has no images to pair")
        x_index, y_index, num_changed = (np.zeros(n, np.int64) for _ in range(3))
        pending = np.arange(n)
        for _ in range(_MAX_ROUNDS):
            if pending.size == 0:
                break
            x, y, changed = self._draw(rng, indices, pending.size)
            kept = self._membership[y] == split_id
            x_index[pending[kept]], y_index[pending[kept]] = x[kept], y[kept]
            num_changed[pending[kept]] = changed[kept]
            pending = pending[~kept]
        if pending.size:
            raise ValueError(f"split {split_name!r} is too small to pair its images by "
                             f"resampling factors: {pending.size} of {n} pairs left it in "
                             f"{_MAX_ROUNDS} rounds; use a larger split")
        return {"x_index": x_index, "y_index": y_index, "num_changed": num_changed}

    def _draw(self, rng: np.random.Generator, indices: np.ndarray,
              n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """n candidate pairs (x, y, the number of factors resampled), x drawn from
        `indices`, y anywhere in the grid."""
        x = indices[rng.integers(0, len(indices), n)]
        factors = x[:, None] // self._strides % self.factor_sizes  # [n, all factors]
        num_changeable = len(self.changeable)
        k = (rng.integers(1, max(num_changeable, 2), n) if self.k == -1
             else np.full(n, self.k))
        num_changed = np.where(rng.integers(0, 2, n) == 0, 1, k)
        # A uniformly random order of the factors per pair; its first num_changed change.
        rank = np.argsort(np.argsort(rng.random((n, num_changeable)), axis=1), axis=1)
        changes = rank < num_changed[:, None]
        sizes = self.factor_sizes[self.changeable]
        new_values = (rng.random((n, num_changeable)) * sizes).astype(np.int64)
        factors[:, self.changeable] = np.where(changes, new_values,
                                               factors[:, self.changeable])
        return x, factors @ self._strides, num_changed
