"""CausalVAE loss terms and the augmented Lagrangian on hand-made inputs."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from causal_disent.data.pendulum import LABEL_SCALE
from causal_disent.objectives import causalvae as cv


def random_dag(num_concepts, seed):
    """Strictly upper-triangular weights under a random relabelling of the nodes."""
    rng = np.random.default_rng(seed)
    weights = np.triu(rng.normal(size=(num_concepts, num_concepts)), k=1)
    order = rng.permutation(num_concepts)
    return jnp.asarray(weights[np.ix_(order, order)], jnp.float32)


def cycle(length, num_concepts, weight=1.0):
    """A[j, j+1 mod length] = weight: the cycle 0 -> 1 -> ... -> length-1 -> 0."""
    adjacency = np.zeros((num_concepts, num_concepts), np.float32)
    for node in range(length):
        adjacency[node, (node + 1) % length] = weight
    return jnp.asarray(adjacency)


def reference_dag_constraint(adjacency, c=1.0):
    """tr((I + (c/n)·A∘A)^n) − n in float64 NumPy."""
    adjacency = np.asarray(adjacency, np.float64)
    n = adjacency.shape[0]
    return np.trace(np.linalg.matrix_power(np.eye(n) + c / n * adjacency**2, n)) - n


# ---- H(A) -------------------------------------------------------------------------


@pytest.mark.parametrize("num_concepts", [1, 2, 4, 7])
def test_dag_constraint_is_zero_on_dags(num_concepts):
    for seed in range(3):
        np.testing.assert_allclose(
            cv.dag_constraint(random_dag(num_concepts, seed)), 0.0, atol=1e-5
        )


def test_dag_constraint_hand_values_on_cycles():
    # n = 2, 2-cycle of weight 1: tr((I + P/2)²) − 2 = tr(I + P + P²/4) − 2 = 1/2.
    np.testing.assert_allclose(cv.dag_constraint(cycle(2, 2)), 0.5, rtol=1e-6)
    # n = 3, 3-cycle: tr((I + P/3)³) − 3 = tr(P³)/27 = 3/27 (P, P² have zero trace).
    np.testing.assert_allclose(cv.dag_constraint(cycle(3, 3)), 1 / 9, rtol=1e-5)
    # c scales the walks: c = 2 doubles every edge weight of A∘A.
    np.testing.assert_allclose(cv.dag_constraint(cycle(2, 2), c=2.0), 2.0, rtol=1e-6)


@pytest.mark.parametrize(
    "adjacency",
    [cycle(2, 4, 0.3), cycle(3, 5, 0.5), cycle(1, 3, 0.2)],  # 2-, 3-cycle, self-loop
    ids=["two_cycle", "three_cycle", "self_loop"],
)
def test_dag_constraint_is_positive_with_a_cycle(adjacency):
    # A DAG plus the cycle: the extra acyclic edges must not hide it.
    dag = random_dag(adjacency.shape[0], 0)
    for graph in (adjacency, jnp.where(adjacency != 0, adjacency, dag)):
        value = cv.dag_constraint(graph)
        assert value > 0
        np.testing.assert_allclose(value, reference_dag_constraint(graph), rtol=1e-4)


def test_dag_constraint_gradient_is_finite_and_analytic():
    rng = np.random.default_rng(0)
    adjacency = jnp.asarray(rng.normal(size=(4, 4)), jnp.float32)
    grad = jax.grad(cv.dag_constraint)(adjacency)
    assert np.all(np.isfinite(grad))
    walks = np.eye(4) + np.asarray(adjacency, np.float64) ** 2 / 4
    expected = 2.0 * np.linalg.matrix_power(walks, 3).T * np.asarray(adjacency)
    np.testing.assert_allclose(grad, expected, rtol=1e-4)


def test_dag_constraint_rejects_bad_inputs():
    with pytest.raises(ValueError, match="square"):
        cv.dag_constraint(jnp.zeros((2, 3)))
    with pytest.raises(ValueError, match="positive"):
        cv.dag_constraint(jnp.zeros((2, 2)), c=0.0)


# ---- l_u, l_m ---------------------------------------------------------------------


def test_label_reconstruction_loss_hand_values():
    # A = 0: σ(0) = 1/2 for every concept.
    labels = jnp.array([[1.0, 0.0, 1.0]])
    np.testing.assert_allclose(
        cv.label_reconstruction_loss(jnp.zeros((3, 3)), labels), 0.75, rtol=1e-6
    )
    # Edge 0 -> 1 of weight log 3 (σ = 3/4): (1 − 1/2)² + (0 − 3/4)² for u = (1, 0),
    # and (0 − 1/2)² + (1 − 1/2)² for u = (0, 1) (no parent is on); batch mean.
    adjacency = jnp.array([[0.0, np.log(3.0)], [0.0, 0.0]])
    labels = jnp.array([[1.0, 0.0], [0.0, 1.0]])
    expected = ((0.25 + 0.5625) + (0.25 + 0.25)) / 2
    np.testing.assert_allclose(
        cv.label_reconstruction_loss(adjacency, labels), expected, rtol=1e-6
    )


def test_label_reconstruction_loss_rejects_bad_shapes():
    with pytest.raises(ValueError, match=r"labels must be \[B, 3\]"):
        cv.label_reconstruction_loss(jnp.zeros((3, 3)), jnp.zeros((2, 4)))
    with pytest.raises(ValueError, match="square"):
        cv.label_reconstruction_loss(jnp.zeros((3, 2)), jnp.zeros((2, 3)))


def test_mask_loss_hand_values():
    latents = jnp.ones((2, 3, 2))
    prediction = jnp.zeros((2, 3, 2)).at[1].set(1.0)  # example 0 off by 1 everywhere
    np.testing.assert_allclose(cv.mask_loss(latents, prediction), 6 / 2)
    with pytest.raises(ValueError, match="parent_prediction"):
        cv.mask_loss(latents, prediction[:, :2])


# ---- labels and the ELBO ----------------------------------------------------------


def test_normalise_labels_with_the_pendulum_scale():
    means, scales = LABEL_SCALE[:, 0], LABEL_SCALE[:, 1]
    labels = jnp.asarray(np.stack([means, means + scales, means - 2 * scales]), jnp.float32)
    np.testing.assert_allclose(
        cv.normalise_labels(labels, LABEL_SCALE),
        [[0, 0, 0, 0], [1, 1, 1, 1], [-2, -2, -2, -2]],
        atol=1e-6,
    )
    with pytest.raises(ValueError, match=r"labels must be \[B, 4\]"):
        cv.normalise_labels(labels[:, :3], LABEL_SCALE)


def test_labels_to_unit_interval():
    labels = jnp.array([[-40.0, 60.0], [43.0, 147.0]])
    np.testing.assert_allclose(
        cv.labels_to_unit_interval(labels, [-40, 60], [43, 147]), [[0, 0], [1, 1]]
    )
    with pytest.raises(ValueError, match="low, high"):
        cv.labels_to_unit_interval(labels, [0, 0, 0], 1.0)


def test_label_prior_kl_hand_values():
    prior_mean = jnp.array([[0.5, -1.0, 2.0]])
    at_prior = jnp.broadcast_to(prior_mean[..., None], (1, 3, 2))
    np.testing.assert_allclose(cv.label_prior_kl(at_prior, None, prior_mean), 0.0, atol=1e-7)
    # Unit variance, mean off by 1 in all 6 entries: 6 · ½.
    np.testing.assert_allclose(cv.label_prior_kl(at_prior + 1.0, None, prior_mean), 3.0)
    # Variance 2 at the right mean: 6 · ½(1 − log 2).
    np.testing.assert_allclose(
        cv.label_prior_kl(at_prior, jnp.full((1, 3, 2), 2.0), prior_mean),
        3.0 * (1.0 - np.log(2.0)),
        rtol=1e-6,
    )
    with pytest.raises(ValueError, match=r"prior_mean .* must be \[B, 3\]"):
        cv.label_prior_kl(at_prior, None, prior_mean[:, :2])


def test_negative_elbo_sums_bce_and_both_kls():
    images = jnp.array([[[0.0, 1.0], [1.0, 0.5]]])  # [1, 2, 2]
    exogenous_mean = jnp.ones((1, 2, 2))  # KL to N(0, I): 4 · ½
    latent_mean = jnp.zeros((1, 2, 2))
    prior_mean = jnp.array([[0.0, 2.0]])  # concept 1 off by 2 in 2 dims: 2 · 2
    terms = cv.negative_elbo(
        jnp.zeros((1, 2, 2)), images, exogenous_mean, latent_mean, prior_mean
    )
    np.testing.assert_allclose(terms["reconstruction"], 4 * np.log(2.0), rtol=1e-6)
    np.testing.assert_allclose(terms["kl_exogenous"], 2.0)
    np.testing.assert_allclose(terms["kl_label_prior"], 4.0)
    np.testing.assert_allclose(terms["negative_elbo"], 4 * np.log(2.0) + 6.0, rtol=1e-6)


# ---- augmented Lagrangian ---------------------------------------------------------


def state_values(state):
    return [state.multiplier, state.penalty, state.previous_constraint]


def test_augmented_lagrangian_schedule_by_hand():
    update = jax.jit(cv.update_augmented_lagrangian)
    state = cv.AugmentedLagrangian.create()
    assert (float(state.multiplier), float(state.penalty)) == (0.0, 1.0)
    # First step is always accepted (h_prev = inf): λ = 0 + 1·0.5.
    state = update(state, 0.5)
    np.testing.assert_allclose(state_values(state), [0.5, 1.0, 0.5])
    # 0.4 > 0.25·0.5: not enough progress, ρ grows tenfold, λ and h_prev kept.
    state = update(state, 0.4)
    np.testing.assert_allclose(state_values(state), [0.5, 10.0, 0.5])
    # 0.1 ≤ 0.125: accepted, λ = 0.5 + 10·0.1.
    state = update(state, 0.1)
    np.testing.assert_allclose(state_values(state), [1.5, 10.0, 0.1])
    # λh + ρ/2·h² at h = 0.2: 0.3 + 0.2.
    np.testing.assert_allclose(cv.augmented_lagrangian_penalty(0.2, state), 0.5, rtol=1e-6)


def test_augmented_lagrangian_accepts_once_the_penalty_is_at_its_cap():
    state = cv.AugmentedLagrangian(
        multiplier=jnp.float32(1.0), penalty=jnp.float32(100.0),
        previous_constraint=jnp.float32(0.1),
    )
    capped = cv.update_augmented_lagrangian(state, 0.2, max_penalty=100.0)
    np.testing.assert_allclose(state_values(capped), [21.0, 100.0, 0.2])
    grown = cv.update_augmented_lagrangian(state, 0.2, max_penalty=500.0)
    np.testing.assert_allclose([grown.multiplier, grown.penalty], [1.0, 500.0])


def test_label_graph_objective_gradient():
    state = cv.AugmentedLagrangian(
        multiplier=jnp.float32(0.7), penalty=jnp.float32(3.0),
        previous_constraint=jnp.float32(1.0),
    )
    adjacency = cycle(2, 3, 0.8) + random_dag(3, 1)
    labels = jnp.asarray(np.random.default_rng(0).uniform(size=(4, 3)), jnp.float32)
    loss, metrics = cv.label_graph_objective(adjacency, labels, state)
    # Each reported term against its own function (and H against NumPy's).
    label_loss = cv.label_reconstruction_loss(adjacency, labels)
    h = cv.dag_constraint(adjacency)
    np.testing.assert_allclose(h, reference_dag_constraint(adjacency), rtol=1e-4)
    np.testing.assert_allclose(metrics["label_loss"], label_loss, rtol=1e-6)
    np.testing.assert_allclose(metrics["dag_constraint"], h, rtol=1e-6)
    np.testing.assert_allclose(metrics["dag_penalty"], 0.7 * h + 1.5 * h**2, rtol=1e-6)
    np.testing.assert_allclose(loss, label_loss + 0.7 * h + 1.5 * h**2, rtol=1e-6)
    grad = jax.grad(lambda a: cv.label_graph_objective(a, labels, state)[0])(adjacency)
    expected = jax.grad(cv.label_reconstruction_loss)(adjacency, labels) + (
        0.7 + 3.0 * h
    ) * jax.grad(cv.dag_constraint)(adjacency)
    np.testing.assert_allclose(grad, expected, rtol=1e-5, atol=1e-6)
    # λ and ρ are constants of the inner problem: no gradient flows into them.
    state_grad = jax.grad(lambda s: cv.label_graph_objective(adjacency, labels, s)[0])(state)
    for leaf in jax.tree.leaves(state_grad):
        np.testing.assert_array_equal(leaf, 0.0)
