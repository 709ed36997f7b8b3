"""FactorVAE's loss against a NumPy hand computation on the stand-in LinearVAE and a
linear stand-in discriminator, its gradients (each network by its own loss only),
permute_dims' properties, and the loss's binding."""

import flax.linen as nn
import jax
import jax.numpy as jnp
import ml_collections
import numpy as np
import pytest

from causal_disent.objectives import factor_vae
from causal_disent.objectives import vae as vae_objectives
from tests.objectives.test_vae_objectives import BATCH, PARAMS, LinearVAE
from tests.objectives.test_vae_zoo import numpy_pass

RNG = jax.random.key(5)


class LinearDiscriminator(nn.Module):
    """A stand-in with the discriminator's interface: logits = z·W + b, [B, 2] -> [B, 2]."""

    @nn.compact
    def __call__(self, latents):
        weights = self.param("weights", nn.initializers.zeros, (2, 2))
        bias = self.param("bias", nn.initializers.zeros, (2,))
        return latents @ weights + bias


FACTOR_PARAMS = {
    "vae": PARAMS,
    "discriminator": {"weights": np.array([[0.7, -0.3], [-1.2, 0.4]], np.float32),
                      "bias": np.array([0.1, -0.2], np.float32)},
}


def numpy_log_softmax(logits):
    shifted = logits - logits.max(axis=1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))


def factor_loss(params=FACTOR_PARAMS, gamma=30.0):
    return vae_objectives.factor_vae_loss(params, BATCH, RNG, model=LinearVAE(),
                                          discriminator=LinearDiscriminator(), gamma=gamma)


def test_factor_vae_loss_equals_the_hand_computation():
    gamma = 30.0
    loss, metrics = factor_loss(gamma=gamma)
    sample_rng, permute_rng = jax.random.split(RNG)
    _, _, z, reconstruction, kl = numpy_pass(sample_rng)
    weights = FACTOR_PARAMS["discriminator"]["weights"].astype(np.float64)
    bias = FACTOR_PARAMS["discriminator"]["bias"].astype(np.float64)
    joint_logits = z @ weights + bias
    tc = np.mean(joint_logits[:, 0] - joint_logits[:, 1])
    # The permutation itself: permute_dims on each row's index.
    rows = np.asarray(factor_vae.permute_dims(permute_rng, np.tile(np.arange(2.0)[:, None],
                                                                   (1, 2)))).astype(int)
    permuted = np.stack([z[rows[:, k], k] for k in range(2)], axis=1)
    product_logits = permuted @ weights + bias
    discriminator_loss = -0.5 * (numpy_log_softmax(joint_logits)[:, 0].mean()
                                 + numpy_log_softmax(product_logits)[:, 1].mean())
    vae_loss = reconstruction + kl + gamma * tc
    np.testing.assert_allclose(metrics["tc"], tc, rtol=1e-5)
    np.testing.assert_allclose(metrics["vae_loss"], vae_loss, rtol=1e-5)
    np.testing.assert_allclose(metrics["discriminator_loss"], discriminator_loss, rtol=1e-5)
    np.testing.assert_allclose(loss, vae_loss + discriminator_loss, rtol=1e-5)
    np.testing.assert_allclose(metrics["kl"], kl, rtol=1e-5)


def test_each_network_gets_the_gradient_of_its_own_loss_only():
    params = jax.tree.map(jnp.asarray, FACTOR_PARAMS)
    grads = jax.grad(lambda p: factor_loss(p)[0])(params)

    def metric_grad(name, group):
        return jax.grad(lambda p: factor_loss(p)[1][name])(params)[group]

    # The VAE's: reconstruction + KL + γ·TC, the TC reaching the encoder through z.
    jax.tree.map(np.testing.assert_array_equal, grads["vae"], metric_grad("vae_loss", "vae"))
    without_tc = jax.grad(lambda p: factor_loss(p, gamma=0.0)[0])(params)["vae"]
    assert float(jnp.abs(grads["vae"]["to_mean"] - without_tc["to_mean"]).max()) > 1e-3
    # The discriminator's: its cross-entropy alone, with z held fixed.
    jax.tree.map(np.testing.assert_array_equal, grads["discriminator"],
                 metric_grad("discriminator_loss", "discriminator"))
    for name, group in (("tc", "discriminator"), ("discriminator_loss", "vae")):
        jax.tree.map(lambda g: np.testing.assert_array_equal(g, 0.0),
                     metric_grad(name, group))


def test_discriminator_probabilities_are_clipped_as_disentanglement_libs():
    confident_and_wrong = jnp.array([[-50.0, 50.0]])
    loss = factor_vae.discriminator_cross_entropy(confident_and_wrong, -confident_and_wrong)
    np.testing.assert_allclose(loss, -np.log(1e-6), rtol=1e-5)


def test_permute_dims_permutes_each_column_independently_and_keeps_the_marginals():
    latents = np.random.default_rng(0).normal(size=(64, 5)).astype(np.float32)
    permuted = np.asarray(factor_vae.permute_dims(jax.random.key(2), latents))
    # Each column is a permutation of its own: the marginals are unchanged.
    np.testing.assert_array_equal(np.sort(permuted, axis=0), np.sort(latents, axis=0))
    rows = np.asarray(factor_vae.permute_dims(
        jax.random.key(2), np.tile(np.arange(64.0)[:, None], (1, 5)))).astype(int)
    np.testing.assert_array_equal(permuted, np.take_along_axis(latents, rows, axis=0))
    assert all(sorted(rows[:, k]) == list(range(64)) for k in range(5))
    # Each column by its own permutation, none the identity.
    assert len({tuple(rows[:, k]) for k in range(5)}) == 5
    assert not np.any(np.all(rows == np.arange(64)[:, None], axis=0))
    # Another key, another permutation.
    other = np.asarray(factor_vae.permute_dims(jax.random.key(3), latents))
    assert not np.array_equal(other, permuted)


def test_factor_vae_binds_gamma_and_its_discriminator():
    assert vae_objectives.loss_weight_names("factor_vae") == ("gamma",)
    assert vae_objectives.needs_discriminator("factor_vae")
    assert not any(vae_objectives.needs_discriminator(name)
                   for name in vae_objectives.LOSSES if name != "factor_vae")
    objective = ml_collections.ConfigDict({"name": "factor_vae", "gamma": 30.0})
    with pytest.raises(ValueError, match="the 'factor_vae' loss needs a discriminator"):
        vae_objectives.bind_loss(objective, LinearVAE())
    bound = vae_objectives.bind_loss(objective, LinearVAE(),
                                     discriminator=LinearDiscriminator())
    loss, _ = bound(FACTOR_PARAMS, BATCH, RNG)
    np.testing.assert_allclose(loss, factor_loss()[0], rtol=1e-6)
