import numpy as np
import pytest

from causal_disent.discovery.graphs import is_acyclic
from causal_disent.evaluation.metrics import graphs

# pendulum-like DAG: 0 -> 2, 0 -> 3, 1 -> 2, 1 -> 3
TRUE = np.zeros((4, 4), int)
TRUE[[0, 0, 1, 1], [2, 3, 2, 3]] = 1


def with_edges(graph, add=(), remove=()):
    graph = graph.copy()
    for i, j in add:
        graph[i, j] = 1
    for i, j in remove:
        graph[i, j] = 0
    return graph


def test_shd_counts_each_differing_pair_once():
    shd = graphs.structural_hamming_distance
    assert shd(TRUE, TRUE) == 0
    assert shd(with_edges(TRUE, remove=[(0, 2)]), TRUE) == 1  # missing
    assert shd(with_edges(TRUE, add=[(2, 3)]), TRUE) == 1  # extra
    assert shd(with_edges(TRUE, add=[(2, 0)], remove=[(0, 2)]), TRUE) == 1  # reversed
    assert shd(with_edges(TRUE, add=[(2, 0)]), TRUE) == 1  # both directions for one
    assert shd(np.zeros((4, 4)), TRUE) == 4
    assert shd(TRUE.T, TRUE) == 4  # every edge reversed
    assert shd(with_edges(TRUE, add=[(1, 1)]), TRUE) == 0  # diagonal ignored


def test_shd_is_symmetric_and_convention_free():
    rng = np.random.default_rng(0)
    a, b = (np.triu(rng.integers(0, 2, (6, 6)), 1) for _ in range(2))
    d = graphs.structural_hamming_distance(a, b)
    assert d == graphs.structural_hamming_distance(b, a)
    assert d == graphs.structural_hamming_distance(a.T, b.T)


def test_shd_thresholds_a_weighted_learned_graph():
    weighted = 0.05 * np.ones((4, 4)) + 0.9 * TRUE
    weighted[1, 3] = -0.8  # the sign does not matter, the magnitude does
    assert graphs.structural_hamming_distance(weighted, TRUE, threshold=0.3) == 0
    assert graphs.structural_hamming_distance(weighted, TRUE, threshold=0.85) == 1
    # threshold 0: every nonzero weight is an edge, so all 6 pairs are connected
    assert graphs.structural_hamming_distance(weighted, TRUE) == 6


def test_is_acyclic():
    assert is_acyclic(TRUE)
    assert is_acyclic(np.zeros((3, 3)))
    assert not is_acyclic(with_edges(TRUE, add=[(3, 1)]))  # 1 -> 3 -> 1
    cycle = np.roll(np.eye(5), 1, axis=1)  # 0 -> 1 -> 2 -> 3 -> 4 -> 0
    assert not is_acyclic(cycle)
    assert is_acyclic(cycle, threshold=1.0)
    assert not is_acyclic(np.eye(2))  # a self-loop is a cycle


@pytest.mark.parametrize(
    "learned, true",
    [(np.zeros((3, 4)), np.zeros((3, 4))), (np.zeros(3), np.zeros(3)),
     (np.zeros((3, 3)), np.zeros((4, 4))), (np.full((2, 2), np.nan), np.zeros((2, 2)))],
)
def test_shd_rejects_bad_graphs(learned, true):
    with pytest.raises(ValueError):
        graphs.structural_hamming_distance(learned, true)


def test_bad_inputs():
    with pytest.raises(ValueError, match="threshold"):
        graphs.structural_hamming_distance(TRUE, TRUE, threshold=-1.0)
    with pytest.raises(ValueError, match="square"):
        is_acyclic(np.zeros((2, 3)))
