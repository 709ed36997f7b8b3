r"""A nonlinear conditional-independence test: kNN-regression residuals + HSIC.

X ⊥ Y | S is tested by regressing X and Y on S nonparametrically (leave-one-out
k-nearest-neighbour regression, `knn_residuals`) and testing the two residuals for
marginal independence with the Hilbert-Schmidt Independence Criterion (Gretton,
Fukumizu, Teo, Song, Schölkopf & Smola, "A Kernel Statistical Test of
Independence", NIPS 2008), Gaussian kernels with median-heuristic bandwidths and a
permutation p-value (`hsic_test`). With S = ∅ it is HSIC on the centred variables.

Independence of regression residuals is a proxy for conditional independence that
is exact when X and Y are (additive-noise) functions of S plus independent noise,
the case of CausalVAE's concept labels, whose effects are near-deterministic
functions of their causes (where likelihood scores such as BIC break down).

`ResidualHSICTest` bundles the standardised data, the neighbours, the HSIC
subsample and the permutations, and caches residuals and p-values; its `p_value`
is what `pc.pc_skeleton` takes.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

# (i, j, conditioning) -> p-value of the hypothesis X_i ⊥ X_j | X_conditioning.
IndependenceTest = Callable[[int, int, tuple[int, ...]], float]


@dataclass(frozen=True)
class CITest:
    """One decision: X_i ⊥ X_j | X_conditioning is accepted (independent) iff p >= alpha."""

    i: int
    j: int
    conditioning: tuple[int, ...]
    p_value: float
    independent: bool


def standardise(data: np.ndarray) -> np.ndarray:
    """[N, d] -> each column centred and scaled to unit variance (constant columns
    only centred)."""
    data = _check_data(data)
    scale = data.std(axis=0)
    return (data - data.mean(axis=0)) / np.where(scale > 0, scale, 1.0)


def knn_residuals(data: np.ndarray, target: int, conditioning: Sequence[int],
                  neighbours: int = 10) -> np.ndarray:
    """[N] residual of column `target` after leave-one-out kNN regression on `conditioning`.

    Row n's prediction is the mean of the target over the `neighbours` nearest other
    rows in the conditioning columns (Euclidean). The row itself is removed by
    index, not assumed to be the first neighbour returned: with duplicate rows
    (e.g. Flow's repeated water heights) a copy may come first. When the row is
    not among the neighbours + 1 returned (more duplicates than that at distance
    0), the last one is dropped instead. With an empty conditioning set the
    residual is the centred target.
    """
    data = _check_data(data)
    num_rows, num_columns = data.shape
    conditioning = [int(c) for c in conditioning]
    if not 0 <= target < num_columns or any(not 0 <= c < num_columns for c in conditioning):
        raise ValueError(f"columns out of range for data with {num_columns} columns")
    if target in conditioning:
        raise ValueError(f"target {target} is in the conditioning set {conditioning}")
    values = data[:, target]
    if not conditioning:
        return values - values.mean()
    if not 1 <= neighbours < num_rows:
        raise ValueError(f"neighbours must be in [1, {num_rows - 1}], got {neighbours}")
    from scipy.spatial import cKDTree  # half a second to import: only where it is used

    inputs = data[:, conditioning]
    _, index = cKDTree(inputs).query(inputs, k=neighbours + 1)
    is_self = index == np.arange(num_rows)[:, None]
    is_self[~is_self.any(axis=1), -1] = True  # row not returned: drop the farthest
    others = index[~is_self].reshape(num_rows, neighbours)
    return values - values[others].mean(axis=1)


def gaussian_gram(x: np.ndarray) -> np.ndarray:
    """[n] or [n, p] -> [n, n] Gaussian kernel exp(−‖x_a − x_b‖² / 2σ²), σ the
    median of the nonzero pairwise distances (1 if there are none)."""
    x = np.asarray(x, np.float64).reshape(len(x), -1)
    squared = np.sum((x[:, None, :] - x[None, :, :]) ** 2, axis=-1)
    distances = np.sqrt(squared[np.triu_indices(len(x), k=1)])
    distances = distances[distances > 0]
    bandwidth = float(np.median(distances)) if distances.size else 1.0
    return np.exp(-squared / (2.0 * bandwidth**2))


def hsic_test(x: np.ndarray, y: np.ndarray, rng: np.random.Generator,
              num_permutations: int = 200) -> tuple[float, float]:
    """HSIC independence test of paired samples x, y ([n] or [n, p] each).

    Statistic HSIC_b = tr(K H L H) / n² (Gretton et al. 2008, biased estimator),
    with H = I − 11ᵀ/n. Its null distribution is sampled by permuting y: since
    H commutes with permutations, tr(K H P L Pᵀ H) = Σ_ab (HKH)_ab L_{π(a)π(b)},
    so the centred Gram matrix HKH is computed once and each permutation is one
    gather of L. The sums are taken in float32 (the statistic by the same routine
    as the permutations, so ties compare exactly). p = (1 + #{null ≥ statistic}) /
    (1 + num_permutations). Returns (statistic, p_value).
    """
    x, y = np.asarray(x, np.float64), np.asarray(y, np.float64)
    if len(x) != len(y) or len(x) < 2:
        raise ValueError(f"x and y need the same number (>= 2) of samples, got {len(x)}, {len(y)}")
    if num_permutations < 1:
        raise ValueError(f"num_permutations must be >= 1, got {num_permutations}")
    size = len(x)
    gram_x, gram_y = gaussian_gram(x), gaussian_gram(y)
    centred_x = (gram_x - gram_x.mean(axis=0) - gram_x.mean(axis=1)[:, None]
                 + gram_x.mean()).astype(np.float32)
    gram_y = gram_y.astype(np.float32)

    def statistic(permutation: np.ndarray | None) -> float:
        permuted = gram_y if permutation is None else gram_y[permutation][:, permutation]
        return float(np.vdot(centred_x, permuted)) / size**2

    observed = statistic(None)
    null = np.array([statistic(rng.permutation(size)) for _ in range(num_permutations)])
    p_value = (1 + int(np.sum(null >= observed))) / (1 + num_permutations)
    return observed, p_value


class ResidualHSICTest:
    """X_i ⊥ X_j | X_S by HSIC between the kNN residuals of X_i and X_j on X_S.

    data: [N, d], standardised per column here. The residuals use all N rows; the
    HSIC test uses one random subsample of `subsample` rows (all rows if N is
    smaller), drawn once from `seed`. Each test's permutations come from a
    generator seeded by (seed, i, j, S) with i < j and S sorted, so a p-value does
    not depend on the order the tests are asked in, and results are cached per
    (unordered pair, set). Deterministic for a given seed.
    """

    def __init__(self, data: np.ndarray, neighbours: int = 10, subsample: int = 800,
                 num_permutations: int = 200, seed: int = 0) -> None:
        if subsample < 2:
            raise ValueError(f"subsample must be >= 2, got {subsample}")
        if seed < 0:
            raise ValueError(f"seed must be >= 0, got {seed}")
        self.data = standardise(data)
        self.neighbours = neighbours
        self.num_permutations = num_permutations
        self.seed = seed
        num_rows = len(self.data)
        rng = np.random.default_rng(seed)
        self.rows = np.sort(rng.choice(num_rows, size=min(subsample, num_rows), replace=False))
        self._residuals: dict[tuple[int, tuple[int, ...]], np.ndarray] = {}
        self._results: dict[tuple[int, int, tuple[int, ...]], tuple[float, float]] = {}

    @property
    def num_nodes(self) -> int:
        return self.data.shape[1]

    def residuals(self, target: int, conditioning: Sequence[int]) -> np.ndarray:
        """[N] cached `knn_residuals` of column `target` on `conditioning`."""
        key = (int(target), tuple(sorted(int(c) for c in conditioning)))
        if key not in self._residuals:
            self._residuals[key] = knn_residuals(self.data, key[0], key[1], self.neighbours)
        return self._residuals[key]

    def test(self, i: int, j: int, conditioning: Sequence[int] = ()) -> tuple[float, float]:
        """(HSIC statistic, p-value) of X_i ⊥ X_j | X_conditioning, cached."""
        i, j = sorted((int(i), int(j)))
        conditioning = tuple(sorted(int(c) for c in conditioning))
        if i == j or i in conditioning or j in conditioning:
            raise ValueError(f"invalid test {i} ⊥ {j} | {conditioning}")
        if len(set(conditioning)) != len(conditioning):
            raise ValueError(f"repeated node in conditioning set {conditioning}")
        key = (i, j, conditioning)
        if key not in self._results:
            rng = np.random.default_rng([self.seed, len(conditioning), i, j, *conditioning])
            self._results[key] = hsic_test(self.residuals(i, conditioning)[self.rows],
                                           self.residuals(j, conditioning)[self.rows],
                                           rng, self.num_permutations)
        return self._results[key]

    def p_value(self, i: int, j: int, conditioning: Sequence[int] = ()) -> float:
        return self.test(i, j, conditioning)[1]

    __call__ = p_value

    @property
    def num_tests_run(self) -> int:
        """Distinct tests computed so far (cache size)."""
        return len(self._results)


def all_tests(num_nodes: int, independence_test: IndependenceTest,
              alpha: float = 0.05) -> list[CITest]:
    """Every test on `num_nodes` variables: each pair i < j given each subset of the
    other nodes (24 on 4 nodes), decided at level alpha. To score every DAG on the
    same evidence (`graphs.ci_disagreement`), unlike PC's adaptively chosen tests."""
    tests = []
    for i, j in itertools.combinations(range(num_nodes), 2):
        rest = [k for k in range(num_nodes) if k not in (i, j)]
        for size in range(len(rest) + 1):
            for conditioning in itertools.combinations(rest, size):
                p_value = float(independence_test(i, j, conditioning))
                tests.append(CITest(i, j, conditioning, p_value, p_value >= alpha))
    return tests


def _check_data(data: np.ndarray) -> np.ndarray:
    data = np.asarray(data, np.float64)
    if data.ndim != 2 or len(data) < 2:
        raise ValueError(f"data must be [N >= 2, d], got shape {data.shape}")
    if not np.isfinite(data).all():
        raise ValueError("data has non-finite entries")
    return data
