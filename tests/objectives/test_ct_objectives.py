"""Every CT-VAE loss term on hand-made inputs with known values."""

import jax.numpy as jnp
import numpy as np
import pytest

from causal_disent.objectives import ct


def test_code_cross_entropy_against_hand_values():
    # Two nodes; node 0 puts all mass on its target, node 1 is uniform over 4 codes.
    logits = jnp.array([[[100.0, 0, 0, 0], [0.0, 0, 0, 0]]])
    targets = jnp.array([[0, 3]])
    np.testing.assert_allclose(ct.code_cross_entropy(logits, targets), [np.log(4) / 2], rtol=1e-6)


def test_identity_adjacency_loss():
    np.testing.assert_allclose(ct.identity_adjacency_loss(jnp.eye(3)[None]), 0.0)
    full = jnp.ones((1, 3, 3))
    np.testing.assert_allclose(ct.identity_adjacency_loss(full), 6 / 9)


def test_graph_kl_to_uniform():
    np.testing.assert_allclose(ct.graph_kl_to_uniform(jnp.zeros((2, 3, 3))), 0.0, atol=1e-7)
    p = 0.9
    logit = np.log(p / (1 - p))
    expected = p * np.log(2 * p) + (1 - p) * np.log(2 * (1 - p))
    np.testing.assert_allclose(ct.graph_kl_to_uniform(jnp.full((1, 2, 2), logit)), expected, rtol=1e-5)


def test_adjacency_sparsity_loss():
    adjacency = jnp.array([[[1.0, 0.0], [1.0, 1.0]]])
    np.testing.assert_allclose(ct.adjacency_sparsity_loss(adjacency), 0.75)


def test_dependency_loss_counts_nodes_without_parents():
    # σ = 0 everywhere in row 0 (no parent for sure), σ = 1 somewhere in row 1.
    logits = jnp.array([[[-50.0, -50.0], [50.0, -50.0]]])
    np.testing.assert_allclose(ct.dependency_loss(logits), 1.0, atol=1e-6)
    # σ = 0.5 on both edges of both rows: Σ_i (0.5 · 0.5)² = 2 · 1/16.
    np.testing.assert_allclose(ct.dependency_loss(jnp.zeros((1, 2, 2))), 2 / 16, rtol=1e-6)


def test_action_scores_and_factor_folding():
    # Action 1's transition predicts Y exactly, action 0's is uniform.
    y_codes = jnp.array([[0, 1]])
    exact = jnp.array([[[30.0, 0], [0, 30.0]]])
    uniform = jnp.zeros((1, 2, 2))
    scores = ct.action_scores(jnp.stack([uniform, exact]), y_codes)  # [B=1, A=2]
    assert scores.shape == (1, 2)
    np.testing.assert_allclose(scores[0, 0], -np.log(2), rtol=1e-5)
    assert scores[0, 1] > -1e-6
    probs = jnp.array([[0.1, 0.2, 0.3, 0.4]])  # F = 2: (f0+, f1+, f0-, f1-)
    np.testing.assert_allclose(ct.fold_factor_probabilities(probs), [[0.4, 0.6]])


@pytest.mark.parametrize("name", ["standard", "action", "causal"])
def test_modes_are_registered(name):
    assert callable(ct.MODES[name])
