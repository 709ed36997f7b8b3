"""The VAE family's loss pieces and β-VAE's loss against NumPy hand computations, and
the objective section's checks."""

import flax.linen as nn
import jax
import jax.numpy as jnp
import ml_collections
import numpy as np
import pytest

from causal_disent.objectives import vae as vae_objectives
from causal_disent.objectives import vae_terms

MEAN = np.array([[0.0, 1.0], [-2.0, 0.5]], np.float32)
LOG_VARIANCE = np.array([[0.0, np.log(4.0)], [-1.0, 0.3]], np.float32)


def numpy_kl(mean, log_variance):
    variance = np.exp(np.asarray(log_variance, np.float64))
    return 0.5 * (mean.astype(np.float64) ** 2 + variance - np.log(variance) - 1.0)


def numpy_bernoulli_nll(logits, images):
    """Σ_pixels −[x log σ(l) + (1 − x) log(1 − σ(l))] per image, float64."""
    p = 1.0 / (1.0 + np.exp(-np.asarray(logits, np.float64)))
    terms = -(images * np.log(p) + (1.0 - images) * np.log(1.0 - p))
    return terms.reshape(len(terms), -1).sum(axis=1)


def test_gaussian_kl_to_standard_normal_by_hand():
    kl = vae_objectives.gaussian_kl_to_standard_normal(MEAN, LOG_VARIANCE)
    # N(0, 1) against itself is 0; N(1, 4): ½(1 + 4 − log 4 − 1) = 2 − log 2.
    np.testing.assert_allclose(kl[0], [0.0, 2.0 - np.log(2.0)], atol=1e-6)
    np.testing.assert_allclose(kl, numpy_kl(MEAN, LOG_VARIANCE), rtol=1e-6)


def test_bernoulli_nll_by_hand():
    logits = np.array([[[[0.0], [2.0]], [[-3.0], [0.5]]]], np.float32)  # [1, 2, 2, 1]
    images = np.array([[[[1.0], [0.0]], [[0.0], [1.0]]]], np.float32)
    nll = vae_terms.bernoulli_nll(logits, images)
    np.testing.assert_allclose(nll, numpy_bernoulli_nll(logits, images), rtol=1e-6)
    # σ(0) = ½ for a white pixel costs log 2.
    np.testing.assert_allclose(
        vae_terms.bernoulli_nll(np.zeros((1, 1, 1, 1), np.float32),
                                np.ones((1, 1, 1, 1), np.float32)),
        [np.log(2)], rtol=1e-6)
    with pytest.raises(ValueError, match="differ in shape"):
        vae_terms.bernoulli_nll(logits, images[:, :1])


def numpy_gaussian_nll(logits, images, variance=0.5):
    """Σ_pixels −log N(x; σ(l), variance) per image, float64."""
    mean = 1.0 / (1.0 + np.exp(-np.asarray(logits, np.float64)))
    terms = (images - mean) ** 2 / (2 * variance) + 0.5 * np.log(2 * np.pi * variance)
    return terms.reshape(len(terms), -1).sum(axis=1)


def test_gaussian_nll_by_hand():
    logits = np.array([[[[0.0], [2.0]], [[-3.0], [0.5]]]], np.float32)
    images = np.array([[[[1.0], [0.0]], [[0.3], [1.0]]]], np.float32)
    nll = vae_terms.gaussian_nll(logits, images)
    np.testing.assert_allclose(nll, numpy_gaussian_nll(logits, images), rtol=1e-6)
    # σ(0) = ½ against a white pixel, σ² = ½: (½)² / (2·½) + ½ log(2π·½) = ¼ + ½ log π.
    np.testing.assert_allclose(
        vae_terms.gaussian_nll(np.zeros((1, 1, 1, 1), np.float32),
                               np.ones((1, 1, 1, 1), np.float32)),
        [0.25 + 0.5 * np.log(np.pi)], rtol=1e-6)
    with pytest.raises(ValueError, match="differ in shape"):
        vae_terms.gaussian_nll(logits, images[:, :1])


def test_pixel_nll_is_the_named_likelihood():
    logits = np.array([[[[0.4], [-1.0]]]], np.float32)
    images = np.array([[[[1.0], [0.2]]]], np.float32)
    np.testing.assert_allclose(vae_terms.pixel_nll("bernoulli", logits, images),
                               numpy_bernoulli_nll(logits, images), rtol=1e-6)
    np.testing.assert_allclose(vae_terms.pixel_nll("gaussian", logits, images),
                               numpy_gaussian_nll(logits, images), rtol=1e-6)
    with pytest.raises(ValueError, match="unknown likelihood 'poisson'"):
        vae_terms.pixel_nll("poisson", logits, images)


def test_reparameterised_sample_is_mean_plus_sigma_times_noise():
    rng = jax.random.key(3)
    z = vae_objectives.reparameterise(rng, MEAN, LOG_VARIANCE)
    noise = np.asarray(jax.random.normal(rng, MEAN.shape))
    np.testing.assert_allclose(z, MEAN + np.exp(0.5 * LOG_VARIANCE) * noise, rtol=1e-6)


