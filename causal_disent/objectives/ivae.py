"""The iVAE's losses (Khemakhem et al., "Variational Autoencoders and Nonlinear ICA:
A Unifying Framework", AISTATS 2020, §3; models/ivae.py): the negative ELBO with the
prior p(z | u) = N(μ(u), diag λ(u)) of an observed auxiliary variable u,

    −log p(x | z) + β·KL(q(z | ·) ‖ p(z | u)),  z = μ + σ·ε the reparameterised sample,

the KL analytic between diagonal Gaussians (`gaussian_kl`), terms batch means of
per-example sums (nats per example), reported as the VAE family reports them
(reconstruction, kl, kl_per_latent, elbo). β = 1 is the iVAE.

  ivae_loss         images (models/ivae.IVAE, the `vae` stage's "ivae"): the model's
                    pixel likelihood, q(z | x), batch {"image", "auxiliary"}
  vector_ivae_loss  vectors (models/ivae.VectorIVAE): Gaussian p(x | z) of the model's
                    fixed variance, q(z | x, u), batch {"x", "auxiliary"}; with the
                    plain-VAE network it is the VAE's loss
  vector_ivae_weighted_loss
                    vectors, as the iVAE authors train: the reconstruction and the KL's
                    three parts (MI, TC, dimension-wise KL) each weighted

The sample, the pixels' NLL, the KL and the reported metrics are the family's
(objectives/vae_terms.py); tests/objectives/test_ivae_objective.py checks that the
loss equals β-VAE's when p(z | u) is N(0, I).
"""

import math

import flax.linen as nn
import jax
import jax.numpy as jnp

from causal_disent.objectives.vae_terms import (
    batch_elbo_metrics,
    gaussian_kl,
    minibatch_weighted_kl_decomposition,
    pixel_nll,
    reparameterise,
)
from causal_disent.utils.images import images_to_unit_range


def gaussian_nll(x: jax.Array, mean: jax.Array, variance: float) -> jax.Array:
    """−log N(x; mean, variance·I) per row: [B, D] -> [B]."""
    return 0.5 * jnp.sum((x - mean) ** 2 / variance + math.log(2.0 * math.pi * variance),
                         axis=-1)


def auxiliary_of(batch: dict, what: str) -> jax.Array:
    """batch["auxiliary"], u [B, n]; ValueError saying how to supply it if missing."""
    if "auxiliary" not in batch:
        raise ValueError(f"the {what} needs the observed auxiliary variable u, "
                         "batch['auxiliary']: set vae.auxiliary.factor")
    return batch["auxiliary"]


def ivae_loss(params: dict, batch: dict, rng: jax.Array, *, model: nn.Module,
              beta: float) -> tuple[jax.Array, dict]:
    """iVAE on images: Σ_pixels BCE(decode(z), x) + β·KL(q(z | x) ‖ p(z | u)), batch
    means of per-image sums; batch {"image" uint8 [B, H, W, ch], "auxiliary" [B, n]}."""
    auxiliary = auxiliary_of(batch, "'ivae' loss")
    images = images_to_unit_range(batch["image"])
    variables = {"params": params}
    mean, log_variance = model.apply(variables, images, method=model.encode)
    logits = model.apply(variables, reparameterise(rng, mean, log_variance),
                         method=model.decode)
    prior_mean, prior_log_variance = model.apply(variables, auxiliary, method=model.prior)
    metrics = batch_elbo_metrics(pixel_nll(model.likelihood, logits, images),
                                 gaussian_kl(mean, log_variance, prior_mean, prior_log_variance))
    return metrics["reconstruction"] + beta * metrics["kl"], metrics


def vector_ivae_loss(params: dict, batch: dict, rng: jax.Array, *, model: nn.Module,
                     beta: float) -> tuple[jax.Array, dict]:
    """iVAE (or the plain VAE) on vectors: −log N(x; g(z), model.decoder_variance·I) +
    β·KL(q(z | x, u) ‖ p(z | u)), batch means of per-example sums; batch {"x" [B, D],
    "auxiliary" [B, n]}."""
    auxiliary = auxiliary_of(batch, "vector iVAE loss")
    variables = {"params": params}
    mean, log_variance = model.apply(variables, batch["x"], auxiliary, method=model.encode)
    decoded = model.apply(variables, reparameterise(rng, mean, log_variance),
                          method=model.decode)
    prior_mean, prior_log_variance = model.apply(variables, auxiliary, method=model.prior)
    metrics = batch_elbo_metrics(gaussian_nll(batch["x"], decoded, model.decoder_variance),
                           gaussian_kl(mean, log_variance, prior_mean, prior_log_variance))
    return metrics["reconstruction"] + beta * metrics["kl"], metrics


def vector_ivae_weighted_loss(params: dict, batch: dict, rng: jax.Array, *,
                              model: nn.Module, weights: tuple[float, float, float, float],
                              dataset_size: int) -> tuple[jax.Array, dict]:
    """The iVAE authors' training objective on vectors (ilkhem/iVAE, models/nets.py,
    `cleanIVAE.elbo`; their configs/ivae.yaml weighs it a, b, c, d = 100, 1, 0, 10):

      a·(−log p(x | z)) + b·MI + c·TC + d·dimension-wise KL,

    batch means of per-example values, z one reparameterised sample of q(z | x, u), the
    KL's three parts against p(z | u) by minibatch-weighted sampling over the batch
    and the `dataset_size` points (`minibatch_weighted_kl_decomposition`, as the
    authors estimate them). With weights (1, 1, 1, 1) it is the negative ELBO with the
    KL estimated from the sample, log q(z | x, u) − log p(z | u); a = 100 weighs the
    reconstruction as a decoder variance 100 times smaller would, up to a constant.
    Batch {"x" [B, D], "auxiliary" [B, n]}."""
    reconstruction_weight, mi_weight, tc_weight, dimension_weight = weights
    auxiliary = auxiliary_of(batch, "vector iVAE loss")
    variables = {"params": params}
    mean, log_variance = model.apply(variables, batch["x"], auxiliary, method=model.encode)
    latents = reparameterise(rng, mean, log_variance)
    decoded = model.apply(variables, latents, method=model.decode)
    prior_mean, prior_log_variance = model.apply(variables, auxiliary, method=model.prior)
    parts = minibatch_weighted_kl_decomposition(
        {"z": latents, "mean": mean, "log_variance": log_variance}, dataset_size,
        prior_mean, prior_log_variance)
    metrics = {"reconstruction": jnp.mean(gaussian_nll(batch["x"], decoded,
                                                       model.decoder_variance)),
               **{name: jnp.mean(value) for name, value in parts.items()}}
    loss = (reconstruction_weight * metrics["reconstruction"] + mi_weight * metrics["mi"]
            + tc_weight * metrics["tc"] + dimension_weight * metrics["dimension_wise_kl"])
    return loss, metrics
