"""Seeded image-level splits shared by every stage and metric."""

from collections.abc import Sequence

import numpy as np

SPLIT_NAMES = ("train", "validation", "test")


def split_indices(
    num_images: int, fractions: Sequence[float], seed: int
) -> dict[str, np.ndarray]:
    """Partitions flat image indices into train / validation / test.

    Each split is a random permutation of its members, so its first n indices are a
    uniform sample of it (evaluation on a subset takes a prefix).

    Args:
      num_images: dataset size.
      fractions: three non-negative fractions summing to 1.
      seed: the split seed (`config.data.split_seed`).
    Returns:
      {split name: int64 [n_split]}, disjoint and covering range(num_images).
    """
    check_split_fractions(fractions)
    order = np.random.default_rng(seed).permutation(num_images)
    bounds = np.round(np.cumsum(fractions)[:-1] * num_images).astype(int)
    return dict(zip(SPLIT_NAMES, np.split(order, bounds), strict=True))


def check_split_fractions(fractions: Sequence[float]) -> None:
    if len(fractions) != len(SPLIT_NAMES) or min(fractions) < 0:
        raise ValueError(
            f"data.split_fractions must be three non-negative fractions "
            f"(train, validation, test); got {tuple(fractions)}"
        )
    if abs(sum(fractions) - 1.0) > 1e-6:
        raise ValueError(
            f"data.split_fractions must sum to 1; got {tuple(fractions)} "
            f"(sum {sum(fractions)})"
        )


def dataset_split(dataset, fractions: Sequence[float], seed: int) -> dict[str, np.ndarray]:
    """The dataset's published split when it has one (e.g. Pendulum's train/test),
    else the seeded image-level split of `split_indices`.

    A published split lists its members in the dataset's order (Pendulum's test
    images run from the smallest pendulum angle up), so its held-out parts come in
    a seeded random order here: evaluation on a subset takes a prefix, which must be
    a uniform sample. Its train part keeps its order (batches are drawn from it by
    their own seeded permutation), so training is unchanged.
    """
    predefined = dataset.predefined_split() if hasattr(dataset, "predefined_split") else None
    if predefined is None:
        return split_indices(dataset.num_images, fractions, seed)
    rng = np.random.default_rng(seed)
    return {name: np.asarray(indices, np.int64) if name == "train"
            else rng.permutation(np.asarray(indices, np.int64))
            for name, indices in predefined.items()}


def configured_split(dataset, data_config) -> dict[str, np.ndarray]:
    """`dataset_split` with the fractions and seed of a run's `config.data`."""
    return dataset_split(dataset, data_config.split_fractions, data_config.split_seed)
