r"""What compiling each stage's first state costs (the program that draws the
initial parameters and optimiser state, run once per stage when a run starts) with
XLA's default options and with train/resume.py's FIRST_STATE_COMPILER_OPTIONS, and
whether both give the same bits.

  python benchmarks/first_state_compilation.py                  # every case
  python benchmarks/first_state_compilation.py --cases=betavae,ctvae

Each case builds its stages' first states from the config as a run does, through
each family's run format (`runs/<family>.py`: `build_model` and `state_factory` /
`create_state`; stacked seeds through `train/seed_stacking.stacked_state_factory`).
Each is compiled afresh twice (in-memory caches cleared, no compilation cache), with
XLA's defaults and with the chosen options, and run: compile seconds and run
milliseconds (of a second call) of each, and "same" when every array of the two
states is bitwise equal. The chosen options are this platform's
FIRST_STATE_COMPILER_OPTIONS, or on a platform without any (a GPU) CANDIDATE_OPTIONS,
the ones to try there; `--compiler_options='{"xla_backend_optimization_level": 0}'`
tries others. The last line is JSON with every figure.

Measured on 2 idle CPU cores (the table in docs/running.md): -O1 took the compile
from 2.5-14.4 s to 1.4-2.3 s per stage, every state bitwise the same; -O0 (tried with
--compiler_options) moved CT-VAE's states by a few ulps.
"""

from __future__ import annotations

import functools
import json
import platform
import sys
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # runs from a checkout without installing the package

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
import optax  # noqa: E402
from jax.sharding import Mesh  # noqa: E402

from causal_disent import cli  # noqa: E402
from causal_disent.data import registry  # noqa: E402
from causal_disent.runs import causalvae as causalvae_run  # noqa: E402
from causal_disent.runs import ct as ct_run  # noqa: E402
from causal_disent.runs import mcqvae as mcqvae_run  # noqa: E402
from causal_disent.runs import records  # noqa: E402
from causal_disent.runs import seeds as seeds_format  # noqa: E402
from causal_disent.runs import vae as vae_run  # noqa: E402
from causal_disent.train import resume, seed_stacking  # noqa: E402
from causal_disent.utils import arguments  # noqa: E402
from causal_disent.utils.sharding import make_data_mesh, replicated  # noqa: E402

CASES = {
    # name: (config, overrides)
    "betavae": ("configs/betavae_dsprites_synth.py:small", {}),
    "betavae_s8": ("configs/betavae_dsprites_synth.py:small", {"num_seeds": 8}),
    "factorvae": ("configs/factorvae_dsprites_synth.py:small", {}),
    "laddervae": ("configs/laddervae_dsprites_synth.py:small", {}),
    "ctvae": ("configs/ctvae_shapes3d.py:small", {}),
    "causalvae": ("configs/causalvae_pendulum.py:small", {}),
}
CANDIDATE_OPTIONS = {"xla_backend_optimization_level": 1}


def configured(case: str):
    """The case's config with its overrides."""
    path, overrides = CASES[case]
    config = cli.load_config_file(str(REPO / path), lock=False)
    config.update_from_flattened_dict(overrides)
    return config


def first_states(config) -> list[tuple[str, Callable, Mesh]]:
    """(stage, create_state, mesh) of each stage of `config`, in order: the program
    each stage's run compiles first, from the config's own seed and sizes (bitwise the
    run's state, tests/test_first_state_compilation.py). CausalVAE's A and Lagrangian
    start at their defaults here; a run that pre-trains A on the labels starts from
    that A instead: the same program with other constants."""
    mesh = make_data_mesh()
    dataset = registry.dataset_from_config(config.data)
    found = []
    for stage in config.stages:
        init_rng = jax.random.split(jax.random.key(config.seed))[0]
        if stage == "vae":
            model = vae_run.build_model(config, dataset)
            if seeds_format.num_seeds(config) == 1:
                create = vae_run.state_factory(config, model, dataset.image_shape, init_rng)
            else:  # the seeds' init keys as the stacked run draws them
                init_rngs = jnp.stack([jax.random.split(jax.random.key(seed))[0]
                                       for seed in seeds_format.run_seeds(config)])
                create = seed_stacking.stacked_state_factory(
                    lambda rng, model=model: vae_run.state_factory(
                        config, model, dataset.image_shape, rng)(), init_rngs)
        elif stage == "mcqvae":  # a schedule is not evaluated at init: any one serves
            create = functools.partial(
                mcqvae_run.create_state, mcqvae_run.build_model(config, dataset),
                dataset.image_shape, init_rng, optax.constant_schedule(0.0))
        elif stage == "ct":
            create = functools.partial(ct_run.create_state, ct_run.build_model(config, dataset),
                                       ct_run.stage_rngs(config)[0],
                                       optax.constant_schedule(0.0))
        elif stage == "causalvae":
            cfg = config.causalvae
            create = functools.partial(
                causalvae_run.create_state, causalvae_run.build_model(config, dataset),
                dataset.image_shape, init_rng, cfg.optim.learning_rate,
                cfg.objective.initial_penalty, max_grad_norm=cfg.optim.max_grad_norm)
        else:
            sys.exit(f"error: no first state known for stage {stage!r}: add it to "
                     f"first_states in {Path(__file__).name}")
        found.append((stage, create, mesh))
    return found


