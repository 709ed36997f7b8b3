"""The weakly-supervised VAEs of Locatello et al., "Weakly-Supervised Disentanglement
Without Compromises", ICML 2020 (§3): Ada-GVAE and Ada-ML-VAE, which learn from pairs
of images (x1, x2) that share all but a few ground-truth factors, without being told
which ones.

Each image of a pair is encoded to its posterior q(z | x) = N(μ, diag σ²). The
distance per latent between the two posteriors,

  δ_i = KL(q(z_i | x1) ‖ q(z_i | x2)),

says which latents the pair changed: a latent changed when δ_i reaches the adaptive
threshold τ = ½(max_i δ_i + min_i δ_i), halfway between the pair's smallest and
largest distance (§3, "Adaptive"; disentanglement_lib bins δ into two bins of equal
width, the upper bin from τ on). Every latent below τ is taken as shared: both
images' posteriors are replaced, on that latent, by one average of the two,

  Ada-GVAE     the mean of the two Gaussians' parameters (Hosoya, "Group-based
               learning of disentangled representations with generalizability for
               novel contents", IJCAI 2019): μ = ½(μ1 + μ2), σ² = ½(σ1² + σ2²);
  Ada-ML-VAE   the product of the two as ML-VAE averages a group (Bouchacourt et
               al., "Multi-Level Variational Autoencoder", AAAI 2018), its
               precision the mean of the two: 1/σ² = ½(1/σ1² + 1/σ2²),
               μ = σ²·½(μ1/σ1² + μ2/σ2²);

while each changed latent keeps its own image's posterior. Both images are then
decoded from samples of their new posteriors, and the loss is a β-VAE's on both,
halved:

  ½ Σ_{j=1,2} (−log p(x_j | z_j)) + β · ½ Σ_{j=1,2} KL(q̃(z | x_j) ‖ N(0, I)),

terms in nats per pair as batch means, as disentanglement_lib's weak_vae.py trains
them (its `compute_kl` is 2δ; the threshold does not depend on the factor).

A batch holds the pairs' first images under "image" and their second under
`PAIR_IMAGE` (train/vae_stage.py draws them: data/weak_pairs.py).
"""

import math

import flax.linen as nn
import jax
import jax.numpy as jnp

from causal_disent.objectives.vae_terms import (
    batch_elbo_metrics,
    gaussian_kl,
    gaussian_kl_to_standard_normal,
    pixel_nll,
    reparameterise,
)
from causal_disent.utils.images import images_to_unit_range

# The batch key of the pairs' second images.
PAIR_IMAGE = "pair_image"

# How the shared latents' two posteriors become one (`group_average`).
AVERAGINGS = ("gvae", "ml_vae")


def changed_latents(distance: jax.Array) -> jax.Array:
    """Which latents each pair changed, by the adaptive threshold: distance [B, d]
    (δ, >= 0) -> bool [B, d], True where δ_i >= ½(max δ + min δ) of its pair. A pair
    whose distances are all equal has no latent above any other, and none is taken
    as changed (disentanglement_lib's bins are then of zero width)."""
    largest = jnp.max(distance, axis=-1, keepdims=True)
    smallest = jnp.min(distance, axis=-1, keepdims=True)
    return (distance >= 0.5 * (largest + smallest)) & (largest > smallest)


def group_average(mean_1: jax.Array, log_variance_1: jax.Array, mean_2: jax.Array,
                  log_variance_2: jax.Array, averaging: str) -> tuple[jax.Array, jax.Array]:
    """(mean, log variance) of the one posterior that `averaging` ("gvae" or "ml_vae",
    as the module's docstring writes them) makes of two, elementwise. Computed in log
    space, so that no variance is divided by or exponentiated from a large log σ²."""
    if averaging == "gvae":
        mean = 0.5 * (mean_1 + mean_2)
        log_variance = jnp.logaddexp(log_variance_1, log_variance_2) - math.log(2.0)
        return mean, log_variance
    if averaging == "ml_vae":
        # σ² = 2σ1²σ2² / (σ1² + σ2²); μ weighs each mean by the other's variance.
        log_sum = jnp.logaddexp(log_variance_1, log_variance_2)
        log_variance = math.log(2.0) + log_variance_1 + log_variance_2 - log_sum
        weight_1 = jax.nn.sigmoid(log_variance_2 - log_variance_1)  # σ2² / (σ1² + σ2²)
        return weight_1 * mean_1 + (1.0 - weight_1) * mean_2, log_variance
    raise ValueError(f"unknown averaging {averaging!r}; known: {', '.join(AVERAGINGS)}")


