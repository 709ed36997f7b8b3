"""Synthetic nonlinear ICA with an observed auxiliary variable: the data of the
identifiability experiments of Khemakhem et al., "Variational Autoencoders and
Nonlinear ICA: A Unifying Framework", AISTATS 2020, §6, which follow the
nonstationary sources of time-contrastive learning (Hyvärinen & Morioka,
"Unsupervised Feature Extraction by Time-Contrastive Learning and Nonlinear ICA",
NeurIPS 2016, §5.1):

  u       the segment, one of M (one-hot); every segment holds the same number of
          points, segment-major
  s | u   d independent sources; source j in segment m is Gaussian (or Laplace) with
          mean μ_mj (0 unless `mean_range` > 0) and standard deviation σ_mj, both
          drawn once per segment and source: σ_mj ~ U[std_range], μ_mj ~ U[±mean_range]
  x       f(s) = W_L·g(··· g(W_1·s)), an MLP of L square layers with a leaky ReLU g
          between layers (none after the last: L = 1 is linear ICA)

Each W_l is d x d and well conditioned, of one of two kinds (`matrices`):

  orthogonal      Haar-random orthogonal (condition number 1), the default
  lower_quartile  Gaussian with unit-norm columns, redrawn until its condition
                  number is below the lower quartile of such matrices' (estimated
                  from `CONDITION_POOL` draws), after the TCL experiments' practice of
                  mixing by well-conditioned random matrices

Why orthogonal by default: the iVAE's Gaussian posterior is diagonal, while with a
small decoder noise σ² the true posterior's precision is about JᵀJ / σ², J the
Jacobian of f: correlated unless J's columns are orthogonal. The ELBO then pays
KL(q ‖ posterior) at the true sources and may prefer mixed ones. For linear mixing by
lower-quartile 5 x 5 matrices that costs 1.0-1.5 nats per point at the truth, and
the iVAE stalled at MCC ≈ 0.8; orthogonal matrices cost nothing there, and it
recovered the sources (MCC 0.999): benchmarks/ivae_identifiability.py has the
figures. Either way f is a bijection of R^d (leaky ReLU with slope > 0 is strictly
increasing) and `unmix` inverts it exactly. Pure NumPy; one `seed` fixes everything.
"""

from __future__ import annotations

import dataclasses

import numpy as np

DISTRIBUTIONS = ("gaussian", "laplace")
MATRICES = ("orthogonal", "lower_quartile")
CONDITION_POOL = 1000  # draws that set the condition-number threshold
CONDITION_QUANTILE = 0.25


@dataclasses.dataclass(frozen=True)
class NonlinearICAData:
    """One draw: n = M·points_per_segment points, d sources, M segments."""

    x: np.ndarray  # [n, d] float64 observations f(s)
    s: np.ndarray  # [n, d] float64 sources
    u: np.ndarray  # [n, M] float32 one-hot segment
    segment: np.ndarray  # [n] int64 segment index
    means: np.ndarray  # [M, d] per-segment source means
    stds: np.ndarray  # [M, d] per-segment source standard deviations
    weights: tuple[np.ndarray, ...]  # L [d, d] mixing matrices, first layer first
    negative_slope: float  # of the leaky ReLU between layers


def leaky_relu(x: np.ndarray, negative_slope: float) -> np.ndarray:
    return np.where(x >= 0, x, negative_slope * x)


def inverse_leaky_relu(y: np.ndarray, negative_slope: float) -> np.ndarray:
    return np.where(y >= 0, y, y / negative_slope)


def mix(s: np.ndarray, weights, negative_slope: float) -> np.ndarray:
    """f(s) [n, d] of sources [n, d]: each layer is s -> s·W_lᵀ, a leaky ReLU between
    layers."""
    x = np.asarray(s, np.float64)
    for layer, weight in enumerate(weights):
        if layer:
            x = leaky_relu(x, negative_slope)
        x = x @ weight.T
    return x


def unmix(x: np.ndarray, weights, negative_slope: float) -> np.ndarray:
    """f⁻¹(x) [n, d]: the layers undone in reverse order (solve, then the leaky ReLU's
    inverse)."""
    s = np.asarray(x, np.float64)
    for layer in reversed(range(len(weights))):
        s = np.linalg.solve(weights[layer], s.T).T
        if layer:
            s = inverse_leaky_relu(s, negative_slope)
    return s


def random_unit_column_matrix(rng: np.random.Generator, size: int) -> np.ndarray:
    """A [size, size] standard Gaussian matrix with its columns scaled to unit norm."""
    weight = rng.normal(size=(size, size))
    return weight / np.linalg.norm(weight, axis=0)


