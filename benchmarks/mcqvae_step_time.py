r"""Stage-1 (MCQ-VAE) train-step time on this machine, compilation excluded.

  python benchmarks/mcqvae_step_time.py                 # paper size and :small
  python benchmarks/mcqvae_step_time.py --variants=small --steps=20

Times the library's own jitted train step (forward, backward, Adam update) at the
config's batch size on rendered shapes3d_synth batches, and prints per variant the
median seconds per step and images per second; the last line is a JSON object.
"""

import functools
import json
import statistics
import sys
import time
from pathlib import Path

import jax
import numpy as np
import optax

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from causal_disent import cli, models  # noqa: E402
from causal_disent.data import registry  # noqa: E402
from causal_disent.objectives.mcqvae import mcqvae_loss  # noqa: E402
from causal_disent.runs import records  # noqa: E402
from causal_disent.train.state import TrainState, train_step  # noqa: E402
from causal_disent.utils import arguments  # noqa: E402
from configs import ctvae_shapes3d  # noqa: E402


def time_variant(variant: str | None, steps: int) -> dict:
    config = ctvae_shapes3d.get_config(variant)
    batch_size = config.mcqvae.optim.batch_size
    dataset = registry.dataset_from_config(config.data)
    model = models.build_mcqvae(config.mcqvae.model, out_channels=dataset.image_shape[-1])
    params = model.init(jax.random.key(0), np.zeros((1, *dataset.image_shape), np.float32))["params"]
    state = TrainState.create(apply_fn=model.apply, params=params, tx=optax.adam(1e-4))
    step = jax.jit(
        functools.partial(train_step, loss_fn=functools.partial(mcqvae_loss, model=model)),
        donate_argnums=0,
    )
    rng = np.random.default_rng(0)
    batches = [
        {"image": dataset.images(rng.integers(0, dataset.num_images, batch_size))}
        for _ in range(4)
    ]
    compile_start = time.perf_counter()
    state, metrics = step(state, batches[0], jax.random.key(0))
    jax.block_until_ready(metrics)
    compile_seconds = time.perf_counter() - compile_start
    times = []
    for i in range(steps):
        start = time.perf_counter()
        state, metrics = step(state, batches[i % len(batches)], jax.random.key(0))
        jax.block_until_ready(metrics)
        times.append(time.perf_counter() - start)
    median = statistics.median(times)
    return {
        "batch_size": batch_size,
        "parameters": int(sum(p.size for p in jax.tree.leaves(params))),
        "first_step_s": round(compile_seconds, 2),
        "median_step_s": round(median, 4),
        "images_per_s": round(batch_size / median, 1),
    }


def main():
    parser = arguments.OneLineArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variants", default="paper,small", help="comma-separated; 'paper' is the base config")
    parser.add_argument("--steps", type=arguments.positive_int, default=10)
    records.add_record_flag(parser)
    args = parser.parse_args()
    recorder = records.script_recorder(args.record)
    results = {}
    for name in args.variants.split(","):
        results[name] = time_variant(None if name == "paper" else name, args.steps)
        print(f"{name}: {results[name]}", flush=True)
    results["device"] = jax.devices()[0].device_kind
    print(json.dumps(results))
    records.write_or_exit(recorder, results)


if __name__ == "__main__":
    cli.run_script(main)
