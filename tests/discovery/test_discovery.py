"""PC with a kNN-residual HSIC test (causal_disent.discovery).

Convention: graph[j, i] = 1 means j -> i (row = cause)."""

import itertools

import numpy as np
import pytest

from causal_disent.data import registry
from causal_disent.discovery import ci_tests, graphs
from causal_disent.discovery.graphs import is_acyclic
from causal_disent.discovery.pc import pc, pc_skeleton, run_pc


def dag_from(num_nodes, edges):
    dag = np.zeros((num_nodes, num_nodes), np.int64)
    for cause, effect in edges:
        dag[cause, effect] = 1
    return dag


def pdag_from(num_nodes, directed=(), undirected=()):
    graph = dag_from(num_nodes, directed)
    for a, b in undirected:
        graph[a, b] = graph[b, a] = 1
    return graph


CHAIN = dag_from(3, [(0, 1), (1, 2)])
COLLIDER = dag_from(3, [(0, 2), (1, 2)])
PENDULUM = dag_from(4, [(0, 2), (0, 3), (1, 2), (1, 3)])
FLOW = dag_from(4, [(0, 1), (1, 2), (3, 2)])
# 0 -> 2 <- 1 is a v-structure; R1 then orients 2 -> 3 and 2 -> 4 (0 is adjacent to
# neither); 3 − 4 stays undirected.
MEEK_R1 = dag_from(5, [(0, 2), (1, 2), (2, 3), (2, 4), (3, 4)])
# 0 -> 1 <- 3 a v-structure, R1 orients 1 -> 2 (3, 2 non-adjacent), then R2 0 -> 2
# (0 -> 1 -> 2); the CPDAG is the DAG.
MEEK_R2 = dag_from(4, [(0, 1), (3, 1), (1, 2), (0, 2)])
# c=1 -> b=0 <- d=2 a v-structure, a=3 adjacent to all three: R3 orients 3 -> 0.
MEEK_R3 = dag_from(4, [(1, 0), (2, 0), (3, 0), (3, 1), (3, 2)])

EXPECTED_CPDAGS = [
    (CHAIN, pdag_from(3, undirected=[(0, 1), (1, 2)])),
    (COLLIDER, COLLIDER),
    (PENDULUM, PENDULUM),
    (FLOW, pdag_from(4, directed=[(1, 2), (3, 2)], undirected=[(0, 1)])),
    (MEEK_R1, pdag_from(5, directed=[(0, 2), (1, 2), (2, 3), (2, 4)], undirected=[(3, 4)])),
    (MEEK_R2, MEEK_R2),
    (MEEK_R3, pdag_from(4, directed=[(1, 0), (2, 0), (3, 0)], undirected=[(3, 1), (3, 2)])),
]


def random_dag(rng, num_nodes, density):
    order = rng.permutation(num_nodes)
    dag = np.zeros((num_nodes, num_nodes), np.int64)
    for a, b in itertools.combinations(range(num_nodes), 2):
        if rng.random() < density:
            dag[order[a], order[b]] = 1
    return dag


# ---------------------------------------------------------------- CI test


def test_hsic_detects_a_nonlinear_dependence_with_zero_correlation():
    for seed in range(3):
        rng = np.random.default_rng(seed)
        x = rng.uniform(-1.0, 1.0, 300)
        y = x**2 + 0.05 * rng.normal(size=300)
        assert abs(np.corrcoef(x, y)[0, 1]) < 0.15  # invisible to a linear test
        statistic, p_value = ci_tests.hsic_test(x, y, rng, num_permutations=100)
        assert statistic > 0
        assert p_value == pytest.approx(1 / 101)  # no permutation reaches it


def test_hsic_p_values_of_independent_samples_are_not_small():
    p_values = []
    for seed in range(20):
        rng = np.random.default_rng(seed)
        x, y = rng.normal(size=200), rng.uniform(size=200) ** 3
        p_values.append(ci_tests.hsic_test(x, y, rng, num_permutations=100)[1])
    p_values = np.array(p_values)
    assert np.all((p_values * 101) % 1 == pytest.approx(0, abs=1e-9))  # (1 + k) / 101
    assert 0.3 < p_values.mean() < 0.7  # ~uniform under independence
    assert np.sum(p_values < 0.05) <= 3


