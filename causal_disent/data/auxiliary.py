"""An observed auxiliary variable u per image, for models whose prior is conditioned
on one (iVAE: Khemakhem et al., "Variational Autoencoders and Nonlinear ICA: A
Unifying Framework", AISTATS 2020, §2.2, where u is e.g. a time segment or a class).
On a dataset of ground-truth factors, u is one factor, one-hot."""

from collections.abc import Callable

import numpy as np


def factor_position(dataset, factor: str) -> int:
    """The position of factor `factor` in `dataset.factor_names`; ValueError naming
    the known factors otherwise."""
    if factor not in dataset.factor_names:
        raise ValueError(f"vae.auxiliary.factor {factor!r} is not a factor of {dataset.name} "
                         f"(its factors: {', '.join(dataset.factor_names)})")
    return dataset.factor_names.index(factor)


def one_hot_factor(dataset, factor: str) -> Callable[[np.ndarray], np.ndarray]:
    """index [B] -> float32 [B, n]: the one-hot of factor `factor`'s value index at
    each flat image index, n = that factor's number of values."""
    position = factor_position(dataset, factor)
    identity = np.eye(dataset.factor_sizes[position], dtype=np.float32)

    def auxiliary(index: np.ndarray) -> np.ndarray:
        return identity[dataset.index_to_factors(index)[:, position]]

    return auxiliary
