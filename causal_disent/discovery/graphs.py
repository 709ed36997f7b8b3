r"""DAGs, their Markov equivalence classes and d-separation.

Matrix convention (CausalVAE's): dag[j, i] = 1 means j -> i (row = cause, column =
effect). A CPDAG/PDAG has cpdag[j, i] = 1, cpdag[i, j] = 0 for a directed edge
j -> i and both entries 1 for an undirected edge.

  cpdag_of: the CPDAG of a DAG: skeleton, v-structures, then Meek's rules R1–R3
    (Meek, "Causal inference and causal explanation with background knowledge",
    UAI 1995).
  same_equivalence_class: Markov equivalence = same skeleton and v-structures
    (Verma & Pearl, "Equivalence and synthesis of causal models", UAI 1990).
  dag_extension: a DAG in a PDAG's class (Dor & Tarsi, "A simple algorithm to
    construct a consistent extension of a partially oriented graph", 1992).
  d_separated: by the moralised ancestral graph (Lauritzen, Dawid, Larsen &
    Leimer, Networks 1990), equivalent to Pearl's d-separation.
  ci_disagreement: how many CI decisions a DAG's d-separations contradict.
"""

from __future__ import annotations

from typing import Callable, Iterable, Sequence

import numpy as np

from causal_disent.discovery.orientation import (
    adjacent,
    apply_meek_rules,
    as_pdag,
    directed,
    undirected,
)


def as_dag(dag: np.ndarray) -> np.ndarray:
    """A 0/1 int DAG (no undirected or bidirected pair, no cycle), or ValueError."""
    dag = as_pdag(dag)
    if (dag & dag.T).any():
        raise ValueError("a DAG cannot have an edge both ways")
    if not is_acyclic(dag):
        raise ValueError("graph has a directed cycle")
    return dag


def v_structures(graph: np.ndarray) -> set[tuple[int, int, int]]:
    """{(a, c, b): a -> c <- b directed, a < b non-adjacent} of a DAG or PDAG."""
    graph = as_pdag(graph)
    arrows, adj = directed(graph), adjacent(graph)
    found = set()
    for c in range(len(graph)):
        parents = np.flatnonzero(arrows[:, c])
        for index, a in enumerate(parents):
            for b in parents[index + 1:]:
                if not adj[a, b]:
                    found.add((int(a), c, int(b)))
    return found


def cpdag_of(dag: np.ndarray) -> np.ndarray:
    """The CPDAG (essential graph) of a DAG: the edges of its v-structures directed,
    the rest undirected, then closed under Meek's R1–R3."""
    dag = as_dag(dag)
    pattern = adjacent(dag).astype(np.int64)
    for a, c, b in v_structures(dag):
        pattern[c, a] = pattern[c, b] = 0
    return apply_meek_rules(pattern)


def same_equivalence_class(dag_a: np.ndarray, dag_b: np.ndarray) -> bool:
    """Whether two DAGs are Markov equivalent: same skeleton and v-structures."""
    dag_a, dag_b = as_dag(dag_a), as_dag(dag_b)
    if dag_a.shape != dag_b.shape:
        raise ValueError(f"graphs differ in size: {dag_a.shape} and {dag_b.shape}")
    return bool(np.array_equal(adjacent(dag_a), adjacent(dag_b))
                and v_structures(dag_a) == v_structures(dag_b))


def dag_extension(cpdag: np.ndarray) -> np.ndarray:
    """A DAG with the PDAG's skeleton, its directed edges and no other v-structure.

    Dor & Tarsi (1992): repeatedly pick a node x that is a sink among the remaining
    nodes (no directed edge out) and whose every undirected neighbour y is adjacent
    to all of x's other neighbours; direct its undirected edges into x and remove x.
    Nodes are tried in index order, so the result is deterministic. Raises
    ValueError("no consistent DAG extension") when no such node remains.
    """
    graph = as_pdag(cpdag)
    arrows, lines, adj = directed(graph), undirected(graph), adjacent(graph)
    dag = arrows.astype(np.int64)
    remaining = np.ones(len(graph), bool)
    while remaining.any():
        for x in np.flatnonzero(remaining):
            if (arrows[x] & remaining).any():
                continue
            neighbours = np.flatnonzero(adj[x] & remaining)
            line_neighbours = np.flatnonzero(lines[x] & remaining)
            if all(adj[y, z] for y in line_neighbours for z in neighbours if z != y):
                dag[line_neighbours, x] = 1
                remaining[x] = False
                break
        else:
            raise ValueError("no consistent DAG extension")
    return dag