def test_hsic_is_deterministic_for_a_seed_and_rejects_bad_input():
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=100), rng.normal(size=100)
    first = ci_tests.hsic_test(x, y, np.random.default_rng(5), 50)
    assert first == ci_tests.hsic_test(x, y, np.random.default_rng(5), 50)
    assert ci_tests.hsic_test(np.ones(50), y[:50], rng, 20)[1] == 1.0  # constant x
    with pytest.raises(ValueError, match="same number"):
        ci_tests.hsic_test(x, y[:50], rng, 10)


def test_knn_residuals_remove_a_nonlinear_dependence():
    rng = np.random.default_rng(0)
    x = rng.uniform(-2.0, 2.0, 2000)
    noise = 0.1 * rng.normal(size=2000)
    data = np.stack([x, np.sin(3 * x) + noise], axis=1)
    residual = ci_tests.knn_residuals(data, 1, [0], neighbours=10)
    assert 0.08 < residual.std() < 0.13  # ~ the noise (0.1), not sin(3x) (0.7)
    assert np.corrcoef(residual, noise)[0, 1] > 0.9
    unconditional = ci_tests.knn_residuals(data, 1, [], neighbours=10)
    np.testing.assert_allclose(unconditional, data[:, 1] - data[:, 1].mean())


def brute_force_loo(data, target, conditioning, neighbours):
    inputs = data[:, conditioning]
    predictions = []
    for row in range(len(data)):
        distances = np.linalg.norm(inputs - inputs[row], axis=1)
        distances[row] = np.inf  # exclude the row itself, by index
        nearest = np.argsort(distances, kind="stable")[:neighbours]
        predictions.append(data[nearest, target].mean())
    return data[:, target] - np.array(predictions)


def test_knn_residuals_leave_out_the_row_itself_when_rows_are_duplicated():
    rng = np.random.default_rng(1)
    x = rng.normal(size=(150, 1))
    base = np.concatenate([x, x**3 + rng.normal(size=(150, 1))], axis=1)
    data = np.concatenate([base, base])  # every row twice
    residual = ci_tests.knn_residuals(data, 1, [0], neighbours=10)
    assert np.all(residual != 0)
    np.testing.assert_allclose(residual, brute_force_loo(data, 1, [0], 10), atol=1e-12)
    # With k = 1 the only neighbour is the copy (same target): zero residual is right.
    np.testing.assert_allclose(ci_tests.knn_residuals(data, 1, [0], neighbours=1), 0.0)


def test_knn_residuals_exclude_the_row_among_more_ties_than_neighbours():
    # 12 rows share x = 0 (more than neighbours + 1 = 4), with targets 2^r, so a
    # prediction times 3 is a sum of 3 distinct powers of two naming the rows used.
    group = np.stack([np.zeros(12), 2.0 ** np.arange(12)], axis=1)
    far = np.stack([np.linspace(100, 200, 20), np.zeros(20)], axis=1)
    data = np.concatenate([group, far])
    residual = ci_tests.knn_residuals(data, 1, [0], neighbours=3)
    for row in range(12):
        used = int(round(3 * (data[row, 1] - residual[row])))
        assert bin(used).count("1") == 3
        assert not used & (1 << row)  # the row's own target is not in its prediction


def test_knn_residuals_reject_bad_arguments():
    data = np.random.default_rng(0).normal(size=(20, 3))
    with pytest.raises(ValueError, match="in the conditioning"):
        ci_tests.knn_residuals(data, 1, [1, 2])
    with pytest.raises(ValueError, match="neighbours"):
        ci_tests.knn_residuals(data, 1, [0], neighbours=20)
    with pytest.raises(ValueError, match="out of range"):
        ci_tests.knn_residuals(data, 3, [0])


