"""Run in a fresh process with 8 forced CPU devices (see test_multidevice.py).

Trains the tiny MCQ-VAE for three steps, the tiny CT layer for one step of each
mode, and the tiny FactorVAE (VAE and discriminator, the latents permuted over the
global batch) for two steps, on a mesh of 1 device and on a mesh of 8 devices from
the same initial state, global batches and seeds; builds a stage-2 code cache on both
meshes; and prints the largest differences as JSON.
"""

import functools
import json
import os

assert "--xla_force_host_platform_device_count=8" in os.environ.get("XLA_FLAGS", "")

import jax  # noqa: E402
import numpy as np  # noqa: E402
import optax  # noqa: E402

from configs import ctvae_shapes3d, factorvae_dsprites_synth  # noqa: E402
from causal_disent import models  # noqa: E402
from causal_disent.data import registry  # noqa: E402
from causal_disent.evaluation import ct_retrieval  # noqa: E402
from causal_disent.objectives import ct  # noqa: E402
from causal_disent.objectives.factor_vae import permute_dims  # noqa: E402
from causal_disent.objectives.mcqvae import mcqvae_loss  # noqa: E402
from causal_disent.objectives.vae import bind_loss  # noqa: E402
from causal_disent.runs import vae as vae_run  # noqa: E402
from causal_disent.train import ct_codes  # noqa: E402
from causal_disent.utils import host_memory, sharding  # noqa: E402
from causal_disent.train.state import TrainState, train_step  # noqa: E402
from tests.helpers import tiny_config  # noqa: E402


def train_steps(mesh, params, loss_fn, batches, tx=None):
    state = jax.device_put(
        TrainState.create(apply_fn=None, params=params, tx=tx or optax.adam(1e-3)),
        sharding.replicated(mesh),
    )
    step = jax.jit(
        functools.partial(train_step, loss_fn=loss_fn),
        in_shardings=(sharding.replicated(mesh), sharding.batch_sharded(mesh), sharding.replicated(mesh)),
        out_shardings=(sharding.replicated(mesh), sharding.replicated(mesh)),
    )
    losses = []
    for batch in batches:
        state, metrics = step(state, sharding.global_batch(batch, mesh), jax.random.key(1))
        losses.append(float(metrics["loss"]))
    return np.array(losses), jax.device_get(state.params)


def max_difference(a, b):
    return max(float(np.max(np.abs(x - y))) for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b)))


def compare_ct_modes():
    """One step of each CT mode; returns the largest loss and parameter differences."""
    model_config = ctvae_shapes3d.get_config().ct.model  # 2 layers, no noise, dense GNN
    model_config.update(graph_hidden=8, gnn_hidden=8)
    model = models.build_ct_layer(model_config, num_nodes=16, num_codes=8, num_actions=4)
    rng = np.random.default_rng(0)
    batch = {
        "x_codes": rng.integers(0, 8, (16, 16)).astype(np.int32),
        "y_codes": rng.integers(0, 8, (16, 16)).astype(np.int32),
        "action": rng.integers(0, 4, 16).astype(np.int32),
    }
    params = model.init({"params": jax.random.key(0), "gumbel": jax.random.key(1)},
                        batch["x_codes"], batch["action"])["params"]
    # Plain SGD, so the step compares the gradients themselves: the attention's score
    # bias has no true gradient (a softmax ignores a shift), and Adam's first step,
    # lr * g / (|g| + eps), would turn its rounding noise into +-lr either way.
    sgd = optax.sgd(1e-3)
    differences = {}
    for mode, loss in ct.MODES.items():
        loss_fn = functools.partial(loss, model=model, weights=ct.default_weights())
        one = train_steps(sharding.make_data_mesh(jax.devices()[:1]), params, loss_fn, [batch], tx=sgd)
        eight = train_steps(sharding.make_data_mesh(), params, loss_fn, [batch], tx=sgd)
        differences[mode] = max(float(np.max(np.abs(one[0] - eight[0]))), max_difference(one[1], eight[1]))
    return differences


def compare_code_cache(model, params, dataset):
    """Codes of 100 images (batches of 64 over the devices, the last one wrapping)
    built on 1 and on 8 devices; returns the number of codes that differ."""
    identity = ct_codes.CacheIdentity("shapes3d_synth", num_images=100, num_nodes=2 * 8 * 8,
                                        num_codes=8, stage1_step=0, params_hash="")
    built = []
    for mesh in (sharding.make_data_mesh(jax.devices()[:1]), sharding.make_data_mesh()):
        built.append(ct_codes.build(
            encode=ct_retrieval.make_encoder(model, mesh), params=params,
            images=lambda index: dataset.images(index * 4801), identity=identity,
            mesh=mesh, batch_size=64,
        ))
    return int(np.sum(built[0] != built[1])), int(np.unique(built[0]).size)


