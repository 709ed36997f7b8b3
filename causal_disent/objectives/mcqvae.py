"""Stage-1 objective: reconstruction MSE + the multi-codebook VQ loss (SPEC §1.1)."""

import flax.linen as nn
import jax
import jax.numpy as jnp


def images_to_unit_range(images: jax.Array) -> jax.Array:
    """uint8 [B, H, W, ch] -> float32 in [0, 1] (the MCQ-VAE's input and target)."""
    return images.astype(jnp.float32) / 255.0


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
