"""Causal-graph metrics on adjacency matrices: the structural Hamming distance
(Tsamardinos, Brown & Aliferis, "The max-min hill-climbing Bayesian network
structure learning algorithm", Machine Learning 2006) between a learned and the
true graph. Whether a learned graph is a DAG, as CausalVAE's causal layer must be,
is `discovery.graphs.is_acyclic`.

graph[i, j] != 0 means an edge i -> j. The structural Hamming distance only needs
both graphs to use the same orientation convention, so the transposed convention
(M_ij = 1: j is a parent of i, as in the CT layer) gives the same counts.
"""

from __future__ import annotations

import numpy as np

from causal_disent.discovery.graphs import check_square


def structural_hamming_distance(learned: np.ndarray, true: np.ndarray,
                                threshold: float = 0.0) -> int:
    """Edge insertions, deletions and reversals that turn `learned` into `true`.

    learned: [d, d], possibly weighted: |learned[i, j]| > threshold is an edge.
    true: [d, d], any nonzero entry is an edge. Each node pair {i, j} that differs
    counts 1, so a reversed edge counts once (CDT's SHD with
    double_for_anticausal=False). The diagonal (self-loops) is ignored.
    """
    learned, true = check_square(learned, "learned"), check_square(true, "true")
    if learned.shape != true.shape:
        raise ValueError(f"learned {learned.shape} and true {true.shape} graphs differ in size")
    if threshold < 0:
        raise ValueError(f"threshold must be >= 0, got {threshold}")
    differs = (np.abs(learned) > threshold) != (true != 0)
    differs = differs | differs.T  # a pair differs if either direction does
    return int(np.triu(differs, k=1).sum())
