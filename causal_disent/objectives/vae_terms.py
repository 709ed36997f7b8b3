"""The terms every loss of the VAE family is built from (objectives/vae.py,
objectives/ivae.py, objectives/ladder_vae.py), in one place below all of them, for a
diagonal Gaussian posterior:

  reparameterised sample  z = μ + σ·ε, ε ~ N(0, I) (Kingma & Welling,
                          "Auto-Encoding Variational Bayes", ICLR 2014, §2.4)
  reconstruction          −log p(x | z) summed over pixels and channels, for the
                          model's likelihood (`pixel_nll`): Bernoulli, Σ BCE(logits, x),
                          or Gaussian around σ(logits) with a fixed variance
  Gaussian KL             KL(N(μ_q, σ_q²) ‖ N(μ_p, σ_p²)) per latent, analytic
                          (ibid., Appendix B, for the N(0, 1) prior)
"""

import math

import jax
import jax.numpy as jnp
import optax

# σ² of the Gaussian pixels: with ½, −log p(x | z) = Σ (x − σ(logits))² + a constant,
# the l2 reconstruction loss of disentanglement_lib (the code of Locatello et al.,
# ICML 2019), so weights such as β mean the same under it.
GAUSSIAN_PIXEL_VARIANCE = 0.5


def reparameterise(rng: jax.Array, mean: jax.Array, log_variance: jax.Array) -> jax.Array:
    """A sample z = μ + σ·ε of N(μ, diag σ²), differentiable in μ and log σ²."""
    return mean + jnp.exp(0.5 * log_variance) * jax.random.normal(rng, mean.shape, mean.dtype)


def gaussian_kl_to_standard_normal(mean: jax.Array, log_variance: jax.Array) -> jax.Array:
    """KL(N(μ, σ²) ‖ N(0, 1)) elementwise: [B, d] -> [B, d] (nats per latent)."""
    return 0.5 * (mean**2 + jnp.exp(log_variance) - log_variance - 1.0)


def gaussian_kl(mean_q: jax.Array, log_variance_q: jax.Array, mean_p: jax.Array,
                log_variance_p: jax.Array) -> jax.Array:
    """KL(N(μ_q, σ_q²) ‖ N(μ_p, σ_p²)) elementwise (nats), broadcasting:
    ½ (log σ_p² − log σ_q² + (σ_q² + (μ_q − μ_p)²) / σ_p² − 1)."""
    return 0.5 * (log_variance_p - log_variance_q
                  + (jnp.exp(log_variance_q) + (mean_q - mean_p) ** 2)
                  * jnp.exp(-log_variance_p) - 1.0)


def bernoulli_nll(logits: jax.Array, images: jax.Array) -> jax.Array:
    """−log p(x | z) per image under independent Bernoulli pixels: [B, H, W, ch] logits
    and targets in [0, 1] -> [B], summed over pixels and channels."""
    if logits.shape != images.shape:
        raise ValueError(f"logits {logits.shape} and images {images.shape} differ in shape")
    return jnp.sum(optax.sigmoid_binary_cross_entropy(logits, images), axis=(1, 2, 3))


def gaussian_nll(logits: jax.Array, images: jax.Array,
                 variance: float = GAUSSIAN_PIXEL_VARIANCE) -> jax.Array:
    """−log p(x | z) per image under independent Gaussian pixels N(σ(logits), variance):
    [B, H, W, ch] -> [B], summed over pixels and channels, the normalising constant
    ½ log(2π·variance) per pixel included (a density, so it can be below 0)."""
    if logits.shape != images.shape:
        raise ValueError(f"logits {logits.shape} and images {images.shape} differ in shape")
    squared_error = (images - jax.nn.sigmoid(logits)) ** 2
    per_pixel = 0.5 * squared_error / variance + 0.5 * math.log(2.0 * math.pi * variance)
    return jnp.sum(per_pixel, axis=(1, 2, 3))


def pixel_nll(likelihood: str, logits: jax.Array, images: jax.Array) -> jax.Array:
    """−log p(x | z) per image [B] under the model's `likelihood` ("bernoulli" or
    "gaussian", models/vae.LIKELIHOODS)."""
    if likelihood == "bernoulli":
        return bernoulli_nll(logits, images)
    if likelihood == "gaussian":
        return gaussian_nll(logits, images)
    raise ValueError(f"unknown likelihood {likelihood!r}: use 'bernoulli' or 'gaussian'")


def batch_elbo_metrics(reconstruction: jax.Array, kl: jax.Array) -> dict:
    """Per-example reconstruction [B] and KL [B, d] -> the batch means every loss of
    the family reports: reconstruction, kl, kl_per_latent [d] and elbo =
    −(reconstruction + kl)."""
    reconstruction = jnp.mean(reconstruction)
    kl_per_latent = jnp.mean(kl, axis=0)
    kl = jnp.sum(kl_per_latent)
    return {"reconstruction": reconstruction, "kl": kl, "kl_per_latent": kl_per_latent,
            "elbo": -(reconstruction + kl)}
