"""Starting a stage fresh, resuming it, or skipping it when it is finished."""

from collections.abc import Callable
from pathlib import Path

import jax
from jax.sharding import Mesh

from causal_disent.runs.checkpoint import StageCheckpoints
from causal_disent.runs.restore import placed_like
from causal_disent.runs.results import read_results
from causal_disent.utils import console
from causal_disent.utils.sharding import replicated


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

    The state is the latest checkpoint's, or a fresh one from `create_state` (jitted,
    replicated over `mesh`). `finished_results` is the stage's entry of results.json
    when the checkpoint is already at `total_steps` and was evaluated, else None.
    """
    state = checkpoints.restore_latest(placed_like(jax.eval_shape(create_state), mesh))
    if state is None:
        console.say(f"[{stage}] initialising the model (compiling its first state)...")
        state = jax.jit(create_state, out_shardings=replicated(mesh))()
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
    state, first_step, finished = start_or_resume(
        stage=stage, workdir=workdir, checkpoints=checkpoints, create_state=create_state,
        mesh=mesh, total_steps=total_steps,
    )
    if finished is not None:
        checkpoints.close()
    return checkpoints, state, first_step, finished
