r"""Edge orientation of partially directed graphs: colliders from separating sets and
Meek's rules.

Matrix convention (CausalVAE's): g[a, b] = 1 and g[b, a] = 0 is a directed edge
a -> b (row = cause, column = effect); g[a, b] = g[b, a] = 1 an undirected edge.

`orient_colliders` is PC's v-structure step (Spirtes, Glymour & Scheines,
"Causation, Prediction, and Search", 2000, §5.4.2): for every unshielded triple
a − c − b whose separating set of (a, b) lacks c, orient a -> c <- b.
`apply_meek_rules` closes a pattern under Meek's rules R1–R3 (Meek, "Causal
inference and causal explanation with background knowledge", UAI 1995), which,
without background knowledge, turn the pattern of a DAG (skeleton + v-structures)
into its CPDAG; R4 is only needed with background knowledge.
"""

from __future__ import annotations

import itertools
from typing import Mapping

import numpy as np


def as_pdag(graph: np.ndarray) -> np.ndarray:
    """A square 0/1 int matrix with a zero diagonal, or ValueError."""
    graph = np.asarray(graph)
    if graph.ndim != 2 or graph.shape[0] != graph.shape[1]:
        raise ValueError(f"graph must be a square [d, d] matrix, got shape {graph.shape}")
    if not np.isin(graph, (0, 1)).all():
        raise ValueError("graph entries must be 0 or 1")
    graph = graph.astype(np.int64)
    if np.diag(graph).any():
        raise ValueError("graph has self-loops")
    return graph


def adjacent(graph: np.ndarray) -> np.ndarray:
    """[d, d] bool: a and b joined by any edge."""
    return (graph != 0) | (graph.T != 0)


def directed(graph: np.ndarray) -> np.ndarray:
    """[d, d] bool: a -> b directed."""
    return (graph != 0) & (graph.T == 0)


def undirected(graph: np.ndarray) -> np.ndarray:
    """[d, d] bool (symmetric): a − b undirected."""
    return (graph != 0) & (graph.T != 0)


def orient_colliders(
    skeleton: np.ndarray, separating_sets: Mapping[tuple[int, int], tuple[int, ...]]
) -> tuple[np.ndarray, list[tuple[int, int, int]]]:
    """Skeleton (symmetric 0/1) + separating sets -> (pattern, conflicts).

    separating_sets[(a, b)] (a < b) is the set that made non-adjacent a and b
    independent. Every unshielded triple a − c − b (a < b, taken in lexicographic
    order) with c not in it becomes a -> c <- b. An arrowhead that contradicts an
    earlier one (c -> a already oriented) is not applied (the first orientation
    wins) and the triple (a, c, b) is returned in `conflicts`; with a correct
    oracle there are none.
    """
    skeleton = as_pdag(skeleton)
    if not np.array_equal(skeleton, skeleton.T):
        raise ValueError("skeleton must be symmetric")
    pattern = skeleton.copy()
    conflicts = []
    num_nodes = len(skeleton)
    for a, b in itertools.combinations(range(num_nodes), 2):
        if skeleton[a, b]:
            continue
        for c in range(num_nodes):
            if not (skeleton[a, c] and skeleton[b, c]):
                continue
            if (a, b) not in separating_sets:
                raise ValueError(f"no separating set for non-adjacent nodes {a} and {b}")
            if c in separating_sets[a, b]:
                continue
            if pattern[a, c] == 0 or pattern[b, c] == 0:  # c -> a or c -> b already
                conflicts.append((a, c, b))
                continue
            pattern[c, a] = pattern[c, b] = 0
    return pattern, conflicts


def apply_meek_rules(pattern: np.ndarray) -> np.ndarray:
    """Orient undirected edges by Meek's R1–R3 until none applies.

    Undirected a − b becomes a -> b when
      R1: some c -> a with c, b non-adjacent (else a new v-structure c -> a <- b);
      R2: a -> c -> b for some c (else a cycle);
      R3: a − c -> b and a − d -> b with c, d non-adjacent (else a -> ... cycle
          or a new v-structure whichever way).
    Only undirected edges are changed, one at a time; the closure of a valid
    pattern does not depend on the order (Meek 1995).
    """
    graph = as_pdag(pattern).copy()
    while True:
        arrows, lines, adj = directed(graph), undirected(graph), adjacent(graph)
        oriented = False
        for a, b in zip(*np.nonzero(lines)):
            others = np.flatnonzero(lines[a] & arrows[:, b])  # a − c -> b
            if ((arrows[:, a] & ~adj[:, b]).any() or (arrows[a] & arrows[:, b]).any()
                    or any(not adj[c, d] for c, d in itertools.combinations(others, 2))):
                graph[b, a] = 0
                oriented = True
                break
        if not oriented:
            return graph
