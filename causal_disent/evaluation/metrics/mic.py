"""Maximal and total information coefficients (MIC, TIC) of learned concepts against
their labels: the metrics of Yang et al., "CausalVAE: Disentangled representation
learning via neural structural causal models", CVPR 2021, §6.1 and Table 1.

Our numpy port of ApproxMaxMI (Reshef et al., Science 2011, SOM Algorithms 2-5) as
minepy computes it with est="mic_approx" (minepy does not build on Python 3.11):

* B(n) = max(n**alpha, 4) bounds the grid: x columns times y rows <= B(n).
* For every row count r, the y axis is equipartitioned into r rows (ties never
  split, so there may be fewer); the x axis is cut by dynamic programming at the
  boundaries of "clumps" (maximal x-runs with one row label; a tie of x values that
  spans several rows is one clump). If there are more than clumps_factor * (B/r)
  clumps, they are first merged into that many equal-count superclumps.
* The same with the axes swapped; each cell keeps the larger of the two.
* Characteristic matrix M[x, y] = I*(x, y) / log(min(x, q)), q the number of rows
  the equipartition actually produced (as minepy; q = y without ties).

MIC = max M. TIC = sum M; normalised TIC = sum M / number of cells, in [0, 1] (as
minepy's tic(norm=True), which the CausalVAE evaluation reports). The CausalVAE paper
cites Kinney & Atwal (PNAS 2014) for both; the estimator is Reshef et al.'s. On
minepy's published example our values agree to all printed digits (tests).

Only the order of the values matters, so both scores are invariant under increasing
transforms of either variable. A constant variable gives one clump, hence 0.
"""

from __future__ import annotations

import math

import numpy as np

ALPHA = 0.6  # B(n) = n**0.6, Reshef et al.'s default
CLUMPS_FACTOR = 15.0  # minepy's c: at most c times as many clumps as columns


def characteristic_matrix(
    x: np.ndarray, y: np.ndarray, alpha: float = ALPHA, clumps_factor: float = CLUMPS_FACTOR
) -> np.ndarray:
    """ApproxMaxMI characteristic matrix of two [n] samples.

    Returns [K, K] float64 with K = floor(B/2) - 1: entry [i, j] scores the best grid
    found with i + 2 columns on x and j + 2 rows on y; cells with (i+2)(j+2) > B(n)
    are not searched and hold NaN.
    """
    x, y = _check_pair(x, y)
    if not 0.0 < alpha <= 1.0:
        raise ValueError(f"alpha must be in (0, 1], got {alpha}")
    if clumps_factor <= 0:
        raise ValueError(f"clumps_factor must be > 0, got {clumps_factor}")
    grid_bound = max(len(x) ** alpha, 4.0)
    x_rank, x_ties = _dense_ranks(x)
    y_rank, y_ties = _dense_ranks(y)
    x_optimised = _one_orientation(x_rank, y_rank, y_ties, grid_bound, clumps_factor)
    y_optimised = _one_orientation(y_rank, x_rank, x_ties, grid_bound, clumps_factor)
    return np.fmax(x_optimised, y_optimised.T)  # NaN only where both are


def mic_and_tic(
    x: np.ndarray, y: np.ndarray, normalized: bool = True, alpha: float = ALPHA,
    clumps_factor: float = CLUMPS_FACTOR,
) -> tuple[float, float]:
    """(MIC, TIC) of two [n] samples from one characteristic matrix."""
    matrix = characteristic_matrix(x, y, alpha, clumps_factor)
    total = float(np.nansum(matrix))
    if normalized:
        total /= int(np.isfinite(matrix).sum())
    return float(np.nanmax(matrix)), total


def mic(x: np.ndarray, y: np.ndarray, alpha: float = ALPHA,
        clumps_factor: float = CLUMPS_FACTOR) -> float:
    """Maximal information coefficient of two [n] samples, in [0, 1]."""
    return mic_and_tic(x, y, True, alpha, clumps_factor)[0]