def compiled_and_run(create_state, mesh, options: dict | None):
    """(compile seconds, run seconds of a second call, the state on the host)."""
    jax.clear_caches()  # else the run's own compilation is reused
    lowered = jax.jit(create_state, out_shardings=replicated(mesh)).lower()
    started = time.perf_counter()
    compiled = lowered.compile(compiler_options=options)
    compile_seconds = time.perf_counter() - started
    jax.block_until_ready(compiled())
    started = time.perf_counter()
    state = jax.block_until_ready(compiled())
    return compile_seconds, time.perf_counter() - started, jax.device_get(state)


def bitwise_equal(a, b) -> bool:
    leaves_a, leaves_b = jax.tree.leaves(a), jax.tree.leaves(b)
    return len(leaves_a) == len(leaves_b) and all(
        np.asarray(x).tobytes() == np.asarray(y).tobytes() for x, y in zip(leaves_a, leaves_b))


def measure(case: str, options: dict) -> list[dict]:
    rows = []
    for stage, create_state, mesh in first_states(configured(case)):
        default = compiled_and_run(create_state, mesh, None)
        chosen = compiled_and_run(create_state, mesh, options)
        leaves = jax.tree.leaves(default[2].params)
        rows.append({"case": case, "stage": stage,
                     "parameters": int(sum(np.size(leaf) for leaf in leaves)),
                     "compile_seconds": [default[0], chosen[0]],
                     "run_ms": [default[1] * 1e3, chosen[1] * 1e3],
                     "bitwise_same": bitwise_equal(default[2], chosen[2])})
    return rows


def main() -> None:
    parser = arguments.OneLineArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", default=",".join(CASES))
    parser.add_argument("--compiler_options", default="",
                        help="JSON object of XLA options to compare with the defaults "
                             "(default: the platform's first-state options, else "
                             f"{json.dumps(CANDIDATE_OPTIONS)})")
    records.add_record_flag(parser)
    args = parser.parse_args()
    recorder = records.script_recorder(args.record)
    cases = [case.strip() for case in args.cases.split(",") if case.strip()]
    unknown = [case for case in cases if case not in CASES]
    if unknown:
        sys.exit(f"error: unknown case {unknown[0]!r}; known: {', '.join(CASES)}")
    try:
        options = json.loads(args.compiler_options) if args.compiler_options else None
    except json.JSONDecodeError as error:
        sys.exit(f"error: --compiler_options is not a JSON object ({error}); give e.g. "
                 f"--compiler_options='{json.dumps(CANDIDATE_OPTIONS)}'")
    if options is not None and not isinstance(options, dict):
        sys.exit(f"error: --compiler_options must be a JSON object, got {args.compiler_options}")
    jax.config.update("jax_enable_compilation_cache", False)
    device = jax.devices()[0]
    if options is None:
        options = resume.FIRST_STATE_COMPILER_OPTIONS.get(device.platform, CANDIDATE_OPTIONS)
    print(f"{platform.processor() or platform.machine()}, {device.platform} "
          f"({device.device_kind}), jax {jax.__version__}; chosen options {options}")
    print(f"{'case':11s} {'stage':9s} {'parameters':>11s}   compile s: {'default':>7s} "
          f"{'chosen':>7s}   run ms: {'default':>7s} {'chosen':>7s}   bits")
    rows = []
    for case in cases:
        for row in measure(case, options):
            rows.append(row)
            (c0, c1), (r0, r1) = row["compile_seconds"], row["run_ms"]
            print(f"{case:11s} {row['stage']:9s} {row['parameters']:11,d}   {'':11s}"
                  f"{c0:7.2f} {c1:7.2f}   {'':8s}{r0:7.1f} {r1:7.1f}   "
                  f"{'same' if row['bitwise_same'] else 'DIFFERENT'}", flush=True)
    figures = {"device": device.device_kind, "platform": device.platform,
               "options": options, "first_states": rows}
    print(json.dumps(figures))
    records.write_or_exit(recorder, figures)


if __name__ == "__main__":
    cli.run_script(main)