def test_residual_hsic_test_finds_a_nonlinear_conditional_independence():
    rng = np.random.default_rng(0)
    x = rng.uniform(-2, 2, 1500)
    z = np.sin(2 * x) + 0.3 * rng.normal(size=1500)  # x -> z -> y
    y = z**2 + 0.3 * rng.normal(size=1500)
    w = rng.normal(size=1500)
    data = np.stack([x, z, y, w], axis=1) * [1.0, 10.0, 0.1, 3.0]  # scales do not matter
    test = ci_tests.ResidualHSICTest(data, subsample=400, num_permutations=100, seed=0)
    assert test.p_value(0, 2) < 0.05
    assert test.p_value(0, 2, (1,)) > 0.05
    assert test.p_value(0, 3) > 0.05
    assert test.p_value(2, 0, [1]) == test.p_value(0, 2, (1,))  # symmetric, cached
    assert test.num_tests_run == 3
    again = ci_tests.ResidualHSICTest(data, subsample=400, num_permutations=100, seed=0)
    assert again.test(0, 2, (1,)) == test.test(0, 2, (1,))  # deterministic
    with pytest.raises(ValueError, match="invalid test"):
        test.p_value(0, 2, (2,))


def test_all_tests_covers_every_pair_and_conditioning_set():
    tests = ci_tests.all_tests(4, graphs.d_separation_oracle(PENDULUM), alpha=0.05)
    assert len(tests) == 24
    assert {(t.i, t.j, t.conditioning) for t in tests if t.independent} == {
        (0, 1, ()), (2, 3, (0, 1))}


# ---------------------------------------------------------------- graphs


def test_d_separation_hand_cases():
    assert not graphs.d_separated(CHAIN, 0, 2)
    assert graphs.d_separated(CHAIN, 0, 2, [1])
    assert graphs.d_separated(COLLIDER, 0, 1)
    assert not graphs.d_separated(COLLIDER, 0, 1, [2])
    with_descendant = dag_from(4, [(0, 2), (1, 2), (2, 3)])
    assert graphs.d_separated(with_descendant, 0, 1)
    assert not graphs.d_separated(with_descendant, 0, 1, [3])  # collider opened by a descendant
    fork = dag_from(3, [(1, 0), (1, 2)])
    assert not graphs.d_separated(fork, 0, 2) and graphs.d_separated(fork, 0, 2, [1])
    assert graphs.d_separated(PENDULUM, 2, 3, [0, 1])
    assert not graphs.d_separated(PENDULUM, 2, 3, [0])  # 2 <- 1 -> 3 open
    with pytest.raises(ValueError, match="cycle"):
        graphs.d_separated(dag_from(3, [(0, 1), (1, 2), (2, 0)]), 0, 1)


@pytest.mark.parametrize("dag, expected", EXPECTED_CPDAGS)
def test_cpdag_of_hand_cases(dag, expected):
    np.testing.assert_array_equal(graphs.cpdag_of(dag), expected)


def test_equivalence_class_hand_cases():
    reversed_chain = CHAIN.T.copy()
    fork = dag_from(3, [(1, 0), (1, 2)])
    assert graphs.same_equivalence_class(CHAIN, reversed_chain)
    assert graphs.same_equivalence_class(CHAIN, fork)
    assert not graphs.same_equivalence_class(CHAIN, COLLIDER)
    assert graphs.same_equivalence_class(FLOW, dag_from(4, [(1, 0), (1, 2), (3, 2)]))
    assert not graphs.same_equivalence_class(FLOW, dag_from(4, [(0, 1), (2, 1), (3, 2)]))
    assert not graphs.same_equivalence_class(PENDULUM, dag_from(4, [(0, 2), (0, 3), (1, 2), (3, 1)]))


@pytest.mark.parametrize("dag, cpdag", EXPECTED_CPDAGS)
def test_dag_extension_is_an_acyclic_member_of_the_class(dag, cpdag):
    extension = graphs.dag_extension(cpdag)
    assert is_acyclic(extension)
    assert graphs.same_equivalence_class(extension, dag)
    directed = (cpdag == 1) & (cpdag.T == 0)
    assert np.all(extension[directed] == 1)  # keeps the CPDAG's directed edges


def test_dag_extension_of_random_cpdags():
    rng = np.random.default_rng(0)
    for _ in range(30):
        dag = random_dag(rng, 6, 0.5)
        extension = graphs.dag_extension(graphs.cpdag_of(dag))
        assert graphs.same_equivalence_class(extension, dag)
        np.testing.assert_array_equal(graphs.cpdag_of(extension), graphs.cpdag_of(dag))


