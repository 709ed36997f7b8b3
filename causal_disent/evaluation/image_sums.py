"""Sums of a model's per-image scores over dataset images: the loop of the evaluations
that report means over a split (reconstruction.py, vae_evaluation.py)."""

from collections.abc import Callable

import jax
import numpy as np
from jax.sharding import Mesh

from causal_disent.utils import host_memory
from causal_disent.utils.images import images_to_unit_range
from causal_disent.utils.sharding import batch_sharded, padded_global_batches, replicated


def image_summer(batch_sums: Callable, mesh: Mesh) -> Callable:
    """fn(params, dataset, indices, batch_size) -> Σ over dataset images `indices` of
    `batch_sums(params, images, valid) -> {name: array}`, compiled once (an evaluation
    repeated during training, a learning curve, reuses it) and called with the batch
    sharded over `mesh` on padded batches of `batch_size` images in [0, 1]; `valid`
    [batch_size] is 1.0 for real images and 0.0 for the padding, which the sums must
    weigh out. Returns host arrays."""
    jitted = host_memory.compiled_ahead(jax.jit(
        lambda params, images, valid: batch_sums(params, images_to_unit_range(images), valid),
        in_shardings=(replicated(mesh), batch_sharded(mesh), batch_sharded(mesh)),
        out_shardings=replicated(mesh),
    ), "an evaluation batch", field="the stage's train.eval_batch_size")

    def summed(params, dataset, indices: np.ndarray, batch_size: int) -> dict:
        totals = None
        batches = padded_global_batches(len(indices), batch_size, mesh,
                                        lambda index: {"image": dataset.images(indices[index])})
        for _, batch, _ in batches:
            sums = jax.device_get(jitted(params, batch["image"], batch["valid"]))
            totals = sums if totals is None else jax.tree.map(np.add, totals, sums)
        return totals

    return summed
