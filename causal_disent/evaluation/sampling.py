"""Drawing the arrays the disentanglement scores need from a `FactorDataset`.

`representation_fn(images [B, H, W, C] uint8) -> [B, D] float` is the encoder mean
(SPEC §5). A representation with a `codes_of_factors(factors [n, F]) -> [n, D]`
method (the ground truth, a random projection, a cache of encoded images; see
`representations`) is asked for the codes of the factors directly, with no
rendering here. Otherwise it is called on batches of `batch_size` images (disentanglement_lib
uses 16 for MIG/DCI/SAP/modularity and the score batch of 64 for BetaVAE/FactorVAE;
with a deterministic encoder the batch size does not change the result, so we use
64 throughout). All randomness comes from the numpy Generator passed in.

BetaVAE and FactorVAE sample fixed-factor batches: here the factor vectors of many
points are drawn at once and rendered in chunks, which is much faster than
disentanglement_lib's one point at a time and draws from the same distribution
(not the same stream of numbers).
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from causal_disent.data.base import FactorDataset
from causal_disent.evaluation import scores

RepresentationFn = Callable[[np.ndarray], np.ndarray]

DEFAULT_BATCH_SIZE = 64
_IMAGES_PER_CHUNK = 4096  # rendered at once, bounds memory (64x64x3 uint8: 50 MB)


def representations_of(dataset: FactorDataset, representation_fn: RepresentationFn,
                       factors: np.ndarray, batch_size: int = DEFAULT_BATCH_SIZE) -> np.ndarray:
    """[n, F] factor indices -> [n, D] float64 codes of their rendered images."""
    factors = np.asarray(factors)
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    if len(factors) == 0:
        raise ValueError("no factors to represent")
    if hasattr(representation_fn, "codes_of_factors"):
        codes = np.asarray(representation_fn.codes_of_factors(factors), np.float64)
        _check_codes(codes, len(factors))
        return codes
    codes = []
    for start in range(0, len(factors), batch_size):
        images = dataset.render(factors[start : start + batch_size])
        batch_codes = np.asarray(representation_fn(images), np.float64)
        _check_codes(batch_codes, len(images))
        codes.append(batch_codes)
    return np.concatenate(codes, axis=0)


def _check_codes(codes: np.ndarray, count: int) -> None:
    if codes.ndim != 2 or len(codes) != count:
        raise ValueError(
            f"the representation must return [B, D] codes for B = {count} inputs, got "
            f"shape {codes.shape}"
        )


def sample_codes_and_factors(dataset: FactorDataset, representation_fn: RepresentationFn,
                             rng: np.random.Generator, num_points: int,
                             batch_size: int = DEFAULT_BATCH_SIZE) -> tuple[np.ndarray, np.ndarray]:
    """num_points i.i.d. uniform factor vectors and their codes: ([n, D], [n, F])."""
    factors = dataset.sample_factors(rng, num_points)
    return representations_of(dataset, representation_fn, factors, batch_size), factors


def fixed_factor_batches(dataset: FactorDataset, rng: np.random.Generator, num_points: int,
                         batch_size: int) -> tuple[np.ndarray, np.ndarray]:
    """num_points batches that share one factor value within each batch.

    Returns (fixed factor [P] int64, uniform in 0..F-1; factors [P, B, F]) where
    factor k of every row of batch p equals that of its first row (FactorVAE's vote
    batch; the other factors are i.i.d. uniform).
    """
    fixed = rng.integers(0, dataset.num_factors, size=num_points)
    factors = dataset.sample_factors(rng, num_points * batch_size).reshape(
        num_points, batch_size, dataset.num_factors)
    points = np.arange(num_points)
    factors[points, :, fixed] = factors[points, :1, fixed]
    return fixed, factors


def betavae_features(dataset: FactorDataset, representation_fn: RepresentationFn,
                     rng: np.random.Generator, num_points: int,
                     batch_size: int = DEFAULT_BATCH_SIZE) -> tuple[np.ndarray, np.ndarray]:
    """BetaVAE score inputs: ([P, D] features, [P] labels).

    Per point: a factor k uniform; two batches of `batch_size` i.i.d. factor vectors
    where the second copies factor k from the first, row by row (so factor k is
    shared pairwise, not constant across the batch, as disentanglement_lib);
    feature = mean over the batch of |r(x1) − r(x2)|; label = k.
    """
    labels = rng.integers(0, dataset.num_factors, size=num_points)
    features = []
    points_per_chunk = max(1, _IMAGES_PER_CHUNK // (2 * batch_size))
    for start in range(0, num_points, points_per_chunk):
        chunk = labels[start : start + points_per_chunk]
        count = len(chunk) * batch_size
        first = dataset.sample_factors(rng, count)
        second = dataset.sample_factors(rng, count)
        shared = np.repeat(chunk, batch_size)
        second[np.arange(count), shared] = first[np.arange(count), shared]
        codes = representations_of(dataset, representation_fn,
                                   np.concatenate([first, second]), batch_size)
        diff = np.abs(codes[:count] - codes[count:]).reshape(len(chunk), batch_size, -1)
        features.append(diff.mean(axis=1))
    return np.concatenate(features, axis=0), labels


def factorvae_global_variances(dataset: FactorDataset, representation_fn: RepresentationFn,
                               rng: np.random.Generator, num_points: int,
                               batch_size: int = DEFAULT_BATCH_SIZE) -> np.ndarray:
    """[D] variance (ddof 1) of each code over num_points i.i.d. samples."""
    codes, _ = sample_codes_and_factors(dataset, representation_fn, rng, num_points, batch_size)
    return np.var(codes, axis=0, ddof=1)


def factorvae_votes(dataset: FactorDataset, representation_fn: RepresentationFn,
                    rng: np.random.Generator, num_votes: int, global_variances: np.ndarray,
                    batch_size: int = DEFAULT_BATCH_SIZE,
                    threshold: float | None = None) -> np.ndarray:
    """[F, D] vote counts: votes[k, d] = batches with factor k fixed voting code d."""
    threshold = scores.FACTORVAE_STD_THRESHOLD if threshold is None else threshold
    votes = np.zeros((dataset.num_factors, len(global_variances)), np.int64)
    points_per_chunk = max(1, _IMAGES_PER_CHUNK // batch_size)
    for start in range(0, num_votes, points_per_chunk):
        count = min(points_per_chunk, num_votes - start)
        fixed, factors = fixed_factor_batches(dataset, rng, count, batch_size)
        codes = representations_of(dataset, representation_fn,
                                   factors.reshape(count * batch_size, -1), batch_size)
        voted = scores.factorvae_argmin_codes(
            codes.reshape(count, batch_size, -1), global_variances, threshold)
        np.add.at(votes, (fixed, voted), 1)
    return votes
