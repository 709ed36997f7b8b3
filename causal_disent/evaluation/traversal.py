"""Latent traversals of a trained VAE-family model: each latent swept while the
others keep a test image's encoding, the figure by which disentangling VAEs are
usually judged by eye (Higgins et al., "β-VAE: Learning Basic Visual Concepts with a
Constrained Variational Framework", ICLR 2017, Fig. 7).

The sweep is in units of each latent's own spread σ_j (the standard deviation of the
encoder means over a set of test images), so that it means the same for a VAE,
whose active latents spread about as N(0, 1) and inactive ones hardly at all, and
for a plain autoencoder, whose latents have no prior scale.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import jax
import numpy as np

from causal_disent.evaluation import model_calls
from causal_disent.utils import figures
from causal_disent.utils.images import images_to_unit_range

OFFSETS = (-3, -2, -1, 0, 1, 2, 3)  # in units of the latent's spread σ_j
# The figure's rows at most: beyond, the latents that spread most (a VAE's active
# ones). 300 latents drew a 114-megapixel PNG, and 1500 went over the grid's limit.
MAX_TRAVERSED_LATENTS = 32


def traversed_latents(spread: np.ndarray, limit: int = MAX_TRAVERSED_LATENTS) -> np.ndarray:
    """The indices of the latents a traversal moves, in order: all of them, or the
    `limit` whose `spread` is largest (on a tie, the lower index)."""
    if len(spread) <= limit:
        return np.arange(len(spread))
    return np.sort(np.argsort(-np.asarray(spread), kind="stable")[:limit])


def traversal_latents(means: np.ndarray, spread: np.ndarray,
                      offsets: Sequence[float] = OFFSETS,
                      moved: Sequence[int] | None = None) -> np.ndarray:
    """[n, m, K, d] latents: latents[i, r, k] is `means[i]` [n, d] with latent
    j = moved[r] (default: every latent, m = d) moved by offsets[k]·spread[j] and
    every other latent kept."""
    means, spread = np.asarray(means, np.float32), np.asarray(spread, np.float32)
    count, width = means.shape
    moved = np.arange(width) if moved is None else np.asarray(moved)
    latents = np.broadcast_to(means[:, None, None, :],
                              (count, len(moved), len(offsets), width)).copy()
    moves = np.asarray(offsets, np.float32)[None, :] * spread[moved, None]  # [m, K]
    for row, j in enumerate(moved):
        latents[:, row, :, j] += moves[row]
    return latents


def decoded_latents(model) -> int:
    """How many of the leading latents the decoder reads: a LadderVAE decodes from its
    bottom layer alone, every other model from all of them."""
    sizes = getattr(model, "latent_sizes", None)
    return int(sizes[0]) if sizes else int(model.num_latents)


def save_traversal_figure(model, params, images: np.ndarray, spread_images: np.ndarray,
                          path: str | Path, title: str | None = None) -> Path:
    """Writes the traversal grid of the uint8 test `images` [n, H, W, ch]: one row per
    decoded latent j (at most MAX_TRAVERSED_LATENTS, `traversed_latents`), and for
    each image a group of columns with latent j at the image's encoding + offset·σ_j
    for each of OFFSETS (σ_j over the uint8 `spread_images` [m, H, W, ch]). `model`
    has encode(images) -> (mean, ·) and decode(latents) -> logits. Returns the path
    written."""
    host_params = jax.device_get(params)
    # One encoder call for both sets: one compiled shape instead of two.
    encoded = np.asarray(model_calls.encoded_means(
        model, host_params, images_to_unit_range(np.concatenate([images, spread_images]))))
    means, spread = encoded[:len(images)], encoded[len(images):].std(axis=0)
    decoded_count = decoded_latents(model)
    moved = traversed_latents(spread[:decoded_count])
    latents = traversal_latents(means, spread, moved=moved)  # [n, rows, K, d]
    count, shown, steps, width = latents.shape
    decoded = np.asarray(model_calls.decoded_pixels(model, host_params,
                                                   latents.reshape(-1, width)))
    grid = figures.to_uint8(decoded).reshape(count, shown, steps, *images.shape[1:])
    grid = grid.transpose(1, 0, 2, 3, 4, 5).reshape(shown, count * steps, *images.shape[1:])
    columns = [f"image {i + 1}" if offset == 0 else f"{offset:+d}σ"
               for i in range(count) for offset in OFFSETS]
    rows = [f"z{j} (σ {spread[j]:.2f})" for j in moved]
    layer = " of the bottom layer" if decoded_count < model.num_latents else ""
    picked = (f" (the {shown} of {decoded_count} that spread most)"
              if shown < decoded_count else "")
    title = title or (
        f"Latent traversals{layer}{picked}: each row moves one latent by −3σ … +3σ from "
        f"the encoding of {count} test images\n(σ: that latent's spread over "
        f"{len(spread_images)} test images), the other latents fixed")
    return figures.save_drawn(path, figures.draw_image_grid, grid, title=title,
                              row_labels=rows, column_labels=columns)
