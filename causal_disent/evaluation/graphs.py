"""Causal-graph metrics (SPEC §5) on adjacency matrices.

graph[i, j] != 0 means an edge i -> j. The structural Hamming distance only needs
both graphs to use the same orientation convention, so the transposed convention
(M_ij = 1: j is a parent of i, as in the CT layer) gives the same counts.
"""

from __future__ import annotations

import numpy as np


def structural_hamming_distance(learned: np.ndarray, true: np.ndarray,
                                threshold: float = 0.0) -> int:
    """Edge insertions, deletions and reversals that turn `learned` into `true`.

    learned: [d, d], possibly weighted: |learned[i, j]| > threshold is an edge.
    true: [d, d], any nonzero entry is an edge. Each node pair {i, j} that differs
    counts 1, so a reversed edge counts once (CDT's SHD with
    double_for_anticausal=False). The diagonal (self-loops) is ignored.
    """
    learned, true = _check_square(learned, "learned"), _check_square(true, "true")
    if learned.shape != true.shape:
        raise ValueError(f"learned {learned.shape} and true {true.shape} graphs differ in size")
    if threshold < 0:
        raise ValueError(f"threshold must be >= 0, got {threshold}")
    differs = (np.abs(learned) > threshold) != (true != 0)
    differs = differs | differs.T  # a pair differs if either direction does
    return int(np.triu(differs, k=1).sum())


def is_acyclic(adjacency: np.ndarray, threshold: float = 0.0) -> bool:
    """Whether the graph of edges |adjacency[i, j]| > threshold has no directed cycle.

    A self-loop (a nonzero diagonal entry) is a cycle. Repeatedly removes the nodes
    without incoming edges (Kahn); a cycle is what is left when none can be removed.
    """
    edges = np.abs(_check_square(adjacency, "adjacency")) > threshold
    remaining = np.ones(len(edges), bool)
    while remaining.any():
        sources = remaining & ~edges[remaining].any(axis=0)
        if not sources.any():
            return False
        remaining &= ~sources
    return True


def _check_square(graph, name: str) -> np.ndarray:
    graph = np.asarray(graph, np.float64)
    if graph.ndim != 2 or graph.shape[0] != graph.shape[1]:
        raise ValueError(f"{name} must be a square [d, d] adjacency matrix, got {graph.shape}")
    if not np.isfinite(graph).all():
        raise ValueError(f"{name} has non-finite entries")
    return graph
