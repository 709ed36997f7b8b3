"""A dataset from a researcher's own arrays: images with, optionally, factor labels,
concept labels, a causal graph over the concepts and explicit transition pairs.

`ArrayDataset` offers the interface of the built-in datasets (base.py), so every
stage, metric and figure takes it unchanged; `own_files.py` builds one from files
(`.npz`, HDF5, an image folder with CSV files), and `registry.register_dataset`
names one built in Python so that a config can use it.

Factor labels are indexed the way the built-in grids are when they can be: when the
labels hold every combination of the factors' values exactly once (an exported
Shapes3D, say), image `index` is the row-major flat index of its factor tuple, so
the transition sampler, the metric card and every figure see the same dataset as if
it were built in, whatever the order of the rows. Otherwise (combinations missing or
repeated) `index` is the row: metrics that draw factor vectors jointly sample the
labelled rows, and the two that set one factor's value across otherwise random draws
(betavae, factorvae) need the full grid and say so. CT-VAE learns from pairs one step
apart on the grid, or from explicit pairs (`TransitionPairs`) when there is none.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from causal_disent.data.base import FactorDataset, check_draw
from causal_disent.data.splits import SPLIT_NAMES


@dataclasses.dataclass(frozen=True)
class TransitionPairs:
    """Explicit (X, Y, action) transitions between a dataset's rows.

    With V moved variables there are A = 2V actions, as for the built-in grids:
    action v moves variable v up, action V + v moves it down (`variable_names[v]`
    names it), so CT-VAE's factor accuracy folds the two directions of a variable.

    Attributes:
      x_index, y_index: [P] int64 rows of the images before and after.
      action: [P] int32 actions in [0, 2V).
      variable_names: the V moved variables.
      split: [P] split names (train / validation / test) the pairs were assigned to,
        or None: a pair then belongs to the split holding both its images.
    """

    x_index: np.ndarray
    y_index: np.ndarray
    action: np.ndarray
    variable_names: tuple[str, ...]
    split: np.ndarray | None = None

    @property
    def num_actions(self) -> int:
        return 2 * len(self.variable_names)

    def checked(self, num_rows: int, where: str) -> TransitionPairs:
        """A validated copy (int64 rows, int32 actions); ValueError naming the first
        problem, `where` naming the pairs' source."""
        x, y, action = (np.asarray(values) for values in (self.x_index, self.y_index, self.action))
        if not (x.ndim == y.ndim == action.ndim == 1) or not (len(x) == len(y) == len(action)):
            raise ValueError(f"{where}: the pairs' X rows, Y rows and actions must be three "
                             f"1-D arrays of one length; got shapes {x.shape}, {y.shape}, "
                             f"{action.shape}")
        if not len(x):
            raise ValueError(f"{where}: no pairs listed")
        if not self.variable_names:
            raise ValueError(f"{where}: the pairs name no moved variable")
        for values, what in ((x, "X row"), (y, "Y row"), (action, "action")):
            if not np.issubdtype(values.dtype, np.integer):
                raise ValueError(f"{where}: the pairs' {what}s must be integers, got {values.dtype}")
        for values, what in ((x, "X"), (y, "Y")):
            bad = (values < 0) | (values >= num_rows)
            if bad.any():
                raise ValueError(f"{where}: pair {np.flatnonzero(bad)[0]} names {what} row "
                                 f"{values[bad][0]}, outside the {num_rows} images "
                                 f"[0, {num_rows - 1}]")
        bad = (action < 0) | (action >= self.num_actions)
        if bad.any():
            raise ValueError(
                f"{where}: pair {np.flatnonzero(bad)[0]} has action {action[bad][0]}, outside "
                f"[0, {self.num_actions - 1}]: {len(self.variable_names)} moved variables "
                f"({', '.join(self.variable_names)}) give {self.num_actions} actions, v for "
                f"variable v up and {len(self.variable_names)} + v for it down")
        split = None
        if self.split is not None:
            split = np.asarray(self.split).astype(str)
            if split.shape != x.shape:
                raise ValueError(f"{where}: one split name per pair needed, got {split.shape} "
                                 f"for {len(x)} pairs")
            unknown = sorted(set(split.tolist()) - set(SPLIT_NAMES))
            if unknown:
                raise ValueError(f"{where}: unknown pair split(s) {unknown}; use "
                                 f"{', '.join(SPLIT_NAMES)}")
        return TransitionPairs(x.astype(np.int64), y.astype(np.int64), action.astype(np.int32),
                               tuple(str(name) for name in self.variable_names), split)


