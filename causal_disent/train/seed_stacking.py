"""Many seeds in one compiled step: `config.num_seeds` = S independent models of one
config trained as one stacked train state (parameters, optimiser state and random
keys carry a leading seed axis; the step counter is shared), by `jax.vmap` of the
stage's own step, each seed with its own data order.

Seed k of a run with config.seed = s is the run with config.seed = s + k: the same
initialisation, batches and randomness, so its parameters match that run's
sequential training up to floating-point summation order (tests/train/
test_seed_stacking.py). Large disentanglement studies train dozens of seeds per
setting (Locatello et al., "Challenging Common Assumptions in the Unsupervised
Learning of Disentangled Representations", ICML 2019, §5: 50 per model and
hyperparameter); stacking them fills an accelerator that one small model leaves idle.

The seed axis is the batch axis the runner shards over the devices: each device
trains num_seeds / devices whole models, so num_seeds must be a multiple of the
number of devices. Where each model's run is written: runs/seeds.py.
"""

import shutil
from collections.abc import Callable
from pathlib import Path

import jax
import jax.numpy as jnp
import ml_collections
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh

from causal_disent.models.conv import convolutions_as_matmuls
from causal_disent.runs.checkpoint import StageCheckpoints, checkpoint_dir
from causal_disent.runs.config_file import write_config
from causal_disent.runs.seeds import num_seeds


