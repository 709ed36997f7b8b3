"""Run in a fresh process with 8 forced CPU devices (see test_multidevice.py).

Trains the tiny MCQ-VAE for three steps on a mesh of 1 device and on a mesh of 8
devices from the same initial state and global batches, and prints the largest
differences in losses and parameters as JSON.
"""

import functools
import json
import os

assert "--xla_force_host_platform_device_count=8" in os.environ.get("XLA_FLAGS", "")

import jax  # noqa: E402
import numpy as np  # noqa: E402
import optax  # noqa: E402

from causal_disent import models  # noqa: E402
from causal_disent.data import registry  # noqa: E402
from causal_disent.objectives.mcqvae import mcqvae_loss  # noqa: E402
from causal_disent.train import sharding  # noqa: E402
from causal_disent.train.state import TrainState, train_step  # noqa: E402
from tests.helpers import tiny_config  # noqa: E402


def train_three_steps(mesh, model, batches):
    params = model.init(jax.random.key(0), np.zeros((1, 64, 64, 3), np.float32))["params"]
    state = jax.device_put(
        TrainState.create(apply_fn=model.apply, params=params, tx=optax.adam(1e-3)),
        sharding.replicated(mesh),
    )
    step = jax.jit(
        functools.partial(train_step, loss_fn=functools.partial(mcqvae_loss, model=model)),
        in_shardings=(sharding.replicated(mesh), sharding.batch_sharded(mesh), sharding.replicated(mesh)),
        out_shardings=(sharding.replicated(mesh), sharding.replicated(mesh)),
    )
    losses = []
    for batch in batches:
        state, metrics = step(state, sharding.global_batch(batch, mesh), jax.random.key(1))
        losses.append(float(metrics["loss"]))
    return np.array(losses), jax.device_get(state.params)


def main():
    assert jax.device_count() == 8
    model = models.build_mcqvae(tiny_config().mcqvae.model, out_channels=3)
    dataset = registry.get_dataset("shapes3d_synth")
    batches = [{"image": dataset.images(np.arange(16) * 997 + s)} for s in range(3)]
    one_loss, one_params = train_three_steps(sharding.make_data_mesh(jax.devices()[:1]), model, batches)
    all_loss, all_params = train_three_steps(sharding.make_data_mesh(), model, batches)
    param_diff = max(
        float(np.max(np.abs(a - b))) for a, b in zip(jax.tree.leaves(one_params), jax.tree.leaves(all_params))
    )
    try:
        sharding.check_batch_divisible(12, sharding.make_data_mesh(), "mcqvae.optim.batch_size")
        error = None
    except ValueError as e:
        error = str(e)
    print(json.dumps({
        "losses_1": one_loss.tolist(), "losses_8": all_loss.tolist(),
        "max_loss_diff": float(np.max(np.abs(one_loss - all_loss))),
        "max_param_diff": param_diff, "indivisible_batch_error": error,
    }))


if __name__ == "__main__":
    main()