def shared_posteriors(mean_1: jax.Array, log_variance_1: jax.Array, mean_2: jax.Array,
                      log_variance_2: jax.Array, averaging: str) -> dict:
    """Both images' posteriors after the adaptive averaging: {"mean_1",
    "log_variance_1", "mean_2", "log_variance_2", "changed" (bool [B, d]),
    "distance" (δ [B, d])}."""
    distance = gaussian_kl(mean_1, log_variance_1, mean_2, log_variance_2)
    changed = changed_latents(distance)
    average_mean, average_log_variance = group_average(
        mean_1, log_variance_1, mean_2, log_variance_2, averaging)
    return {
        "mean_1": jnp.where(changed, mean_1, average_mean),
        "log_variance_1": jnp.where(changed, log_variance_1, average_log_variance),
        "mean_2": jnp.where(changed, mean_2, average_mean),
        "log_variance_2": jnp.where(changed, log_variance_2, average_log_variance),
        "changed": changed, "distance": distance,
    }


def weak_vae_loss(params: dict, batch: dict, rng: jax.Array, *, model: nn.Module,
                  beta: float, averaging: str) -> tuple[jax.Array, dict]:
    """The loss of the module's docstring for a batch of pairs. Reports the batch
    means reconstruction, kl, kl_per_latent and elbo (of both images, halved) and
    changed_latents, the mean number of latents a pair was found to change."""
    variables = {"params": params}
    # Both images of every pair go through the encoder and the decoder as one batch.
    images = jnp.concatenate([images_to_unit_range(batch["image"]),
                              images_to_unit_range(batch[PAIR_IMAGE])])
    mean, log_variance = model.apply(variables, images, method=model.encode)
    (mean_1, mean_2), (log_variance_1, log_variance_2) = (
        jnp.split(mean, 2), jnp.split(log_variance, 2))
    posteriors = shared_posteriors(mean_1, log_variance_1, mean_2, log_variance_2, averaging)
    mean = jnp.concatenate([posteriors["mean_1"], posteriors["mean_2"]])
    log_variance = jnp.concatenate([posteriors["log_variance_1"], posteriors["log_variance_2"]])
    logits = model.apply(variables, reparameterise(rng, mean, log_variance),
                         method=model.decode)
    reconstruction_1, reconstruction_2 = jnp.split(
        pixel_nll(model.likelihood, logits, images), 2)
    kl_1, kl_2 = jnp.split(gaussian_kl_to_standard_normal(mean, log_variance), 2)
    metrics = batch_elbo_metrics(0.5 * (reconstruction_1 + reconstruction_2),
                                 0.5 * (kl_1 + kl_2))
    metrics["changed_latents"] = jnp.mean(jnp.sum(posteriors["changed"], axis=-1))
    return metrics["reconstruction"] + beta * metrics["kl"], metrics


def ada_gvae_loss(params: dict, batch: dict, rng: jax.Array, *, model: nn.Module,
                  beta: float) -> tuple[jax.Array, dict]:
    """Ada-GVAE: `weak_vae_loss` with the group-VAE averaging."""
    return weak_vae_loss(params, batch, rng, model=model, beta=beta, averaging="gvae")


def ada_ml_vae_loss(params: dict, batch: dict, rng: jax.Array, *, model: nn.Module,
                    beta: float) -> tuple[jax.Array, dict]:
    """Ada-ML-VAE: `weak_vae_loss` with the ML-VAE averaging."""
    return weak_vae_loss(params, batch, rng, model=model, beta=beta, averaging="ml_vae")
