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
  x       f(s) = W_L·g(··· g(W_1·s)), an MLP of L square layers with g between
          layers (none after the last: L = 1 is linear ICA): a leaky ReLU, or the
          iVAE authors' xtanh, g(x) = tanh(x) + α·x (`activation`, `slope`)

Each W_l is d x d and well conditioned, of one of three kinds (`matrices`):

  orthogonal              Haar-random orthogonal (condition number 1), the default
  lower_quartile          Gaussian with unit-norm columns, redrawn until its
                          condition number is below the lower quartile of such
                          matrices' (estimated from 1000 draws), after the TCL
                          experiments' practice of mixing by well-conditioned
                          random matrices
  uniform_lower_quartile  the iVAE authors' (ilkhem/iVAE, data/data.py,
                          `generate_mixing_matrix`): entries U(−1, 1), each row of W
                          (column of their x·A) scaled to unit norm, below the lower
                          quartile of 10 000 such draws

With `repeat_matrix` one matrix mixes in every layer, as the authors' dataset loader
has it (`repeat_linearity=True`).

Why orthogonal by default: the iVAE's Gaussian posterior is diagonal, while with a
small decoder noise σ² the true posterior's precision is about JᵀJ / σ², J the
Jacobian of f: correlated unless J's columns are orthogonal. The ELBO then pays
KL(q ‖ posterior) at the true sources and may prefer mixed ones. For linear mixing by
lower-quartile 5 x 5 matrices that costs 1.0-1.5 nats per point at the truth, and
the iVAE stalled at MCC ≈ 0.8; orthogonal matrices cost nothing there, and it
recovered the sources (MCC 0.999): benchmarks/ivae_identifiability.py has the
figures. Either way f is a bijection of R^d (leaky ReLU with slope > 0 is strictly
increasing, and so is xtanh) and `unmix` inverts it (exactly for the leaky ReLU, by
bisection for xtanh). Pure NumPy; one `seed` fixes everything.
"""

from __future__ import annotations

import dataclasses

import numpy as np

DISTRIBUTIONS = ("gaussian", "laplace")
MATRICES = ("orthogonal", "lower_quartile", "uniform_lower_quartile")
ACTIVATIONS = ("leaky_relu", "xtanh")
# Draws that set the condition-number threshold, per kind (the authors' 10 000).
CONDITION_POOLS = {"lower_quartile": 1000, "uniform_lower_quartile": 10_000}
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
    slope: float  # the leaky ReLU's negative slope, or xtanh's α
    activation: str = "leaky_relu"  # between layers (ACTIVATIONS)


def leaky_relu(x: np.ndarray, negative_slope: float) -> np.ndarray:
    return np.where(x >= 0, x, negative_slope * x)


def inverse_leaky_relu(y: np.ndarray, negative_slope: float) -> np.ndarray:
    return np.where(y >= 0, y, y / negative_slope)


def xtanh(x: np.ndarray, slope: float) -> np.ndarray:
    """tanh(x) + slope·x, the iVAE authors' activation."""
    return np.tanh(x) + slope * x


def inverse_xtanh(y: np.ndarray, slope: float, iterations: int = 64) -> np.ndarray:
    """x with xtanh(x, slope) = y, by bisection: xtanh increases, and since |tanh| < 1
    the root lies in ((y − 1) / slope, (y + 1) / slope); 64 halvings of that width
    2 / slope leave less than float64's rounding."""
    y = np.asarray(y, np.float64)
    low, high = (y - 1.0) / slope, (y + 1.0) / slope
    for _ in range(iterations):
        middle = 0.5 * (low + high)
        above = xtanh(middle, slope) > y
        low, high = np.where(above, low, middle), np.where(above, middle, high)
    return 0.5 * (low + high)


def _activation(activation: str):
    """(g, g⁻¹) of `activation` (ACTIVATIONS), each taking (x, slope)."""
    if activation == "xtanh":
        return xtanh, inverse_xtanh
    return leaky_relu, inverse_leaky_relu


def mix(s: np.ndarray, weights, slope: float, activation: str = "leaky_relu") -> np.ndarray:
    """f(s) [n, d] of sources [n, d]: each layer is s -> s·W_lᵀ, `activation` of
    `slope` between layers."""
    forward, _ = _activation(activation)
    x = np.asarray(s, np.float64)
    for layer, weight in enumerate(weights):
        if layer:
            x = forward(x, slope)
        x = x @ weight.T
    return x


