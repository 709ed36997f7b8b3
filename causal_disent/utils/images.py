"""Pixel scaling shared by every model: datasets render uint8, models see [0, 1]."""

import jax
import jax.numpy as jnp


def images_to_unit_range(images: jax.Array) -> jax.Array:
    """uint8 [B, H, W, ch] -> float32 in [0, 1] (every model's input and target)."""
    return images.astype(jnp.float32) / 255.0