class ArrayDataset(FactorDataset):
    """Images a researcher brings, with whatever labels they have.

    Args:
      images: [N, H, W, C] uint8, an array or anything array-like with `shape`,
        `dtype` and integer-array indexing (a numpy memmap, an HDF5 dataset wrapped
        by own_files, an image folder's lazy reader); rows are read on demand.
      factors: optional [N, F] factor labels. Integers in [0, size) when
        `factor_sizes` is given; otherwise any numbers, each column's distinct values
        (sorted) becoming its grid values.
      factor_names: F names (default factor_0, ...).
      factor_sizes: F grid sizes (default: each column's number of distinct values).
      labels: optional [N, L] continuous concept labels (CausalVAE's).
      label_names: L names (default label_0, ...).
      causal_graph: optional [L, L] 0/1 adjacency over the labels, graph[i, j] = 1
        meaning label i causes label j (scored by SHD).
      pairs: optional `TransitionPairs` between rows, for CT-VAE.
      name: what messages and records call the dataset.
    Raises:
      ValueError naming the first problem with the input and its fix.
    """

    def __init__(self, images, factors=None, *, factor_names=None, factor_sizes=None,
                 labels=None, label_names=None, causal_graph=None,
                 pairs: TransitionPairs | None = None, name: str = "arrays") -> None:
        self.name = name
        self._images = images
        num_rows = check_images(images, name)
        self.num_rows = num_rows
        self.image_shape = tuple(int(size) for size in images.shape[1:])
        row_factors, self.factor_names, self.factor_sizes, self.factor_values = _factor_grid(
            factors, factor_names, factor_sizes, num_rows, name)
        super().__init__()
        self._row_factors = row_factors
        keys = row_factors @ self._strides
        grid_size = math.prod(self.factor_sizes) if self.num_factors else 0
        distinct = len(np.unique(keys)) if self.num_factors else 0
        self.full_grid = bool(self.num_factors) and distinct == num_rows == grid_size
        if self.full_grid:  # image index = flat grid index, as in the built-in grids
            self._row_of_index = np.empty(num_rows, np.int64)
            self._row_of_index[keys] = np.arange(num_rows)
            self._index_of_row = keys
        else:  # image index = row
            self.num_images = num_rows
            self._row_of_index = self._index_of_row = np.arange(num_rows, dtype=np.int64)
            order = np.argsort(keys, kind="stable")
            self._sorted_keys, self._rows_by_key = keys[order], order
        self.grid_note = "" if self.full_grid else _why_not_a_grid(
            self.num_factors, distinct, num_rows, grid_size, self.factor_sizes)
        self.label_names, self._labels = _labels(labels, label_names, num_rows, name)
        self.causal_graph = _causal_graph(causal_graph, self.label_names, name)
        self.transition_pairs = None
        if pairs is not None:
            checked = pairs.checked(num_rows, f"{name}'s pairs")
            self.transition_pairs = dataclasses.replace(
                checked, x_index=self._index_of_row[checked.x_index],
                y_index=self._index_of_row[checked.y_index])

    # -- images and labels --------------------------------------------------- #
    def _images_at(self, index: np.ndarray) -> np.ndarray:
        rows = self._row_of_index[index]
        unique, inverse = np.unique(rows, return_inverse=True)  # sorted reads: HDF5 needs them
        return np.asarray(self._images[unique])[inverse]

    def labels(self, index: np.ndarray) -> np.ndarray:
        if self._labels is None:
            return super().labels(index)  # NotImplementedError: no labels
        return self._labels[self._row_of_index[self.check_index(index)]]

    # -- indexing off the grid ------------------------------------------------ #
    def index_to_factors(self, index: np.ndarray) -> np.ndarray:
        if self.full_grid:
            return super().index_to_factors(index)
        return self._row_factors[self.check_index(index)]

    def factors_to_index(self, factors: np.ndarray) -> np.ndarray:
        """[B, F] factor indices -> [B] image indices; off a full grid, the first row
        holding each combination (ValueError naming a combination no row holds)."""
        if self.full_grid:
            return super().factors_to_index(factors)
        factors = self.check_factors(factors)
        keys = factors @ self._strides
        where = np.minimum(np.searchsorted(self._sorted_keys, keys), len(self._sorted_keys) - 1)
        missing = self._sorted_keys[where] != keys
        if missing.any():
            combination = factors[np.flatnonzero(missing)[0]]
            raise ValueError(
                f"no image of {self.name} has the factors "
                f"{dict(zip(self.factor_names, combination.tolist()))}: {self.grid_note}")
        return self._rows_by_key[where]

    def sample_factors(self, rng: np.random.Generator, n: int) -> np.ndarray:
        """Uniform over the grid when the labels fill it; otherwise the factors of n
        rows drawn uniformly (the labelled rows' joint distribution)."""
        if self.full_grid:
            return super().sample_factors(rng, n)
        check_draw(rng, n)
        return self._row_factors[rng.integers(0, self.num_rows, size=int(n))]

    def describe_labels(self) -> str:
        """One line on what the labels allow, for `describe` and messages."""
        parts = [f"{self.num_rows} images {'x'.join(map(str, self.image_shape))}"]
        if self.num_factors:
            grid = "x".join(map(str, self.factor_sizes))
            parts.append(f"factors {', '.join(self.factor_names)} on a {grid} grid"
                         + ("" if self.full_grid else f" ({self.grid_note})"))
        if self.label_names is not None:
            parts.append(f"concept labels {', '.join(self.label_names)}"
                         + (" with a causal graph" if self.causal_graph is not None else ""))
        if self.transition_pairs is not None:
            pairs = self.transition_pairs
            parts.append(f"{len(pairs.action)} transition pairs over "
                         f"{', '.join(pairs.variable_names)}")
        return "; ".join(parts)