def unmix(x: np.ndarray, weights, slope: float, activation: str = "leaky_relu") -> np.ndarray:
    """f⁻¹(x) [n, d]: the layers undone in reverse order (solve, then the
    activation's inverse)."""
    _, inverse = _activation(activation)
    s = np.asarray(x, np.float64)
    for layer in reversed(range(len(weights))):
        s = np.linalg.solve(weights[layer], s.T).T
        if layer:
            s = inverse(s, slope)
    return s


def random_unit_column_matrix(rng: np.random.Generator, size: int) -> np.ndarray:
    """A [size, size] standard Gaussian matrix with its columns scaled to unit norm."""
    weight = rng.normal(size=(size, size))
    return weight / np.linalg.norm(weight, axis=0)


def random_unit_row_uniform_matrix(rng: np.random.Generator, size: int) -> np.ndarray:
    """A [size, size] matrix of U(−1, 1) entries with its rows scaled to unit norm: the
    transpose of the iVAE authors' A (unit-norm columns), which mixes as x·A."""
    weight = rng.uniform(-1.0, 1.0, size=(size, size))
    return weight / np.linalg.norm(weight, axis=1, keepdims=True)


def well_conditioned_matrices(rng: np.random.Generator, size: int, count: int,
                              matrices: str = "lower_quartile") -> tuple[np.ndarray, ...]:
    """`count` [size, size] random matrices of the kind `matrices` ("lower_quartile":
    `random_unit_column_matrix`, "uniform_lower_quartile":
    `random_unit_row_uniform_matrix`) whose condition numbers are below the lower
    quartile of `CONDITION_POOLS[matrices]` such draws (from the same rng)."""
    draw = (random_unit_row_uniform_matrix if matrices == "uniform_lower_quartile"
            else random_unit_column_matrix)
    pool = [np.linalg.cond(draw(rng, size)) for _ in range(CONDITION_POOLS[matrices])]
    threshold = np.quantile(pool, CONDITION_QUANTILE)
    kept = []
    while len(kept) < count:
        weight = draw(rng, size)
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
    return well_conditioned_matrices(rng, size, count, matrices)


def check_arguments(num_sources, num_segments, points_per_segment, num_layers,
                    distribution, std_range, mean_range, slope, matrices,
                    activation) -> None:
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
    if activation not in ACTIVATIONS:
        raise ValueError(f"activation {activation!r} is unknown; known: "
                         f"{', '.join(ACTIVATIONS)}")
    if not 0 < std_range[0] <= std_range[1]:
        raise ValueError(f"std_range must be (low, high) with 0 < low <= high, got {std_range}")
    if mean_range < 0:
        raise ValueError(f"mean_range must be >= 0, got {mean_range}")
    if not 0 < slope <= 1:
        # 0 would make f non-injective (a leaky ReLU) or bounded (xtanh); > 1 is a
        # leaky ReLU mirrored.
        raise ValueError(f"slope must be in (0, 1], got {slope}")


def make_nonlinear_ica(seed: int, num_sources: int = 5, num_segments: int = 40,
                       points_per_segment: int = 1000, num_layers: int = 3,
                       distribution: str = "gaussian",
                       std_range: tuple[float, float] = (0.5, 3.0),
                       mean_range: float = 0.0,
                       slope: float = 0.2,
                       matrices: str = "orthogonal",
                       activation: str = "leaky_relu",
                       repeat_matrix: bool = False) -> NonlinearICAData:
    """Draws the segments' source parameters, the sources, the mixing MLP and x = f(s)
    (see the module docstring), all from numpy's default_rng(seed). The defaults are
    the paper's sizes: d = 5 sources, M = 40 segments of 1000 points. The iVAE
    authors' data: matrices="uniform_lower_quartile", activation="xtanh", slope=0.1,
    repeat_matrix=True."""
    check_arguments(num_sources, num_segments, points_per_segment, num_layers, distribution,
                    std_range, mean_range, slope, matrices, activation)
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
    weights = mixing_matrices(rng, num_sources, 1 if repeat_matrix else num_layers, matrices)
    weights = weights * num_layers if repeat_matrix else weights
    return NonlinearICAData(
        x=mix(s, weights, slope, activation), s=s,
        u=np.eye(num_segments, dtype=np.float32)[segment], segment=segment,
        means=means, stds=stds, weights=weights, slope=slope, activation=activation)