def ancestors(dag: np.ndarray, nodes: Iterable[int]) -> np.ndarray:
    """[d] bool: the nodes and all their ancestors."""
    dag = np.asarray(dag) != 0
    found = np.zeros(len(dag), bool)
    frontier = list(nodes)
    while frontier:
        node = frontier.pop()
        if not found[node]:
            found[node] = True
            frontier.extend(np.flatnonzero(dag[:, node] & ~found))
    return found


def d_separated(dag: np.ndarray, i: int, j: int, conditioning: Sequence[int] = ()) -> bool:
    """Whether i and j are d-separated by `conditioning` in the DAG.

    Moralised ancestral graph: keep the ancestors of {i, j} ∪ S, join the parents
    of each kept node, drop directions; i ⊥ j | S iff S separates them there.
    """
    dag = as_dag(dag)
    conditioning = {int(c) for c in conditioning}
    if i == j or i in conditioning or j in conditioning:
        raise ValueError(f"invalid query {i} ⊥ {j} | {sorted(conditioning)}")
    keep = ancestors(dag, [i, j, *conditioning])
    edges = (dag != 0) & keep[:, None] & keep[None, :]
    moral = edges | edges.T
    for child in np.flatnonzero(keep):
        parents = np.flatnonzero(edges[:, child])
        moral[np.ix_(parents, parents)] = True
    np.fill_diagonal(moral, False)
    blocked = np.zeros(len(dag), bool)
    blocked[list(conditioning)] = True
    reached = np.zeros(len(dag), bool)
    reached[i] = True
    frontier = [i]
    while frontier:
        node = frontier.pop()
        for other in np.flatnonzero(moral[node] & ~reached & ~blocked):
            reached[other] = True
            frontier.append(other)
    return not reached[j]


def d_separation_oracle(dag: np.ndarray) -> Callable[[int, int, tuple[int, ...]], float]:
    """An independence test that answers from the DAG: p = 1 if d-separated, else 0."""
    dag = as_dag(dag)
    return lambda i, j, conditioning=(): float(d_separated(dag, i, j, conditioning))


def ci_disagreement(dag: np.ndarray, tests: Iterable) -> int:
    """How many CI decisions the DAG's d-separations contradict.

    tests: records with attributes i, j, conditioning, independent (`CITest`) or
    tuples (i, j, conditioning, independent). A decision "independent" the DAG
    d-connects, or "dependent" it d-separates, counts 1. Scores any DAG against a
    fixed set of tests (0 = every decision is implied by the DAG's Markov and
    faithfulness conditions).
    """
    dag = as_dag(dag)
    count = 0
    for test in tests:
        if isinstance(test, tuple):
            i, j, conditioning, independent = test
        else:
            i, j, conditioning, independent = test.i, test.j, test.conditioning, test.independent
        count += int(d_separated(dag, i, j, conditioning) != bool(independent))
    return count


def is_acyclic(adjacency: np.ndarray, threshold: float = 0.0) -> bool:
    """Whether the graph of edges |adjacency[i, j]| > threshold has no directed cycle
    (CausalVAE's causal layer must be a DAG: Yang et al., "CausalVAE: Disentangled
    representation learning via neural structural causal models", CVPR 2021, §4.2).

    A self-loop (a nonzero diagonal entry) is a cycle. Repeatedly removes the nodes
    without incoming edges (Kahn); a cycle is what is left when none can be removed.
    """
    edges = np.abs(check_square(adjacency, "adjacency")) > threshold
    remaining = np.ones(len(edges), bool)
    while remaining.any():
        sources = remaining & ~edges[remaining].any(axis=0)
        if not sources.any():
            return False
        remaining &= ~sources
    return True


def check_square(graph, name: str) -> np.ndarray:
    """`graph` as float64 [d, d]; ValueError naming `name` unless square and finite."""
    graph = np.asarray(graph, np.float64)
    if graph.ndim != 2 or graph.shape[0] != graph.shape[1]:
        raise ValueError(f"{name} must be a square [d, d] adjacency matrix, got {graph.shape}")
    if not np.isfinite(graph).all():
        raise ValueError(f"{name} has non-finite entries")
    return graph