def check_num_seeds(config: ml_collections.ConfigDict, mesh: Mesh) -> None:
    """ValueError naming `num_seeds` unless it is >= 1 and, above 1, a multiple of the
    mesh's devices (each device trains whole models), or `seed_execution` if unknown."""
    resolve_execution(config.get("seed_execution", "auto"), "cpu")
    count = num_seeds(config)
    if count < 1:
        raise ValueError(f"num_seeds must be >= 1, got {count}")
    if count > 1 and count % mesh.size:
        multiple = mesh.size * -(-count // mesh.size)
        raise ValueError(
            f"num_seeds {count} must be a multiple of the {mesh.size} devices: each device "
            f"trains num_seeds / devices whole models; use e.g. {multiple}")


def state_axes(state):
    """The vmap axes of a stacked TrainState: 0 for params and optimiser state, None
    (shared) for the step counter."""
    return state.replace(step=None, params=0, opt_state=0)


def stacked_state_factory(create_for_rng: Callable, init_rngs: jax.Array) -> Callable:
    """() -> the stacked fresh state: `create_for_rng(rng)` for each of `init_rngs`
    [S], with one shared step counter (jittable)."""

    def create():
        states = jax.vmap(create_for_rng)(init_rngs)
        return states.replace(step=jnp.zeros((), jnp.int32))

    return create


# How the S models' steps run inside the one compiled step: "vmap" batches them (each
# layer one op over all seeds: what fills an accelerator); "unroll" traces the step
# once per seed (S independent op chains, compile time growing with S). XLA turns a
# vmapped convolution (and its gradients) into a grouped one that runs several times
# slower than S plain ones on CPU (benchmarks/seed_stacking.py), so "auto" unrolls on
# CPU and vmaps elsewhere. "vmap_matmul" vmaps with every convolution of
# models/conv.py traced as a matmul over image patches (`convolutions_as_matmuls`),
# so that the seeds' convolutions become batched matmuls instead of grouped ones.
EXECUTIONS = ("auto", "vmap", "unroll", "vmap_matmul")


def resolve_execution(execution: str, platform: str) -> str:
    """"vmap", "unroll" or "vmap_matmul" for config.seed_execution on devices of
    `platform`."""
    if execution not in EXECUTIONS:
        raise ValueError(f"seed_execution must be one of {EXECUTIONS}, got {execution!r}")
    if execution == "auto":
        return "unroll" if platform == "cpu" else "vmap"
    return execution


def unrolled_copies_note(num_seeds: int, execution: str, steps_per_call: int,
                         steps_unrolled: bool) -> str | None:
    """A console line for a call that unrolls both the seeds and its k steps, None
    otherwise. Such a call holds S × k copies of the step, and XLA's compile time
    grows faster than the copies (docs/measured_choices.md), while on a CPU k > 1
    gains next to nothing."""
    if execution != "unroll" or not steps_unrolled or steps_per_call == 1 or num_seeds == 1:
        return None
    return (f"note: each call holds {num_seeds * steps_per_call} copies of the step "
            f"({num_seeds} seeds × {steps_per_call} steps, both unrolled); compiling it "
            f"can take minutes (8 × 10 at β-VAE :small: 198 s on 2 CPU cores, 23 s at "
            f"steps_per_call = 1). On a CPU, steps_per_call = 1 trains as fast and "
            f"starts sooner")


def stacked_step(step_fn: Callable, execution: str = "vmap") -> Callable:
    """(stacked state, batch [S, B, ...], rngs [S]) -> (stacked state, metrics): the
    stage's `step_fn(state, batch, rng)` on each seed, by `execution` (EXECUTIONS but
    "auto"; the same numbers up to float rounding). Metrics are the mean over seeds
    of each, plus "<name>_per_seed" [S] for each scalar metric."""
    if execution not in EXECUTIONS[1:]:
        raise ValueError(f"execution must be one of {EXECUTIONS[1:]}, got {execution!r}")

    def vmapped(state, batch: dict, rngs: jax.Array):
        axes = state_axes(state)
        return jax.vmap(step_fn, in_axes=(axes, 0, 0), out_axes=(axes, 0))(state, batch, rngs)

    def vmapped_as_matmuls(state, batch: dict, rngs: jax.Array):
        with convolutions_as_matmuls():  # while the step is traced
            return vmapped(state, batch, rngs)

    def unrolled(state, batch: dict, rngs: jax.Array):
        outputs = [step_fn(seed_state(state, k), jax.tree.map(lambda x: x[k], batch), rngs[k])
                   for k in range(rngs.shape[0])]
        states, metrics = zip(*outputs)
        stacked = jax.tree.map(lambda *leaves: jnp.stack(leaves), *states)
        return (stacked.replace(step=states[0].step),
                jax.tree.map(lambda *leaves: jnp.stack(leaves), *metrics))

    run_seeds = {"vmap": vmapped, "unroll": unrolled,
                 "vmap_matmul": vmapped_as_matmuls}[execution]

    def step(state, batch: dict, rngs: jax.Array):
        state, metrics = run_seeds(state, batch, rngs)
        return state, seed_metrics(metrics)

    return step


def seed_metrics(metrics: dict) -> dict:
    """Per-seed metrics [S, ...] -> their means over seeds, and each scalar metric's
    values per seed as "<name>_per_seed" [S]."""
    means = {name: jnp.mean(value, axis=0) for name, value in metrics.items()}
    per_seed = {f"{name}_per_seed": value for name, value in metrics.items()
                if value.ndim == 1}
    return {**means, **per_seed}


def seed_state(state, index: int):
    """Model `index`'s own TrainState out of the stacked one."""
    params, opt_state = _take((state.params, state.opt_state), index)
    return state.replace(params=params, opt_state=opt_state)


@jax.jit
def _take(tree, index):
    """Every leaf's row `index`: one compiled program whatever the seed (indexing
    leaf by leaf outside jit would compile an operation per leaf shape)."""
    return jax.tree.map(lambda leaf: leaf[index], tree)


def write_seed_run(single_state, config: ml_collections.ConfigDict, stage: str,
                   signature: dict, workdir: Path) -> StageCheckpoints:
    """Writes one model of a stacked run (`seed_state`'s `single_state`) as a
    finished run of its own in `workdir`: its config (its seed, num_seeds = 1) and a
    checkpoint of its state under the single-seed `signature`, so that every tool
    that reads a run (evaluate, figures) reads it as one trained alone. Its results
    are the caller's. The checkpoint is written in the background: the caller closes
    the returned StageCheckpoints, which waits for it, after evaluating the seed.

    A checkpoint already there (the run evaluated again, --mode=eval) is replaced
    whole: it is an export of the stacked state, which may mend one that became
    unreadable."""
    workdir.mkdir(parents=True, exist_ok=True)
    if jax.process_index() == 0:
        write_config(workdir, config)
        shutil.rmtree(checkpoint_dir(workdir, stage), ignore_errors=True)
    if jax.process_count() > 1:  # the others open it once it is gone
        multihost_utils.sync_global_devices(f"export {workdir}")
    checkpoints = StageCheckpoints(workdir, stage, signature, save_every_steps=1,
                                   max_to_keep=1)
    checkpoints.save(single_state, int(jax.device_get(single_state.step)), force=True)
    return checkpoints


def close_all(saving: list[StageCheckpoints]) -> None:
    """Closes every seed's checkpoints (waiting for their writes), then raises the
    first failure (a full disk): one seed's failed write does not leave the others'
    writes unfinished."""
    failures = []
    for checkpoints in saving:
        try:
            checkpoints.close()
        except Exception as error:  # noqa: BLE001 - raised below, after the others
            failures.append(error)
    if failures:
        raise failures[0]


def summarise_over_seeds(per_seed: list[dict]) -> dict:
    """{name: {"mean", "std", "values"}} over the seeds' results for every numeric
    scalar they share, those of nested sections under dotted names (e.g.
    "action_retrieval.linear_probe.action_accuracy"). The std is the sample std
    (ddof 1), as `summarize` reports it over the seeds' cards; 0 for one seed."""
    flat = [_numeric_scalars(results) for results in per_seed]
    summary = {}
    for name in flat[0]:
        if not all(name in results for results in flat):
            continue
        values = [results[name] for results in flat]
        spread = float(np.std(values, ddof=1)) if len(values) > 1 else 0.0
        summary[name] = {"mean": float(np.mean(values)), "std": spread, "values": values}
    return summary


def _numeric_scalars(results: dict, prefix: str = "") -> dict[str, float]:
    """The numeric scalars of `results` and of its nested dicts, by dotted name."""
    found = {}
    for name, value in results.items():
        if isinstance(value, dict):
            found.update(_numeric_scalars(value, f"{prefix}{name}."))
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            found[f"{prefix}{name}"] = float(value)
    return found