def well_conditioned_matrices(rng: np.random.Generator, size: int,
                              count: int) -> tuple[np.ndarray, ...]:
    """`count` [size, size] `random_unit_column_matrix` draws whose condition numbers
    are below the lower quartile of `CONDITION_POOL` such draws (from the same rng)."""
    pool = [np.linalg.cond(random_unit_column_matrix(rng, size))
            for _ in range(CONDITION_POOL)]
    threshold = np.quantile(pool, CONDITION_QUANTILE)
    kept = []
    while len(kept) < count:
        weight = random_unit_column_matrix(rng, size)
        if np.linalg.cond(weight) <= threshold:
            kept.append(weight)
    return tuple(kept)


def random_orthogonal_matrix(rng: np.random.Generator, size: int) -> np.ndarray:
    """A Haar-random [size, size] orthogonal matrix: Q of the QR decomposition of a
    Gaussian matrix, its columns' signs fixed by R's diagonal."""
    q, r = np.linalg.qr(rng.normal(size=(size, size)))
    return q * np.sign(np.diag(r))


def mixing_matrices(rng: np.random.Generator, size: int, count: int,
                    matrices: str) -> tuple[np.ndarray, ...]:
    """`count` [size, size] mixing matrices of the kind `matrices` (MATRICES)."""
    if matrices == "orthogonal":
        return tuple(random_orthogonal_matrix(rng, size) for _ in range(count))
    return well_conditioned_matrices(rng, size, count)


def check_arguments(num_sources, num_segments, points_per_segment, num_layers,
                    distribution, std_range, mean_range, negative_slope,
                    matrices) -> None:
    """ValueError naming the first argument of `make_nonlinear_ica` that is invalid."""
    for name, value in (("num_sources", num_sources), ("num_segments", num_segments),
                        ("points_per_segment", points_per_segment),
                        ("num_layers", num_layers)):
        if value < 1:
            raise ValueError(f"{name} must be positive, got {value}")
    if distribution not in DISTRIBUTIONS:
        raise ValueError(f"distribution {distribution!r} is unknown; known: "
                         f"{', '.join(DISTRIBUTIONS)}")
    if matrices not in MATRICES:
        raise ValueError(f"matrices {matrices!r} is unknown; known: {', '.join(MATRICES)}")
    if not 0 < std_range[0] <= std_range[1]:
        raise ValueError(f"std_range must be (low, high) with 0 < low <= high, got {std_range}")
    if mean_range < 0:
        raise ValueError(f"mean_range must be >= 0, got {mean_range}")
    if not 0 < negative_slope <= 1:
        # 0 would make f non-injective; > 1 is a leaky ReLU mirrored.
        raise ValueError(f"negative_slope must be in (0, 1], got {negative_slope}")


def make_nonlinear_ica(seed: int, num_sources: int = 5, num_segments: int = 40,
                       points_per_segment: int = 1000, num_layers: int = 3,
                       distribution: str = "gaussian",
                       std_range: tuple[float, float] = (0.5, 3.0),
                       mean_range: float = 0.0,
                       negative_slope: float = 0.2,
                       matrices: str = "orthogonal") -> NonlinearICAData:
    """Draws the segments' source parameters, the sources, the mixing MLP and x = f(s)
    (see the module docstring), all from numpy's default_rng(seed). The defaults are
    the paper's sizes: d = 5 sources, M = 40 segments of 1000 points."""
    check_arguments(num_sources, num_segments, points_per_segment, num_layers, distribution,
                    std_range, mean_range, negative_slope, matrices)
    rng = np.random.default_rng(seed)
    shape = (num_segments, num_sources)
    stds = rng.uniform(*std_range, size=shape)
    means = rng.uniform(-mean_range, mean_range, size=shape) if mean_range else np.zeros(shape)
    segment = np.repeat(np.arange(num_segments), points_per_segment)
    noise_shape = (len(segment), num_sources)
    if distribution == "gaussian":
        noise = rng.normal(size=noise_shape)
    else:  # Laplace with unit variance: scale 1/√2
        noise = rng.laplace(scale=1 / np.sqrt(2), size=noise_shape)
    s = means[segment] + stds[segment] * noise
    weights = mixing_matrices(rng, num_sources, num_layers, matrices)
    return NonlinearICAData(
        x=mix(s, weights, negative_slope), s=s,
        u=np.eye(num_segments, dtype=np.float32)[segment], segment=segment,
        means=means, stds=stds, weights=weights, negative_slope=negative_slope)