def test_dag_extension_fails_without_a_consistent_extension():
    chordless_cycle = pdag_from(4, undirected=[(0, 1), (1, 2), (2, 3), (3, 0)])
    with pytest.raises(ValueError, match="no consistent DAG extension"):
        graphs.dag_extension(chordless_cycle)
    directed_cycle = pdag_from(3, directed=[(0, 1), (1, 2), (2, 0)])
    with pytest.raises(ValueError, match="no consistent DAG extension"):
        graphs.dag_extension(directed_cycle)
    # 0 -> 1 − 2 with 0, 2 non-adjacent extends (1 -> 2), as R1 would orient it.
    np.testing.assert_array_equal(graphs.dag_extension(
        pdag_from(3, directed=[(0, 1)], undirected=[(1, 2)])), dag_from(3, [(0, 1), (1, 2)]))


def test_ci_disagreement_scores_the_true_dag_zero_and_a_wrong_one_positive():
    oracle_tests = ci_tests.all_tests(4, graphs.d_separation_oracle(FLOW))
    assert graphs.ci_disagreement(FLOW, oracle_tests) == 0
    assert graphs.ci_disagreement(dag_from(4, [(1, 0), (1, 2), (3, 2)]), oracle_tests) == 0  # same class
    assert graphs.ci_disagreement(PENDULUM, oracle_tests) > 0
    wrong = dag_from(4, [(0, 1), (1, 2), (2, 3)])  # no v-structure at 2
    assert graphs.ci_disagreement(wrong, oracle_tests) > 0
    # tuples work too; 0 ⊥ 3 given nothing is implied by FLOW, contradicted by `wrong`
    assert graphs.ci_disagreement(wrong, [(0, 3, (), True)]) == 1
    assert graphs.ci_disagreement(FLOW, [(0, 3, (), True)]) == 0


# ---------------------------------------------------------------- PC


@pytest.mark.parametrize("dag, expected", EXPECTED_CPDAGS)
def test_pc_with_an_oracle_recovers_the_cpdag(dag, expected):
    result = run_pc(len(dag), graphs.d_separation_oracle(dag))
    np.testing.assert_array_equal(result.cpdag, expected)
    assert result.conflicts == []
    assert graphs.same_equivalence_class(result.dag, dag)
    for (i, j), separating in result.separating_sets.items():
        assert graphs.d_separated(dag, i, j, separating)


def test_pc_with_an_oracle_on_random_dags():
    rng = np.random.default_rng(1)
    for _ in range(25):
        dag = random_dag(rng, 6, 0.4)
        result = run_pc(6, graphs.d_separation_oracle(dag))
        np.testing.assert_array_equal(result.cpdag, graphs.cpdag_of(dag))
        tested = [(t.i, t.j, t.conditioning) for t in result.tests]
        assert len(tested) == len(set(tested))  # no test repeated


def test_pc_skeleton_does_not_depend_on_the_node_order():
    # Stable PC: with an arbitrary (not DAG-faithful) table of p-values, relabelling
    # the nodes relabels the skeleton. Plain PC, removing edges as it goes within a
    # level, fails this for most tables.
    rng = np.random.default_rng(2)
    for _ in range(20):
        table = {}

        def p_value(i, j, conditioning):
            key = (frozenset((i, j)), frozenset(conditioning))
            if key not in table:
                table[key] = rng.uniform()
            return table[key]

        order = rng.permutation(6)
        relabelled = lambda i, j, conditioning: p_value(  # noqa: E731
            order[i], order[j], tuple(order[list(conditioning)]))
        a = pc_skeleton(6, p_value, alpha=0.3).adjacency
        b = pc_skeleton(6, relabelled, alpha=0.3).adjacency
        np.testing.assert_array_equal(a[np.ix_(order, order)], b)


@pytest.mark.parametrize("name", ["pendulum", "flow"])
def test_pc_on_the_training_labels(name):
    dataset = registry.get_dataset(name)
    labels = dataset.labels(dataset.predefined_split()["train"])
    result = pc(labels)  # defaults: alpha 0.05, k 10, 800 rows, 200 permutations
    true = np.asarray(dataset.causal_graph)
    assert result.dag is not None
    assert graphs.same_equivalence_class(result.dag, true)
    np.testing.assert_array_equal(result.cpdag, graphs.cpdag_of(true))
    if name == "pendulum":  # its class has one member
        np.testing.assert_array_equal(result.dag, true)
