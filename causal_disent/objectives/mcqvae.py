"""Stage-1 objective: reconstruction MSE + the multi-codebook VQ loss. CT-VAE trains its
MCQ-VAE "using the same procedure as in the original VQ-VAE" (Gendron et al.,
"Disentanglement of Latent Representations via Causal Interventions", IJCAI 2023,
§3.5), i.e. with the loss of van den Oord et al., "Neural Discrete Representation
Learning", NeurIPS 2017, §3.2, Eq. 3."""

import flax.linen as nn
import jax
import jax.numpy as jnp

from causal_disent.utils.images import images_to_unit_range


def psnr_from_mse(mse: jax.Array) -> jax.Array:
    """Peak signal-to-noise ratio (dB) for images in [0, 1]."""
    return -10.0 * jnp.log10(mse)


def mcqvae_loss(
    params: dict, batch: dict, rng: jax.Array, *, model: nn.Module
) -> tuple[jax.Array, dict]:
    """MSE(reconstruction, x) + Σ_codebooks VQ loss; `rng` is unused (deterministic)."""
    del rng
    images = images_to_unit_range(batch["image"])
    outputs = model.apply({"params": params}, images)
    mse = jnp.mean((outputs["reconstruction"] - images) ** 2)
    metrics = {
        "mse": mse,
        "psnr": psnr_from_mse(mse),
        "vq_loss": outputs["vq_loss"],
        "perplexity": outputs["perplexity"],
        "usage": outputs["usage"],
    }
    return mse + outputs["vq_loss"], metrics
