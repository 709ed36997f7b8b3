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
  the KL's decomposition  into index-code MI, total correlation and dimension-wise
                          KL, by minibatch-weighted sampling (β-TCVAE, and the iVAE
                          authors' weighted objective)
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


def gaussian_log_density(samples: jax.Array, mean: jax.Array,
                         log_variance: jax.Array) -> jax.Array:
    """log N(sample; μ, σ²) elementwise, broadcasting its three arguments."""
    return -0.5 * (math.log(2.0 * math.pi) + log_variance
                   + (samples - mean) ** 2 * jnp.exp(-log_variance))


def minibatch_weighted_kl_decomposition(terms: dict, dataset_size: int,
                                        prior_mean: jax.Array | float = 0.0,
                                        prior_log_variance: jax.Array | float = 0.0) -> dict:
    """The per-image KL estimate log q(z_i | x_i) − log p(z_i) split as index-code MI
    + total correlation (TC) + dimension-wise KL (Chen et al., "Isolating Sources of
    Disentanglement in Variational Autoencoders", NeurIPS 2018, §3), each [B]:

      mi                 log q(z_i | x_i) − log q(z_i)
      tc                 log q(z_i) − Σ_k log q(z_ik)
      dimension_wise_kl  Σ_k log q(z_ik) − Σ_k log p(z_ik)

    with the aggregate posterior's densities by minibatch-weighted sampling (ibid.
    §3.1), over the batch's M images and a dataset of N: log q(z_i) ≈ logsumexp_j
    log q(z_i | x_j) − log(N·M), and log q(z_ik) likewise per latent. The three sum
    to the KL estimate whatever N. N shifts them by constants (MI by log N, TC by
    (d − 1)·log N, the dimension-wise KL by −d·log N; no gradient): with N = 1,
    q(z) is the batch's own mixture (1/M)·Σ_j q(z | x_j), under which a factorised
    posterior has TC ≈ 0; the dataset's N > 1 adds the estimator's known bias. Inside
    a jitted loss with the batch sharded the batch axis is the global batch, so the
    estimate is over the global batch. The prior p is N(0, I) unless `prior_mean` and
    `prior_log_variance` ([B, d], each image's own, as the iVAE's p(z | u)) say
    otherwise."""
    z, mean, log_variance = terms["z"], terms["mean"], terms["log_variance"]
    # [i, j, k]: log q(z_ik | x_j), every sample under every image's posterior.
    log_q_pairs = gaussian_log_density(z[:, None, :], mean[None], log_variance[None])
    log_normaliser = math.log(dataset_size * z.shape[0])
    log_q_z = jax.nn.logsumexp(jnp.sum(log_q_pairs, axis=2), axis=1) - log_normaliser
    log_q_product = jnp.sum(jax.nn.logsumexp(log_q_pairs, axis=1) - log_normaliser, axis=1)
    log_q_z_given_x = jnp.sum(gaussian_log_density(z, mean, log_variance), axis=1)
    log_prior = jnp.sum(gaussian_log_density(z, prior_mean, prior_log_variance), axis=1)
    return {"mi": log_q_z_given_x - log_q_z, "tc": log_q_z - log_q_product,
            "dimension_wise_kl": log_q_product - log_prior}
