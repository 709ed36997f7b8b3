"""The one interface every ground-truth dataset offers (metrics, transitions and
figures use nothing else).

A factor dataset is a full grid of discrete factors: image `index` is the row-major
flat index of its factor-index tuple (last factor fastest), as in the official
Shapes3D and dSprites files. A subclass states its factors and renders or reads
images at flat indices (`_images_at`); this base class does the indexing, the
sampling and the validation, so every dataset rejects bad input the same way.

Datasets whose labels are continuous concepts (Pendulum, Flow) also expose
`label_names`, `labels(index)` and `causal_graph` (over the labels); datasets with a
published split expose it through `predefined_split()`.
"""

from __future__ import annotations

import math

import numpy as np


class FactorDataset:
    """Images on a full grid of discrete ground-truth factors.

    Subclasses set, before calling `super().__init__()` or as class attributes:
      name: registry name.
      image_shape: (H, W, channels) of the uint8 images.
      factor_names: tuple of F names.
      factor_sizes: tuple of F cardinalities.
      factor_values: tuple of F float arrays, the value each factor index stands for.
    and implement `_images_at(index)`.

    Optional, overridden where known:
      nuisance_factors: indices of factors no action moves (transitions keep them
        fixed), e.g. SmallNORB's instance;
      label_names / labels(index): continuous concepts (None / not implemented);
      causal_graph: [L, L] int adjacency over the labels, graph[i, j] = 1 meaning
        label i causes label j (None when unknown);
      predefined_split(): the published split, or None to use a seeded one.
    """

    name: str = ""
    image_shape: tuple[int, int, int] = (0, 0, 0)
    factor_names: tuple[str, ...] = ()
    factor_sizes: tuple[int, ...] = ()
    factor_values: tuple[np.ndarray, ...] = ()
    label_names: tuple[str, ...] | None = None
    nuisance_factors: tuple[int, ...] = ()
    causal_graph: np.ndarray | None = None

    def __init__(self) -> None:
        sizes = tuple(int(s) for s in self.factor_sizes)
        if len(sizes) != len(self.factor_names) or len(sizes) != len(self.factor_values):
            raise ValueError(
                f"{type(self).__name__}: factor_names, factor_sizes and factor_values "
                "must have one entry per factor"
            )
        for name, size, values in zip(self.factor_names, sizes, self.factor_values):
            if len(values) != size:
                raise ValueError(f"factor {name!r} has size {size} but {len(values)} values")
        self.factor_sizes = sizes
        self.num_factors = len(sizes)
        self.num_images = math.prod(sizes)
        self._strides = np.array([math.prod(sizes[i + 1 :]) for i in range(len(sizes))], np.int64)

    # -- indexing ----------------------------------------------------------- #
    def factors_to_index(self, factors: np.ndarray) -> np.ndarray:
        """[B, F] integer factor indices -> [B] int64 flat indices (last factor fastest)."""
        return self.check_factors(factors) @ self._strides

    def index_to_factors(self, index: np.ndarray) -> np.ndarray:
        """[B] integer flat indices -> [B, F] int64 factor indices."""
        index = self.check_index(index)
        return (index[:, None] // self._strides) % np.array(self.factor_sizes, np.int64)

    def factor_values_of(self, factors: np.ndarray) -> np.ndarray:
        """[B, F] factor indices -> [B, F] float64 factor values."""
        factors = self.check_factors(factors)
        columns = [
            np.asarray(values, np.float64)[factors[:, f]]
            for f, values in enumerate(self.factor_values)
        ]
        return np.stack(columns, axis=1) if columns else np.zeros((len(factors), 0))

    def sample_factors(self, rng: np.random.Generator, n: int) -> np.ndarray:
        """n factor-index tuples drawn uniformly and independently: [n, F] int64."""
        check_draw(rng, n)
        sizes = np.array(self.factor_sizes)
        return rng.integers(0, sizes, size=(int(n), len(sizes)), dtype=np.int64)

    # -- images ------------------------------------------------------------- #
    def images(self, index: np.ndarray) -> np.ndarray:
        """[B] flat indices -> [B, *image_shape] uint8 images."""
        index = self.check_index(index)
        images = self._images_at(index)
        expected = (len(index), *self.image_shape)
        if images.shape != expected or images.dtype != np.uint8:
            raise ValueError(
                f"{self.name}: expected uint8 images of shape {expected}, got "
                f"{images.dtype} {images.shape}; the data on disk does not match the "
                "dataset's definition (re-prepare it)"
            )
        return images

    def render(self, factors: np.ndarray) -> np.ndarray:
        """[B, F] factor indices -> [B, *image_shape] uint8 images."""
        return self.images(self.factors_to_index(factors))

    def _images_at(self, index: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    # -- optional metadata -------------------------------------------------- #
    def labels(self, index: np.ndarray) -> np.ndarray:
        """[B] flat indices -> [B, L] float labels (datasets with `label_names`)."""
        raise NotImplementedError(f"{self.name} has no continuous labels")

    def predefined_split(self) -> dict[str, np.ndarray] | None:
        """The published train/test split as {name: int64 indices}, or None."""
        return None

    # -- validation --------------------------------------------------------- #
    def check_factors(self, factors: np.ndarray) -> np.ndarray:
        """Validated int64 [B, F] copy of `factors`; ValueError naming the problem."""
        factors = np.asarray(factors)
        if factors.ndim != 2 or factors.shape[1] != self.num_factors:
            raise ValueError(
                f"factors must have shape [B, {self.num_factors}] (columns "
                f"{self.factor_names}), got shape {factors.shape}"
            )
        check_integer_dtype(factors, "factors")
        factors = factors.astype(np.int64)
        for column, (name, size) in enumerate(zip(self.factor_names, self.factor_sizes)):
            bad = (factors[:, column] < 0) | (factors[:, column] >= size)
            if bad.any():
                raise ValueError(
                    f"factor {name!r} (column {column}) must be in [0, {size - 1}], "
                    f"got {factors[bad, column][0]} at row {np.flatnonzero(bad)[0]}"
                )
        return factors

    def check_index(self, index: np.ndarray) -> np.ndarray:
        """Validated int64 [B] copy of `index`; ValueError naming the problem."""
        return check_image_index(index, self.num_images)


def check_draw(rng: np.random.Generator, n: int) -> None:
    """ValueError unless `rng` is a numpy Generator and `n` a non-negative integer."""
    if not isinstance(rng, np.random.Generator):
        raise ValueError(f"rng must be a numpy.random.Generator, got {type(rng).__name__}")
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 0:
        raise ValueError(f"n must be a non-negative integer, got {n!r}")


def check_integer_dtype(array: np.ndarray, what: str) -> None:
    # Empty lists arrive as float64; they are harmless, so let them through.
    if array.size and not (np.issubdtype(array.dtype, np.integer) and array.dtype != np.bool_):
        raise ValueError(f"{what} must hold integers, got dtype {array.dtype}")


def check_image_index(index: np.ndarray, num_images: int) -> np.ndarray:
    """Validated int64 [B] copy of image indices in [0, num_images)."""
    index = np.asarray(index)
    if index.ndim != 1:
        raise ValueError(f"index must have shape [B], got shape {index.shape}")
    check_integer_dtype(index, "index")
    index = index.astype(np.int64)
    bad = (index < 0) | (index >= num_images)
    if bad.any():
        raise ValueError(
            f"index must be in [0, {num_images - 1}], "
            f"got {index[bad][0]} at position {np.flatnonzero(bad)[0]}"
        )
    return index


def render_in_chunks(index: np.ndarray, render, chunk_size: int, image_shape) -> np.ndarray:
    """`render(index chunk)` over chunks of at most `chunk_size` images, concatenated:
    bounds a vectorised renderer's temporary memory whatever the batch size."""
    starts = range(0, len(index), chunk_size)
    chunks = [render(index[start : start + chunk_size]) for start in starts]
    if not chunks:
        return np.zeros((0, *image_shape), np.uint8)
    return np.concatenate(chunks)