# --------------------------------------------------------------------------- #
# Checks
# --------------------------------------------------------------------------- #
def check_images(images, name: str) -> int:
    """The number of images; ValueError unless `images` is [N, H, W, C] uint8."""
    shape, dtype = getattr(images, "shape", None), getattr(images, "dtype", None)
    if shape is None or dtype is None:
        raise ValueError(f"{name}: images must be an array [N, H, W, C], got "
                         f"{type(images).__name__}")
    if len(shape) != 4:
        hint = (" (a grayscale stack [N, H, W] takes a channel axis: images[..., None])"
                if len(shape) == 3 else "")
        raise ValueError(f"{name}: images must have rank 4, [N, H, W, C]; got shape "
                         f"{tuple(shape)}{hint}")
    if np.dtype(dtype) != np.uint8:
        raise ValueError(f"{name}: images must be uint8 (0-255), got {np.dtype(dtype)}; convert "
                         f"them, e.g. np.round(images * 255).astype(np.uint8) for values in [0, 1]")
    if shape[0] < 1 or min(shape[1:]) < 1:
        raise ValueError(f"{name}: images of shape {tuple(shape)} hold no pixels")
    return int(shape[0])


def _factor_grid(factors, names, sizes, num_rows: int, name: str):
    """(row factor indices [N, F] int64, names, sizes, values) from the labels."""
    if factors is None:
        if names or sizes:
            raise ValueError(f"{name}: factor names or sizes given without factor labels")
        return np.zeros((num_rows, 0), np.int64), (), (), ()
    factors = np.asarray(factors)
    if factors.ndim == 1:
        factors = factors[:, None]
    if factors.ndim != 2:
        raise ValueError(f"{name}: factors must be [N, F], got shape {factors.shape}")
    if len(factors) != num_rows:
        raise ValueError(f"{name}: {num_rows} images but {len(factors)} rows of factors; "
                         f"give one row of factors per image")
    if not (np.issubdtype(factors.dtype, np.integer) or np.issubdtype(factors.dtype, np.floating)):
        raise ValueError(f"{name}: factors must be numbers, got dtype {factors.dtype}")
    if not np.isfinite(factors).all():
        row, column = np.argwhere(~np.isfinite(factors))[0]
        raise ValueError(f"{name}: factor {column} of image {row} is {factors[row, column]}")
    num_factors = factors.shape[1]
    names = tuple(str(n) for n in names) if names is not None else tuple(
        f"factor_{f}" for f in range(num_factors))
    if len(names) != num_factors or len(set(names)) != num_factors:
        raise ValueError(f"{name}: {num_factors} factors need {num_factors} distinct names, "
                         f"got {names}")
    if sizes is not None:
        sizes = tuple(int(s) for s in sizes)
        if len(sizes) != num_factors:
            raise ValueError(f"{name}: {num_factors} factors but {len(sizes)} factor sizes")
        if not np.issubdtype(factors.dtype, np.integer):
            raise ValueError(f"{name}: with factor sizes given, factors are grid indices and "
                             f"must be integers, got {factors.dtype}")
        for f, size in enumerate(sizes):
            bad = (factors[:, f] < 0) | (factors[:, f] >= size)
            if bad.any():
                raise ValueError(f"{name}: factor {names[f]!r} of size {size} is "
                                 f"{factors[bad, f][0]} at image {np.flatnonzero(bad)[0]}; "
                                 f"grid indices run from 0 to {size - 1}")
        indices = factors.astype(np.int64)
        values = tuple(np.arange(size, dtype=np.float64) for size in sizes)
    else:
        columns = [np.unique(factors[:, f], return_inverse=True) for f in range(num_factors)]
        indices = np.stack([inverse.reshape(-1) for _, inverse in columns], axis=1).astype(np.int64)
        values = tuple(distinct.astype(np.float64) for distinct, _ in columns)
        sizes = tuple(len(v) for v in values)
    for f, size in enumerate(sizes):
        if size < 2 or len(np.unique(indices[:, f])) < 2:
            raise ValueError(f"{name}: factor {names[f]!r} takes one value in all {num_rows} "
                             f"images, so nothing can be learned or scored about it; drop it")
    return indices, names, sizes, values


