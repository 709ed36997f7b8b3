"""Action retrieval (paper §4, Eq. 10) on codes, in device batches: what the
learning curve of stage 2 evaluates, without decoding or rendering."""

import functools

import jax
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh

from causal_disent.objectives import ct as ct_objectives
from causal_disent.train.sharding import global_batch, padded_batches, process_slice, replicated


def encode_images(encode, mcqvae_params, dataset, image_index: np.ndarray, mesh: Mesh,
                  batch_size: int) -> np.ndarray:
    """Codes [n, N] int32 of the dataset's images at `image_index` [n]."""
    local, collected = process_slice(batch_size), []
    for _, index, keep in padded_batches(len(image_index), batch_size):
        batch = global_batch({"images": dataset.images(image_index[index][local])}, mesh)
        codes = multihost_utils.process_allgather(encode(mcqvae_params, batch["images"]), tiled=True)
        collected.append(np.asarray(codes)[:keep])
    return np.concatenate(collected).astype(np.int32)


@functools.lru_cache(maxsize=8)
def _probabilities_fn(model, mesh: Mesh):
    @functools.partial(jax.jit, out_shardings=replicated(mesh))
    def probabilities(params, x_codes, y_codes, rng):
        rngs = {"gumbel": rng, "noise": rng}
        every = model.apply({"params": params}, x_codes, rngs=rngs, method=model.all_actions)
        return jax.nn.softmax(ct_objectives.action_scores(every["logits"], y_codes), axis=-1)

    return probabilities


def action_probabilities(model, params, x_codes: np.ndarray, y_codes: np.ndarray,
                         mesh: Mesh, batch_size: int, rng: jax.Array) -> np.ndarray:
    """q = softmax over actions of s_â (Eq. 10) for each pair: [n, N] codes -> [n, A].
    Batch b is scored with fold_in(rng, b's first row), so the result does not depend
    on anything but the inputs and `rng`."""
    probabilities = _probabilities_fn(model, mesh)
    local, collected = process_slice(batch_size), []
    for start, index, keep in padded_batches(len(x_codes), batch_size):
        batch = global_batch({"x": x_codes[index][local], "y": y_codes[index][local]}, mesh)
        probs = probabilities(params, batch["x"], batch["y"], jax.random.fold_in(rng, start))
        collected.append(np.asarray(probs)[:keep])
    return np.concatenate(collected)
