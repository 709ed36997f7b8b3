r"""Many seeds in one compiled step (`config.num_seeds`, train/seed_stacking.py)
against the same seeds trained one after another: the VAE family's training step at
a config's sizes (default: configs/betavae_dsprites_synth.py:small, the study's
network, batch 64), jitted as the runner jits it.

  python benchmarks/seed_stacking.py                        # S = 8, β-VAE :small
  python benchmarks/seed_stacking.py --seeds=8 --config=configs/factorvae_dsprites_synth.py
  python benchmarks/seed_stacking.py --execution=vmap       # unroll, vmap_matmul; auto: by platform

For S = 1 and S = seeds (run by --execution, train/seed_stacking.EXECUTIONS): the
compile time of the step, the median seconds per step over --steps steps
(compilation excluded, each step blocked on) and the compiled step's temporary
memory (XLA's memory analysis; parameters, optimiser state and batch not counted).
Then the wall time of a run of --run_steps steps (the :small runs' 2000) projected
from those:
sequential = S · (compile₁ + run_steps · step₁), stacked = compile_S + run_steps ·
step_S, and their ratio. Data rendering is left out (the input pipeline renders in a
background thread); so is the end-of-run evaluation, the same work either way.

On the 2-core CPU (β-VAE :small, S = 8, 2026-11-28): unrolling gains little, vmap
loses several times over (XLA:CPU runs the vmapped convolutions as grouped ones):
1701 ms a stacked step unrolled, 11548 vmapped, 2852 vmapped with the convolutions as
matmuls (vmap_matmul, with 2015 MB of temporaries against 496-509), against 259-312
ms for one seed; the records
results/seed_stacking_cpu_{unroll,vmap,vmap_matmul}.json (--execution=unroll
--steps=5, then --execution=vmap --steps=3 and --execution=vmap_matmul --steps=3),
rendered in docs/baselines.md.

Measured on one H100 (jax 0.11.2; β-VAE :small, S = 8, --steps=20):
  vmap (auto on GPU)    S = 1 1.5 ms/step, S = 8 8.7 ms/step: 70 s sequential
                        against 25 s stacked, 2.79x less wall time
  unroll                S = 1 1.8 ms/step, S = 8 7.5 ms/step, but 26 s to compile:
                        1.94x
Whole runs (benchmarks/seed_stacking_runs.py, process start to exit) gain more,
3.67x, since each sequential run also pays its process start, backend and data.

The last line is JSON with every figure.
"""

import importlib.util
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

from causal_disent import cli  # noqa: E402
from causal_disent.data import registry  # noqa: E402
from causal_disent.objectives.vae import bind_loss  # noqa: E402
from causal_disent.runs import records, vae as vae_run  # noqa: E402
from causal_disent.train import seed_stacking, vae_stage  # noqa: E402
from causal_disent.utils import arguments  # noqa: E402


def load_config(path: str):
    name, _, variant = path.partition(":")
    spec = importlib.util.spec_from_file_location("bench_config", name)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.get_config(variant or None)


def time_step(config, num_seeds: int, steps: int, execution: str = "vmap") -> dict:
    """Compile seconds and median seconds per step of the stage's step on S stacked
    models run by `execution` (S = 1: the plain step)."""
    dataset = registry.dataset_from_config(config.data)
    model = vae_run.build_model(config, dataset)
    loss_fn = bind_loss(config.vae.objective, model, dataset_size=dataset.num_images,
                        discriminator=vae_run.build_discriminator(config))
    step_fn = lambda state, batch, rng: vae_stage.vae_train_step(  # noqa: E731
        state, batch, rng, loss_fn=loss_fn)
    batch_size = config.vae.optim.batch_size
    rng = np.random.default_rng(0)
    images = dataset.images(rng.integers(0, dataset.num_images, num_seeds * batch_size))
    images = images.reshape(num_seeds, batch_size, *dataset.image_shape)
    keys = jax.random.split(jax.random.key(0), num_seeds)

    def create_for_rng(init_rng):
        return vae_run.state_factory(config, model, dataset.image_shape, init_rng)()

    if num_seeds == 1:
        state = jax.jit(lambda: create_for_rng(keys[0]))()
        step, batch, rngs = step_fn, {"image": images[0]}, keys[0]
    else:
        state = jax.jit(seed_stacking.stacked_state_factory(create_for_rng, keys))()
        step = seed_stacking.stacked_step(step_fn, execution)
        batch, rngs = {"image": images}, keys
    batch = jax.device_put(batch)
    start = time.perf_counter()
    compiled = jax.jit(step, donate_argnums=0).lower(state, batch, rngs).compile()
    compile_s = time.perf_counter() - start
    memory = compiled.memory_analysis()  # None where the backend does not say
    temp_mb = memory.temp_size_in_bytes / 1e6 if memory is not None else None
    times = []
    for _ in range(steps + 1):  # the first run also warms caches: dropped
        start = time.perf_counter()
        state, metrics = compiled(state, batch, rngs)
        jax.block_until_ready((state, metrics))
        times.append(time.perf_counter() - start)
    return {"compile_s": compile_s, "step_s": statistics.median(times[1:]),
            "temp_mb": temp_mb}


def temporaries(figures: dict) -> str:
    """", N MB of temporaries" for a step whose compiled memory is known, else ""."""
    return "" if figures["temp_mb"] is None else f", {figures['temp_mb']:.0f} MB of temporaries"


def main() -> None:
    parser = arguments.OneLineArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", default="configs/betavae_dsprites_synth.py:small")
    parser.add_argument("--seeds", type=arguments.positive_int, default=8)
    parser.add_argument("--steps", type=arguments.positive_int, default=10)
    parser.add_argument("--run_steps", type=arguments.positive_int, default=2000)
    parser.add_argument("--execution", default="auto", choices=seed_stacking.EXECUTIONS)
    records.add_record_flag(parser)
    args = parser.parse_args()
    recorder = records.script_recorder(args.record)
    config = load_config(args.config)
    execution = seed_stacking.resolve_execution(args.execution, jax.devices()[0].platform)
    single = time_step(config, 1, args.steps)
    stacked = time_step(config, args.seeds, args.steps, execution)
    sequential_s = args.seeds * (single["compile_s"] + args.run_steps * single["step_s"])
    stacked_s = stacked["compile_s"] + args.run_steps * stacked["step_s"]
    device = jax.devices()[0]
    print(f"{args.config} on {device.platform} ({device.device_kind}), "
          f"{len(jax.devices())} device(s)")
    print(f"S = 1:  compile {single['compile_s']:.1f} s, {single['step_s'] * 1e3:.1f} ms/step"
          f"{temporaries(single)}")
    print(f"S = {args.seeds} ({execution}):  compile {stacked['compile_s']:.1f} s, "
          f"{stacked['step_s'] * 1e3:.1f} ms/step "
          f"({stacked['step_s'] / args.seeds * 1e3:.1f} ms per model-step){temporaries(stacked)}")
    print(f"{args.run_steps}-step runs of {args.seeds} seeds: sequential {sequential_s:.0f} s, "
          f"stacked {stacked_s:.0f} s, {sequential_s / stacked_s:.2f}x less wall time")
    figures = {"config": args.config, "platform": device.platform,
               "seeds": args.seeds, "execution": execution, "single": single,
               "stacked": stacked, "run_steps": args.run_steps, "sequential_s": sequential_s,
               "stacked_s": stacked_s, "speedup": sequential_s / stacked_s}
    print(json.dumps(figures))
    records.write_or_exit(recorder, figures)


if __name__ == "__main__":
    jnp.zeros(())  # start the backend before timing anything
    cli.run_script(main)
