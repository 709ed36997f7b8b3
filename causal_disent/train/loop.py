"""The generic training loop shared by every stage."""

from collections.abc import Callable, Iterable

import jax
from absl import logging
from causal_disent.train.checkpoint import StageCheckpoints
from causal_disent.train.reporting import MetricsWriter, Progress


def fit(
    *,
    stage: str,
    state,
    step_fn: Callable,
    local_batches: Iterable[dict],
    first_step: int,
    last_step: int,
    global_batch_size: int,
    checkpoints: StageCheckpoints,
    writer: MetricsWriter,
    log_every_steps: int,
    learning_rate_fn: Callable[[int], float] | None = None,
):
    """Runs `step_fn(state, local_batch) -> (state, metrics)` from `first_step` to
    `last_step`, logging and checkpointing on the way; returns the final state.
    `step_fn` places the host's batch on the devices and runs the jitted step.

    An interrupt (Ctrl-C, preemption's SIGINT) saves a checkpoint of the last
    completed step before it propagates, so a rerun resumes there.
    """
    progress = Progress(stage, last_step, global_batch_size)
    pending: list[tuple[int, dict]] = []
    completed = first_step  # the step `state` is at
    try:
        for step, local_batch in zip(range(first_step, last_step), local_batches):
            state, metrics = step_fn(state, local_batch)
            completed = step + 1
            if learning_rate_fn is not None:
                metrics["learning_rate"] = learning_rate_fn(step)
            pending.append((step + 1, metrics))
            if step == first_step:
                jax.block_until_ready(state)  # compilation ends here; rates start now
                progress.start_timing(step + 1)
            if (step + 1) % log_every_steps == 0 or step + 1 == last_step:
                rows = jax.device_get(pending)
                writer.write(stage, rows)
                progress.log(*rows[-1])
                pending = []
            checkpoints.save(state, step + 1)
    except KeyboardInterrupt:
        logging.warning("[%s] interrupted; saving a checkpoint before exiting", stage)
        writer.write(stage, jax.device_get(pending))
        try:
            checkpoints.save(state, completed, force=True)
            checkpoints.wait()
        except Exception as error:  # e.g. interrupted mid-step: buffers were donated
            logging.warning("[%s] no checkpoint saved (%s); a rerun resumes from the "
                            "last periodic one", stage, error)
        raise
    checkpoints.save(state, last_step, force=True)
    checkpoints.wait()
    return state