def tic(x: np.ndarray, y: np.ndarray, normalized: bool = True, alpha: float = ALPHA,
        clumps_factor: float = CLUMPS_FACTOR) -> float:
    """Total information coefficient of two [n] samples; normalised: mean cell, in [0, 1]."""
    return mic_and_tic(x, y, normalized, alpha, clumps_factor)[1]


def concept_mic_tic(concepts: np.ndarray, labels: np.ndarray, alpha: float = ALPHA,
                    clumps_factor: float = CLUMPS_FACTOR) -> dict:
    """MIC and normalised TIC of each learned concept with its own label, as in
    CausalVAE's Table 1 (Yang et al., CVPR 2021, §6.2).

    concepts: [n, C] learned concept values (for k-dim concepts, the mean over the k
    dims); labels: [n, C], concept i matched with label i. Returns "mic" and "tic",
    the averages over concepts, and "mic_per_concept" / "tic_per_concept" [C], all
    ×100 as in the paper's Table 1.
    """
    concepts, labels = np.asarray(concepts), np.asarray(labels)
    if concepts.ndim != 2 or concepts.shape != labels.shape or concepts.shape[1] == 0:
        raise ValueError(
            f"expected concepts and labels of one shape [n, C], C >= 1, got "
            f"{concepts.shape} and {labels.shape}"
        )
    scores = 100.0 * np.array([
        mic_and_tic(concepts[:, i], labels[:, i], True, alpha, clumps_factor)
        for i in range(concepts.shape[1])
    ])
    return {
        "mic": float(scores[:, 0].mean()),
        "tic": float(scores[:, 1].mean()),
        "mic_per_concept": scores[:, 0].tolist(),
        "tic_per_concept": scores[:, 1].tolist(),
    }


# -- ApproxMaxMI --------------------------------------------------------------- #
def _check_pair(x, y) -> tuple[np.ndarray, np.ndarray]:
    x, y = np.asarray(x, np.float64), np.asarray(y, np.float64)
    if x.ndim != 1 or x.shape != y.shape:
        raise ValueError(
            f"expected two 1-D samples of one length, got {x.shape} and {y.shape}"
        )
    if len(x) < 2:
        raise ValueError(f"need at least 2 samples, got {len(x)}")
    if not (np.isfinite(x).all() and np.isfinite(y).all()):
        raise ValueError("samples must be finite (no NaN or inf)")
    return x, y


