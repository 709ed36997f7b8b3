"""What the disentanglement metrics share: input checks, discretisation, mutual
information, the sampling of codes and factors, and the shape of a card entry.

Conventions of every score (as google-research/disentanglement_lib, the code of
Locatello et al., "Challenging common assumptions in the unsupervised learning of
disentangled representations", ICML 2019, re-implemented here):

* Arrays are sample-major: codes [n, D] float (D = num_dims, the width of the
  representation), factors [n, F] int (ground-truth factor indices);
  disentanglement_lib is dimension-major ([D, n]). Matrices indexed by
  (dimension, factor) are [D, F] in both.
* Mutual information is in nats, computed by `sklearn.metrics.mutual_info_score`
  on discrete labels. Codes are discretised per dimension into 20 equal-width bins
  over that dimension's range in the sample: label = np.digitize(code, edges[:-1])
  with edges = np.histogram(code, 20)[1], so labels are 1..20 and the maximum falls
  in bin 20. Factors are already discrete and are used as they are.

Sampling: `representation_fn(images [B, H, W, C] uint8) -> [B, D] float` is the
mean of the Gaussian encoder, the representation every method is scored by in
Locatello et al. (2019), §5.1. A representation with a
`codes_of_factors(factors [n, F]) -> [n, D]` method (the ground truth, a random
projection, a cache of encoded images; see `evaluation.representations`) is asked
for the codes of the factors directly, with no rendering here. Otherwise it is
called on batches of `batch_size` images (disentanglement_lib uses 16 for
MIG/DCI/SAP/modularity and the score batch of 64 for BetaVAE/FactorVAE; with a
deterministic encoder the batch size does not change the result, so we use 64
throughout). All randomness comes from the numpy Generator passed in.

The scores built on batches that share a factor (BetaVAE, FactorVAE) draw the
factors of many points or votes at once and render their images in chunks of
`IMAGES_PER_CHUNK`: much faster than disentanglement_lib's one at a time, from the
same distribution (not the same stream of numbers).
"""

from __future__ import annotations

import dataclasses
from typing import Callable

import numpy as np

from causal_disent.data import transitions
from causal_disent.data.base import FactorDataset

RepresentationFn = Callable[[np.ndarray], np.ndarray]

NUM_BINS = 20
DEFAULT_BATCH_SIZE = 64
IMAGES_PER_CHUNK = 4096  # rendered at once, bounds memory (64x64x3 uint8: 50 MB)

LOGISTIC_REGRESSION_NOTE = (
    "sklearn LogisticRegression() defaults (lbfgs, C=1, max_iter=100, multinomial), "
    "random_state from the metric's rng")


@dataclasses.dataclass(frozen=True)
class CardEntry:
    """One metric as the metric card runs and records it.

    run(dataset, representation_fn, rng, **parameters(num_samples)) -> scores;
    notes: the fixed settings recorded next to the scores; headline: the scores
    the metric is usually quoted by; sample_copies: the host memory the metric
    peaks at, in copies of its `num_samples` points' factors and codes (int64,
    float64), measured on dsprites_synth's identity map and a 32-code random
    projection (the larger of the two), plus a quarter.
    """

    name: str
    run: Callable[..., dict]
    parameters: Callable[[int], dict]
    notes: dict
    headline: tuple[str, ...]
    sample_copies: float
    # Sets one factor's value across otherwise random draws, so every combination of
    # the factors needs an image (one's own labels may not fill the grid).
    needs_full_grid: bool = False