def compare_factor_vae():
    """Two FactorVAE steps (both networks, each by its own Adam) on 1 and on 8
    devices, and permute_dims on a batch sharded over the 8: the largest loss and
    parameter difference, and how many permuted rows came from another device's
    shard (none if the permutation were per shard)."""
    config = factorvae_dsprites_synth.get_config("tiny")
    dataset = registry.get_dataset("dsprites_synth")
    model = vae_run.build_model(config, dataset)
    state = vae_run.state_factory(config, model, dataset.image_shape, jax.random.key(0))()
    loss_fn = bind_loss(config.vae.objective, model,
                        discriminator=vae_run.build_discriminator(config))
    batches = [{"image": dataset.images(np.arange(16) * 4801 + s)} for s in range(2)]
    runs = [train_steps(mesh, state.params, loss_fn, batches,
                        tx=vae_run.stage_optimizer(config))
            for mesh in (sharding.make_data_mesh(jax.devices()[:1]), sharding.make_data_mesh())]
    rows = np.tile(np.arange(64.0)[:, None], (1, 3))
    mesh = sharding.make_data_mesh()
    permute = jax.jit(permute_dims, in_shardings=(sharding.replicated(mesh),
                                                  sharding.batch_sharded(mesh)))
    permuted = np.asarray(permute(jax.random.key(4), rows)).astype(int)
    unsharded = np.asarray(permute_dims(jax.random.key(4), rows)).astype(int)
    shard_of = np.arange(64) // 8  # 8 rows per device
    losses = runs[0][0]
    return {"losses_1": losses.tolist(),
            # The loss sums ~4096 pixels' BCE: compare it relative to its size.
            "max_relative_loss_diff": float(np.max(np.abs(losses - runs[1][0]) / np.abs(losses))),
            "max_param_diff": max_difference(runs[0][1], runs[1][1]),
            "groups": sorted(runs[0][1]),
            "permutation_equals_unsharded": bool(np.array_equal(permuted, unsharded)),
            "rows_from_another_shard": int(np.sum(shard_of[permuted] != shard_of[:, None]))}


def planned_copies(devices) -> float:
    """A replicated array's copy on `devices`, by host_memory's reading of XLA's plan,
    in copies of the array: one per device, since CPU devices share the host."""
    mesh = sharding.make_data_mesh(devices)
    matrix = jax.device_put(np.ones((64, 1000), np.float32), sharding.replicated(mesh))
    executable = jax.jit(lambda x: x + 1).trace(matrix).lower().compile()
    return host_memory.new_bytes(executable) / matrix.nbytes


def main():
    assert jax.device_count() == 8
    model = models.build_mcqvae(tiny_config().mcqvae.model, out_channels=3)
    params = model.init(jax.random.key(0), np.zeros((1, 64, 64, 3), np.float32))["params"]
    loss_fn = functools.partial(mcqvae_loss, model=model)
    dataset = registry.get_dataset("shapes3d_synth")
    batches = [{"image": dataset.images(np.arange(16) * 997 + s)} for s in range(3)]
    one_loss, one_params = train_steps(sharding.make_data_mesh(jax.devices()[:1]), params, loss_fn, batches)
    all_loss, all_params = train_steps(sharding.make_data_mesh(), params, loss_fn, batches)
    param_diff = max_difference(one_params, all_params)
    try:
        sharding.check_batch_divisible(12, sharding.make_data_mesh(), "mcqvae.optim.batch_size")
        error = None
    except ValueError as e:
        error = str(e)
    print(json.dumps({
        "losses_1": one_loss.tolist(), "losses_8": all_loss.tolist(),
        "max_loss_diff": float(np.max(np.abs(one_loss - all_loss))),
        "max_param_diff": param_diff, "indivisible_batch_error": error,
        "ct_max_diff_per_mode": compare_ct_modes(),
        "code_cache_differences_and_distinct_codes": compare_code_cache(model, params, dataset),
        "compare_factor_vae": compare_factor_vae(),
        "planned_copies_on_1_and_8_devices": [planned_copies(jax.devices()[:1]),
                                              planned_copies(jax.devices())],
    }))


if __name__ == "__main__":
    main()
