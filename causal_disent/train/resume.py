"""Starting a stage fresh, resuming it, or skipping it when it is finished."""

from collections.abc import Callable
from pathlib import Path

import jax
from jax.sharding import Mesh

from causal_disent.runs.checkpoint import StageCheckpoints, placed_like
from causal_disent.runs.results import read_results
from causal_disent.utils import console, host_memory
from causal_disent.utils.sharding import replicated


# Compiler options of the program that makes a stage's first state, per platform.
# It runs once, and XLA:CPU's default optimisation of its random draws is most of a
# short run's setup; at LLVM's -O1 it compiles several times faster with the same bits
# (-O0 moves some initial weights by a few ulps). Other platforms keep XLA's defaults
# until measured there (launch/gpu_loop_benchmarks.sh), since the bits may move there
# too. Figures: docs/measured_choices.md.
FIRST_STATE_COMPILER_OPTIONS = {"cpu": {"xla_backend_optimization_level": 1}}


def fresh_state(create_state: Callable, mesh: Mesh, stage: str | None = None):
    """`create_state()` jitted with FIRST_STATE_COMPILER_OPTIONS for the platform of
    `mesh`'s devices, replicated over `mesh`. A process that compiles everything
    with the least optimisation (JAX_DISABLE_MOST_OPTIMIZATIONS, as the tests do)
    keeps that for this program too. Compiled ahead of its run, so that on a CPU its
    memory is held against the host's first (many stacked seeds can make a state
    larger than the host)."""
    options = FIRST_STATE_COMPILER_OPTIONS.get(mesh.devices.flat[0].platform)
    if options and jax.config.read("jax_disable_most_optimizations"):
        options = None
    jitted = jax.jit(create_state, out_shardings=replicated(mesh), compiler_options=options)
    return host_memory.compile_checked(jitted, (), "the model's first state", stage,
                                       field="num_seeds or the model's sizes")()


def start_or_resume(
    *,
    stage: str,
    workdir: Path,
    checkpoints: StageCheckpoints,
    create_state: Callable,
    mesh: Mesh,
    total_steps: int,
):
    """Returns (state, first_step, finished_results).

    The state is the latest checkpoint's, or a fresh one (`fresh_state`).
    `finished_results` is the stage's entry of results.json when the checkpoint is
    already at `total_steps` and was evaluated, else None.
    """
    state = checkpoints.restore_latest(placed_like(jax.eval_shape(create_state), mesh))
    if state is None:
        console.say(f"[{stage}] initialising the model (compiling its first state)...")
        state = fresh_state(create_state, mesh, stage)
        console.say(f"[{stage}] {sum(p.size for p in jax.tree.leaves(state.params)):,} "
                    f"parameters; training {total_steps:,} steps")
        return state, 0, None
    first_step = int(jax.device_get(state.step))
    finished = read_results(workdir).get(stage, {})
    if first_step >= total_steps and finished.get("steps") == first_step:
        return state, first_step, finished
    console.say(f"[{stage}] resuming from the checkpoint of step {first_step:,} of "
                f"{total_steps:,}", every_process=True)
    return state, first_step, None


def open_stage(
    *,
    stage: str,
    workdir: Path,
    signature: dict,
    train_config,
    create_state: Callable,
    mesh: Mesh,
    total_steps: int,
):
    """The stage's checkpoints (per `train_config`'s checkpoint_every_steps,
    min_seconds_between_checkpoints and max_checkpoints_to_keep) and
    `start_or_resume`'s (state, first_step, finished_results); the checkpoints are
    already closed when the stage is finished.
    """
    checkpoints = StageCheckpoints(
        workdir, stage, signature,
        save_every_steps=train_config.checkpoint_every_steps,
        max_to_keep=train_config.max_checkpoints_to_keep,
        min_seconds_between_saves=train_config.get("min_seconds_between_checkpoints", 0.0),
    )
    try:
        state, first_step, finished = start_or_resume(
            stage=stage, workdir=workdir, checkpoints=checkpoints, create_state=create_state,
            mesh=mesh, total_steps=total_steps,
        )
    except BaseException:  # nothing restorable, or a stop: the manager is released
        checkpoints.close()
        raise
    if finished is not None:
        checkpoints.close()
    return checkpoints, state, first_step, finished