# --------------------------------------------------------------------------- #
# Checks
# --------------------------------------------------------------------------- #
def check_codes_factors(codes: np.ndarray, factors: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Validated float64 [n, D] codes and int64 [n, F] factors with the same n."""
    codes = np.asarray(codes, np.float64)
    factors = np.asarray(factors)
    if codes.ndim != 2 or factors.ndim != 2:
        raise ValueError(
            "codes and factors must be 2-D [n, D] and [n, F], got "
            f"{codes.shape} and {factors.shape}"
        )
    if len(codes) != len(factors):
        raise ValueError(f"codes ({len(codes)} rows) and factors ({len(factors)} rows) differ in n")
    if len(codes) < 2:
        raise ValueError(f"need at least 2 samples, got {len(codes)}")
    if not np.all(np.isfinite(codes)):
        raise ValueError("codes hold NaN or inf")
    if factors.size and not np.issubdtype(factors.dtype, np.integer):
        raise ValueError(f"factors must hold integer indices, got dtype {factors.dtype}")
    return codes, factors.astype(np.int64)


def check_train_test(train_codes, train_factors, test_codes, test_factors):
    """`check_codes_factors` on the train and the test set, which must also agree
    in D and F. Returns the four validated arrays in the order given."""
    train_codes, train_factors = check_codes_factors(train_codes, train_factors)
    test_codes, test_factors = check_codes_factors(test_codes, test_factors)
    if (train_codes.shape[1] != test_codes.shape[1]
            or train_factors.shape[1] != test_factors.shape[1]):
        raise ValueError(
            f"train ({train_codes.shape[1]} dims, {train_factors.shape[1]} factors) and test "
            f"({test_codes.shape[1]} dims, {test_factors.shape[1]} factors) differ in width"
        )
    return train_codes, train_factors, test_codes, test_factors


# --------------------------------------------------------------------------- #
# Discretisation and mutual information
# --------------------------------------------------------------------------- #
def discretize_codes(codes: np.ndarray, num_bins: int = NUM_BINS) -> np.ndarray:
    """[n, D] float codes -> [n, D] int64 bin labels in 1..num_bins, per dimension.

    Equal-width bins over each dimension's own range (np.histogram edges), as
    disentanglement_lib's `histogram_discretize`. A constant dimension lands in one bin.
    """
    codes = np.asarray(codes, np.float64)
    if num_bins < 1:
        raise ValueError(f"num_bins must be >= 1, got {num_bins}")
    labels = np.empty(codes.shape, np.int64)
    for d in range(codes.shape[1]):
        edges = np.histogram(codes[:, d], num_bins)[1]
        labels[:, d] = np.digitize(codes[:, d], edges[:-1])
    return labels


def discrete_mutual_info(discrete_codes: np.ndarray, factors: np.ndarray) -> np.ndarray:
    """[D, F] mutual information (nats) between each discrete dimension and each factor."""
    from sklearn.metrics import mutual_info_score  # slow to import: see metrics/__init__.py
    num_dims, num_factors = discrete_codes.shape[1], factors.shape[1]
    mutual_info = np.zeros((num_dims, num_factors))
    for i in range(num_dims):
        for j in range(num_factors):
            mutual_info[i, j] = mutual_info_score(factors[:, j], discrete_codes[:, i])
    return mutual_info


# --------------------------------------------------------------------------- #
# Sampling codes and factors
# --------------------------------------------------------------------------- #
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


def scored_factor_indices(dataset: FactorDataset) -> np.ndarray:
    """The factors a representation is scored on: all but the dataset's
    `nuisance_factors` (SmallNORB's instance), in order, as an int64 array.

    A nuisance factor still varies, uniformly at random, in the images the metrics
    draw, but no score asks the codes to hold it: disentanglement_lib's SmallNORB
    scores category, elevation, azimuth and lighting and draws the instance at
    random. Without nuisance factors this is every factor, and the scores and their
    random streams are those of a plain factor grid. The same factors as the actions
    move (`transitions.action_factor_indices`).
    """
    return np.array(transitions.action_factor_indices(dataset), np.int64)


def sample_codes_and_factors(dataset: FactorDataset, representation_fn: RepresentationFn,
                             rng: np.random.Generator, num_points: int,
                             batch_size: int = DEFAULT_BATCH_SIZE) -> tuple[np.ndarray, np.ndarray]:
    """num_points i.i.d. uniform factor vectors and their codes: ([n, D], [n, F]),
    the factors reduced to the scored ones (`scored_factor_indices`)."""
    factors = dataset.sample_factors(rng, num_points)
    codes = representations_of(dataset, representation_fn, factors, batch_size)
    return codes, factors[:, scored_factor_indices(dataset)]


def sample_train_and_test(dataset: FactorDataset, representation_fn: RepresentationFn,
                          rng: np.random.Generator, num_train: int, num_test: int,
                          batch_size: int):
    """((train codes, train factors), (test codes, test factors)), train drawn first."""
    return (
        sample_codes_and_factors(dataset, representation_fn, rng, num_train, batch_size),
        sample_codes_and_factors(dataset, representation_fn, rng, num_test, batch_size),
    )


def classifier_seed(rng: np.random.Generator) -> int:
    """A classifier's random_state, drawn from the metric's rng."""
    return int(rng.integers(0, 2**31 - 1))


# --------------------------------------------------------------------------- #
# Card parameters shared by several metrics (num_samples -> keyword arguments)
# --------------------------------------------------------------------------- #
def one_sample_parameters(num_samples: int) -> dict:
    """One sample of num_samples points, discretised into NUM_BINS bins."""
    return {"num_train": num_samples, "batch_size": DEFAULT_BATCH_SIZE, "num_bins": NUM_BINS}


def train_test_parameters(num_samples: int) -> dict:
    """num_samples train points and half as many test points (10 000 / 5 000 by default)."""
    return {"num_train": num_samples, "num_test": num_samples // 2,
            "batch_size": DEFAULT_BATCH_SIZE}
