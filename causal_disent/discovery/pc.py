r"""The PC algorithm (Spirtes, Glymour & Scheines, "Causation, Prediction, and
Search", 2nd ed. 2000, §5.4.2), in its order-independent "stable" form (Colombo &
Maathuis, "Order-independent constraint-based causal structure learning", JMLR 2014).

1. Skeleton (`pc_skeleton`): start from the complete graph; at level l = 0, 1, ...
   remove edge i − j when X_i ⊥ X_j | S for some S of size l among i's neighbours
   (other than j), recording S as the separating set. Neighbour sets are frozen at
   the start of each level, so the removals of a level do not depend on the order
   the pairs are visited in.
2. Colliders: an unshielded triple a − c − b with c outside sep(a, b) becomes
   a -> c <- b (`orientation.orient_colliders`).
3. Meek's rules R1–R3 (`orientation.apply_meek_rules`) -> the CPDAG.
4. A consistent DAG extension (Dor & Tarsi 1992, `graphs.dag_extension`).

`pc(data, ...)` runs it with the kNN-residual HSIC test of `ci_tests`. Matrix
convention: cpdag[j, i] = 1, cpdag[i, j] = 0 is j -> i; both 1 is j − i.
"""

from __future__ import annotations

import itertools
import time
from dataclasses import dataclass, field, replace

import numpy as np

from causal_disent.discovery.ci_tests import CITest, IndependenceTest, ResidualHSICTest
from causal_disent.discovery.graphs import dag_extension
from causal_disent.discovery.orientation import apply_meek_rules, orient_colliders


@dataclass(frozen=True)
class Skeleton:
    """adjacency: [d, d] symmetric 0/1; separating_sets[(i, j)], i < j, for every
    removed edge; tests: each distinct test run, in order."""

    adjacency: np.ndarray
    separating_sets: dict[tuple[int, int], tuple[int, ...]]
    tests: list[CITest]


@dataclass(frozen=True)
class PCResult:
    """cpdag: [d, d] int CPDAG; dag: a consistent extension (None when the CPDAG,
    which may be invalid under test errors, has none); skeleton; separating_sets
    and tests as in `Skeleton`; conflicts: unshielded triples whose collider
    orientation contradicted an earlier one; seconds: wall time, tests included."""

    cpdag: np.ndarray
    dag: np.ndarray | None
    skeleton: np.ndarray
    separating_sets: dict[tuple[int, int], tuple[int, ...]]
    tests: list[CITest]
    conflicts: list[tuple[int, int, int]] = field(default_factory=list)
    seconds: float = 0.0


def pc_skeleton(num_nodes: int, independence_test: IndependenceTest, alpha: float = 0.05,
                max_conditioning_size: int | None = None) -> Skeleton:
    """Stable PC's adjacency search. independence_test(i, j, S) -> p-value; the
    edge is removed when p >= alpha. A test already run (same unordered pair and
    set, e.g. from the other endpoint) is not repeated."""
    if num_nodes < 1:
        raise ValueError(f"num_nodes must be >= 1, got {num_nodes}")
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    adjacency = np.ones((num_nodes, num_nodes), np.int64) - np.eye(num_nodes, dtype=np.int64)
    separating_sets: dict[tuple[int, int], tuple[int, ...]] = {}
    tests: list[CITest] = []
    done: set[tuple[int, int, tuple[int, ...]]] = set()
    level = 0
    while max_conditioning_size is None or level <= max_conditioning_size:
        frozen = [tuple(np.flatnonzero(adjacency[i])) for i in range(num_nodes)]
        if not any(len(frozen[i]) - 1 >= level for i in range(num_nodes) if frozen[i]):
            break
        for i in range(num_nodes):
            for j in frozen[i]:
                if not adjacency[i, j]:
                    continue  # removed earlier in this level
                candidates = [k for k in frozen[i] if k != j]
                for conditioning in itertools.combinations(candidates, level):
                    conditioning = tuple(int(k) for k in conditioning)
                    key = (int(min(i, j)), int(max(i, j)), tuple(sorted(conditioning)))
                    if key in done:
                        continue  # dependent before, or the edge would be gone
                    done.add(key)
                    p_value = float(independence_test(key[0], key[1], key[2]))
                    independent = p_value >= alpha
                    tests.append(CITest(*key, p_value, independent))
                    if independent:
                        adjacency[i, j] = adjacency[j, i] = 0
                        separating_sets[key[0], key[1]] = key[2]
                        break
        level += 1
    return Skeleton(adjacency, separating_sets, tests)


def run_pc(num_nodes: int, independence_test: IndependenceTest, alpha: float = 0.05,
           max_conditioning_size: int | None = None) -> PCResult:
    """PC with any independence test: skeleton, colliders, Meek R1–R3, extension."""
    start = time.perf_counter()
    skeleton = pc_skeleton(num_nodes, independence_test, alpha, max_conditioning_size)
    pattern, conflicts = orient_colliders(skeleton.adjacency, skeleton.separating_sets)
    cpdag = apply_meek_rules(pattern)
    try:
        dag = dag_extension(cpdag)
    except ValueError:
        dag = None
    return PCResult(cpdag=cpdag, dag=dag, skeleton=skeleton.adjacency,
                    separating_sets=skeleton.separating_sets, tests=skeleton.tests,
                    conflicts=conflicts, seconds=time.perf_counter() - start)


def pc(data: np.ndarray, alpha: float = 0.05, neighbours: int = 10, subsample: int = 800,
       num_permutations: int = 200, seed: int = 0) -> PCResult:
    """PC on [N, d] data with `ci_tests.ResidualHSICTest` (columns standardised;
    kNN residuals with `neighbours` on all N rows; HSIC on a `subsample`-row subset
    with `num_permutations` permutations; everything random from `seed`)."""
    start = time.perf_counter()
    test = ResidualHSICTest(data, neighbours=neighbours, subsample=subsample,
                            num_permutations=num_permutations, seed=seed)
    result = run_pc(test.num_nodes, test.p_value, alpha)
    return replace(result, seconds=time.perf_counter() - start)