def _why_not_a_grid(num_factors, distinct, num_rows, grid_size, sizes) -> str:
    if not num_factors:
        return "no factor labels"
    grid = "x".join(map(str, sizes))
    return (f"the labels hold {distinct} of the {grid_size} combinations of the {grid} grid"
            + (f", {num_rows - distinct} of the {num_rows} images repeating one"
               if num_rows > distinct else ""))


def _labels(labels, names, num_rows: int, name: str):
    if labels is None:
        if names:
            raise ValueError(f"{name}: label names given without labels")
        return None, None
    labels = np.asarray(labels)
    if labels.ndim == 1:
        labels = labels[:, None]
    if labels.ndim != 2 or not (np.issubdtype(labels.dtype, np.integer)
                                or np.issubdtype(labels.dtype, np.floating)):
        raise ValueError(f"{name}: labels must be numbers [N, L], got {labels.dtype} "
                         f"{labels.shape}")
    if len(labels) != num_rows:
        raise ValueError(f"{name}: {num_rows} images but {len(labels)} rows of labels; "
                         f"give one row of labels per image")
    if not np.isfinite(labels).all():
        row, column = np.argwhere(~np.isfinite(labels))[0]
        raise ValueError(f"{name}: label {column} of image {row} is {labels[row, column]}")
    names = tuple(str(n) for n in names) if names is not None else tuple(
        f"label_{i}" for i in range(labels.shape[1]))
    if len(names) != labels.shape[1] or len(set(names)) != len(names):
        raise ValueError(f"{name}: {labels.shape[1]} labels need as many distinct names, "
                         f"got {names}")
    return names, labels.astype(np.float32)


def _causal_graph(graph, label_names, name: str):
    if graph is None:
        return None
    if label_names is None:
        raise ValueError(f"{name}: a causal graph is over the concept labels; give labels too")
    graph = np.asarray(graph)
    size = len(label_names)
    if graph.shape != (size, size) or not np.isin(graph, (0, 1)).all():
        raise ValueError(f"{name}: the causal graph must be a {size}x{size} 0/1 matrix over "
                         f"{', '.join(label_names)} (graph[i, j] = 1: i causes j); got "
                         f"shape {graph.shape}")
    if np.diag(graph).any():
        raise ValueError(f"{name}: the causal graph has a self-loop on "
                         f"{label_names[int(np.flatnonzero(np.diag(graph))[0])]}")
    return graph.astype(np.int64)
