"""Action retrieval (paper §4, Eq. 10) on codes, in device batches: what the
learning curve of stage 2 evaluates, without decoding or rendering."""

import functools

import jax
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh

from causal_disent.objectives import ct as ct_objectives
from causal_disent.utils import host_memory
from causal_disent.utils.images import images_to_unit_range
from causal_disent.utils.sharding import batch_sharded, padded_global_batches, replicated


def make_encoder(mcqvae, mesh: Mesh):
    """jitted (params, images uint8 [B, H, W, ch]) -> codes [B, N], batch-sharded."""

    @functools.partial(
        jax.jit,
        in_shardings=(replicated(mesh), batch_sharded(mesh)),
        out_shardings=batch_sharded(mesh),
    )
    def encode(params, images):
        codes = mcqvae.apply(
            {"params": params}, images_to_unit_range(images), method=mcqvae.encode_codes
        )
        return codes.reshape(codes.shape[0], -1)  # codebook-major, row, column

    return host_memory.compiled_ahead(
        encode, "encoding a batch of images",
        field="ct.train.eval_batch_size (ct.train.code_cache_batch_size for the code cache)")


def encode_images(encode, mcqvae_params, dataset, image_index: np.ndarray, mesh: Mesh,
                  batch_size: int) -> np.ndarray:
    """Codes [n, N] int32 of the dataset's images at `image_index` [n]."""
    collected = []
    batches = padded_global_batches(len(image_index), batch_size, mesh,
                                    lambda index: {"images": dataset.images(image_index[index])})
    for _, batch, keep in batches:
        codes = multihost_utils.process_allgather(encode(mcqvae_params, batch["images"]), tiled=True)
        collected.append(np.asarray(codes)[:keep])
    return np.concatenate(collected).astype(np.int32)


@functools.lru_cache(maxsize=8)
def _scoring_fn(model, mesh: Mesh):
    @functools.partial(jax.jit, out_shardings=replicated(mesh))
    def score(params, x_codes, y_codes, rng):
        rngs = {"gumbel": rng, "noise": rng}
        every = model.apply({"params": params}, x_codes, rngs=rngs, method=model.all_actions)
        return {
            "probabilities": jax.nn.softmax(
                ct_objectives.action_scores(every["logits"], y_codes), axis=-1),
            # Per pair and action [b, A]: the share of nodes the action's mask
            # intervenes on, and of the N² possible edges its graph holds.
            "mask_density": every["mask"].mean(axis=-1).T,
            "edge_density": every["adjacency"].mean(axis=(-2, -1)).T,
        }

    return host_memory.compiled_ahead(score, "scoring a batch of pairs",
                                      field="ct.train.eval_batch_size")


def score_pairs(model, params, x_codes: np.ndarray, y_codes: np.ndarray, mesh: Mesh,
                batch_size: int, rng: jax.Array) -> dict[str, np.ndarray]:
    """Every action's transition of each pair, each [n, A]: "probabilities", q =
    softmax over actions of s_â (Eq. 10); "mask_density" and "edge_density", the
    structure the layer took (as `model.structure` says) for that action. Batch b
    is scored with fold_in(rng, b's first row), so the result does not depend on
    anything but the inputs and `rng`."""
    score = _scoring_fn(model, mesh)
    collected = []
    batches = padded_global_batches(len(x_codes), batch_size, mesh,
                                    lambda index: {"x": x_codes[index], "y": y_codes[index]})
    for start, batch, keep in batches:
        out = score(params, batch["x"], batch["y"], jax.random.fold_in(rng, start))
        collected.append({name: np.asarray(value)[:keep] for name, value in out.items()})
    return {name: np.concatenate([part[name] for part in collected]) for name in collected[0]}


def action_probabilities(model, params, x_codes: np.ndarray, y_codes: np.ndarray,
                         mesh: Mesh, batch_size: int, rng: jax.Array) -> np.ndarray:
    """q = softmax over actions of s_â (Eq. 10) for each pair: [n, N] codes -> [n, A]
    (`score_pairs`' "probabilities")."""
    return score_pairs(model, params, x_codes, y_codes, mesh, batch_size, rng)["probabilities"]