def _dense_ranks(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """[n] values -> [n] rank of each value's tie group, [G] tie-group sizes."""
    _, rank, sizes = np.unique(values, return_inverse=True, return_counts=True)
    return rank.reshape(-1), sizes


def _equipartition(group_sizes: np.ndarray, num_bins: int) -> np.ndarray:
    """Bin label of each ordered tie group: greedy equal-count bins, ties unsplit.

    SOM Algorithm 3 as minepy runs it: a group opens a new bin when the current one is
    nonempty and adding the group would leave it further from the target size, i.e.
    when the group's midpoint lies at or past the target; the target is the remaining
    points over the remaining bins. Loops over bins, not points.
    """
    starts = np.cumsum(group_sizes) - group_sizes  # points before each group
    midpoints = starts + group_sizes / 2.0
    total, num_groups = int(group_sizes.sum()), len(group_sizes)
    labels = np.empty(num_groups, np.int64)
    first, label, target = 0, 0, total / num_bins
    while True:
        end = max(int(np.searchsorted(midpoints, starts[first] + target)), first + 1)
        end = min(end, num_groups)
        labels[first:end] = label
        if end == num_groups:
            return labels
        first, label = end, label + 1
        target = (total - starts[first]) / (num_bins - label)


def _one_orientation(column_rank, row_rank, row_ties, grid_bound, clumps_factor):
    """[K, K] scores indexed [columns - 2, rows - 2]: rows equipartitioned, columns
    optimised (SOM Algorithm 5, one half); NaN outside the grid bound."""
    size = math.floor(grid_bound / 2) - 1
    scores = np.full((size, size), np.nan)
    order = np.argsort(column_rank, kind="stable")
    column_sorted = column_rank[order]
    new_tie = np.r_[True, column_sorted[1:] != column_sorted[:-1]]
    tie_starts, tie_id = np.flatnonzero(new_tie), np.cumsum(new_tie) - 1
    xlogx = _xlogx_table(len(column_rank))
    for num_rows in range(2, size + 2):
        max_columns = math.floor(grid_bound / num_rows)
        row_of_point = _equipartition(row_ties, num_rows)[row_rank][order]
        clump = _clumps(row_of_point, tie_starts, tie_id)
        max_clumps = max(int(clumps_factor * max_columns), 1)
        if clump[-1] + 1 > max_clumps:
            clump = _equipartition(np.bincount(clump), max_clumps)[clump]
        information = _max_information(row_of_point, clump, max_columns, xlogx)
        num_row_bins = int(row_of_point.max()) + 1
        columns = np.arange(2, max_columns + 1)
        with np.errstate(divide="ignore", invalid="ignore"):  # one row bin: I = 0
            normalised = information[1:] / np.log(np.minimum(columns, num_row_bins))
        scores[: max_columns - 1, num_rows - 2] = np.nan_to_num(normalised, nan=0.0)
    return scores


def _clumps(row_of_point, tie_starts, tie_id) -> np.ndarray:
    """Clump index of each point in column order (SOM §3.2, minepy GetClumpsPartition).

    A run of equal column values whose points fall in several rows cannot be split
    by any grid line, so it becomes a clump of its own (a unique negative label).
    """
    lowest = np.minimum.reduceat(row_of_point, tie_starts)
    highest = np.maximum.reduceat(row_of_point, tie_starts)
    label = np.where((lowest != highest)[tie_id], -1 - tie_id, row_of_point)
    return np.r_[0, np.cumsum(label[1:] != label[:-1])]


def _xlogx_table(n: int) -> np.ndarray:
    counts = np.arange(n + 1, dtype=np.float64)
    return counts * np.log(np.maximum(counts, 1.0))


def _max_information(row_of_point, clump, max_columns, xlogx) -> np.ndarray:
    """[max_columns] best mutual information (nats) with at most 1..max_columns columns
    cut at clump boundaries, rows fixed (SOM Algorithm 2).

    g_l[t] = -n_{1..t} H(rows | best l-column partition of clumps 1..t) obeys
    g_l[t] = max_{s <= t} g_{l-1}[s] - cost[s, t], cost[s, t] = n_{s+1..t} times the
    row entropy of clumps s+1..t (a max-plus matrix-vector product per l); then
    I_l = H(rows) + g_l[last] / n.
    """
    n, num_clumps = len(row_of_point), int(clump[-1]) + 1
    num_rows = int(row_of_point.max()) + 1
    if num_clumps == 1:
        return np.zeros(max_columns)
    counts = np.bincount(row_of_point * num_clumps + clump, minlength=num_rows * num_clumps)
    cumulative = np.zeros((num_rows, num_clumps + 1), np.int64)
    cumulative[:, 1:] = np.cumsum(counts.reshape(num_rows, num_clumps), axis=1)
    column_total = cumulative.sum(0)

    def between(cum):  # [s, t] -> cum[t] - cum[s], clipped where s > t
        return np.maximum(cum[None, :] - cum[:, None], 0)

    cost = xlogx[between(column_total)]
    for cum in cumulative:
        cost -= xlogx[between(cum)]
    cost[np.tril_indices(num_clumps + 1, -1)] = np.inf  # s > t: no such column

    row_counts = cumulative[:, -1]
    row_entropy = math.log(n) - float(xlogx[row_counts].sum()) / n
    gain = -cost[0]  # one column
    best = np.full(max_columns, gain[-1])
    buffer = np.empty_like(cost)
    for columns in range(1, min(max_columns, num_clumps)):  # more columns than clumps: no gain
        np.subtract(gain[:, None], cost, out=buffer)
        new_gain = buffer.max(axis=0)
        if np.array_equal(new_gain, gain):  # a fixed point: extra columns never help
            break
        gain = new_gain
        best[columns:] = gain[-1]
    return row_entropy + best / n
