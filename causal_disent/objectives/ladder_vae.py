"""The Ladder VAE's loss (Sønderby et al., "Ladder Variational Autoencoders", NeurIPS
2016; the model is models/ladder_vae.py): the negative ELBO of a VAE with L
stochastic layers, its KL term turned on gradually (KL warm-up, ibid. §2.3).

    loss = −log p(x | z_1) + β·w(step)·Σ_l KL_l,   w(step) = min(1, step / warmup_steps)
    KL_l = KL(q(z_l | ·) ‖ p(z_l | z_{l+1}))

with q(z_l | ·) the precision-weighted posterior of the top-down pass and p(z_l |
z_{l+1}) the generative model's prior at the pass's sample z_{l+1} (p(z_L) = N(0, I)),
analytic between the two Gaussians: a one-sample estimate of the ELBO's KL (ibid.
§2.2). β = 1 with the warm-up done is the ELBO; the paper's warm-up "β" rising from 0
to 1 is w here. Terms are batch means of per-image sums (nats per image), reported as
objectives/vae.elbo_metrics does, plus kl_per_layer [L] and kl_weight = w(step).

The reconstruction, the Gaussian KL and the reported metrics are the family's
(objectives/vae_terms.py).
"""

import jax
import jax.numpy as jnp
import numpy as np
from flax import linen as nn

from causal_disent.objectives.vae_terms import batch_elbo_metrics, gaussian_kl, pixel_nll
from causal_disent.utils.images import images_to_unit_range


def kl_warmup_weight(step: jax.Array, warmup_steps: int) -> jax.Array:
    """The KL term's weight w = min(1, step / warmup_steps), rising linearly from 0 to
    1 (1 from the start when warmup_steps is 0); float32."""
    if warmup_steps == 0:
        return jnp.asarray(1.0, jnp.float32)
    return jnp.minimum(1.0, step / warmup_steps).astype(jnp.float32)


def layer_sums(per_latent: jax.Array, latent_sizes) -> jax.Array:
    """[Σ n_l] (bottom layer first) -> [L], the sum over each layer's n_l entries."""
    parts = jnp.split(per_latent, np.cumsum(latent_sizes)[:-1])
    return jnp.stack([jnp.sum(part) for part in parts])


def ladder_vae_loss(params: dict, batch: dict, rng: jax.Array, *, model: nn.Module,
                    beta: float, warmup_steps: int,
                    step: jax.Array) -> tuple[jax.Array, dict]:
    """Reconstruction + β·w(step)·Σ_l KL_l for a LadderVAE `model`, the top-down pass's
    noise ε ~ N(0, I) [B, Σ n_l] drawn from `rng`. Reports reconstruction, kl,
    kl_per_latent [Σ n_l] (bottom layer first), elbo = −(reconstruction + kl) (the
    unweighted bound), kl_per_layer [L] and kl_weight."""
    images = images_to_unit_range(batch["image"])
    noise = jax.random.normal(rng, (images.shape[0], model.num_latents), images.dtype)
    outputs = model.apply({"params": params}, images, noise, method=model.ladder_pass)
    metrics = batch_elbo_metrics(
        pixel_nll(model.likelihood, outputs["logits"], images),
        gaussian_kl(outputs["posterior_mean"], outputs["posterior_log_variance"],
                    outputs["prior_mean"], outputs["prior_log_variance"]))
    weight = kl_warmup_weight(step, warmup_steps)
    return metrics["reconstruction"] + beta * weight * metrics["kl"], {
        **metrics, "kl_per_layer": layer_sums(metrics["kl_per_latent"], model.latent_sizes),
        "kl_weight": weight}