class LinearVAE(nn.Module):
    """A stand-in with the VAE's interface and known parameters: 2x2x1 images, linear
    maps to (mean, log-variance) and back to logits."""

    likelihood: str = "bernoulli"

    def setup(self):
        self.to_mean = self.param("to_mean", nn.initializers.zeros, (4, 2))
        self.to_log_variance = self.param("to_log_variance", nn.initializers.zeros, (4, 2))
        self.to_logits = self.param("to_logits", nn.initializers.zeros, (2, 4))

    def encode(self, images):
        flat = images.reshape(images.shape[0], -1)
        return flat @ self.to_mean, flat @ self.to_log_variance

    def decode(self, latents, step=None):  # step: an XBlock's schedule (none here)
        return (latents @ self.to_logits).reshape(latents.shape[0], 2, 2, 1)


PARAMS = {
    "to_mean": np.array([[1.0, 0.0], [0.0, -1.0], [0.5, 0.5], [0.0, 2.0]], np.float32),
    "to_log_variance": np.array([[0.2, 0.0], [0.0, -0.4], [0.1, 0.0], [0.0, 0.3]], np.float32),
    "to_logits": np.array([[1.0, -1.0, 0.5, 0.0], [0.0, 2.0, -0.5, 1.0]], np.float32),
}
BATCH = {"image": np.array([[[[255], [0]], [[0], [255]]], [[[0], [0]], [[255], [255]]]],
                           np.uint8)}


@pytest.mark.parametrize("likelihood, numpy_nll", [("bernoulli", numpy_bernoulli_nll),
                                                   ("gaussian", numpy_gaussian_nll)])
def test_beta_vae_loss_equals_the_hand_computation(likelihood, numpy_nll):
    rng, beta = jax.random.key(7), 4.0
    loss, metrics = vae_objectives.beta_vae_loss(PARAMS, BATCH, rng,
                                                 model=LinearVAE(likelihood=likelihood),
                                                 beta=beta)
    # By hand: x in [0, 1], (μ, log σ²) = x·W, z = μ + σ·ε with the loss's noise,
    # logits = z·V; per image the pixels' NLL and Σ_j KL_j; batch means; + β·KL.
    x = BATCH["image"].reshape(2, 4).astype(np.float64) / 255.0
    mean, log_variance = x @ PARAMS["to_mean"], x @ PARAMS["to_log_variance"]
    noise = np.asarray(jax.random.normal(rng, (2, 2)), np.float64)
    z = mean + np.exp(0.5 * log_variance) * noise
    reconstruction = numpy_nll(z @ PARAMS["to_logits"], x).mean()
    kl_per_latent = numpy_kl(mean, log_variance).mean(axis=0)
    np.testing.assert_allclose(metrics["reconstruction"], reconstruction, rtol=1e-5)
    np.testing.assert_allclose(metrics["kl_per_latent"], kl_per_latent, rtol=1e-5)
    np.testing.assert_allclose(metrics["kl"], kl_per_latent.sum(), rtol=1e-5)
    np.testing.assert_allclose(metrics["elbo"], -(reconstruction + kl_per_latent.sum()),
                               rtol=1e-5)
    np.testing.assert_allclose(loss, reconstruction + beta * kl_per_latent.sum(), rtol=1e-5)


def test_bound_loss_takes_its_weights_from_the_section():
    objective = ml_collections.ConfigDict({"name": "beta_vae", "beta": 0.0})
    bound = vae_objectives.bind_loss(objective, LinearVAE())
    loss, metrics = bound(PARAMS, BATCH, jax.random.key(1))
    np.testing.assert_allclose(loss, metrics["reconstruction"], rtol=1e-6)  # β = 0
    assert vae_objectives.loss_weight_names("beta_vae") == ("beta",)
    # The β-VAE loss is differentiable through the sample (the reparameterisation).
    grads = jax.grad(lambda p: bound(p, BATCH, jax.random.key(1))[0])(
        jax.tree.map(jnp.asarray, PARAMS))
    assert float(jnp.abs(grads["to_log_variance"]).sum()) > 0


@pytest.mark.parametrize("objective, message", [
    ({"name": "beta_vae", "beta": -1.0}, "vae.objective.beta must be >= 0, got -1.0"),
    ({"name": "info_vae", "beta": 1.0}, "vae.objective.name 'info_vae' is unknown; "
                                        "known: ae, beta_vae"),
    ({"name": "beta_vae"}, "vae.objective.beta is missing"),
    ({"name": "beta_vae", "beta": 1.0, "gamma": 2.0},
     "vae.objective.gamma is not a weight of the 'beta_vae' loss"),
])
def test_objective_check_names_the_field(objective, message):
    with pytest.raises(ValueError, match=message):
        vae_objectives.check_objective_config(ml_collections.ConfigDict(objective))
