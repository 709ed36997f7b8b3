"""The generic training loop shared by every stage."""

from collections.abc import Callable, Iterable

import jax
import jax.numpy as jnp
import numpy as np
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
    learning_rate_fn: Callable | None = None,  # an optax schedule of the step
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
            pending.append((step + 1, metrics))
            if step == first_step:
                jax.block_until_ready(state)  # compilation ends here; rates start now
                progress.start_timing(step + 1)
            if (step + 1) % log_every_steps == 0 or step + 1 == last_step:
                rows = _with_learning_rates(jax.device_get(pending), learning_rate_fn)
                writer.write(stage, rows)
                progress.log(*rows[-1])
                pending = []
            checkpoints.save(state, step + 1)
    except KeyboardInterrupt:
        logging.warning("[%s] interrupted; saving a checkpoint before exiting", stage)
        writer.write(stage, _with_learning_rates(jax.device_get(pending), learning_rate_fn))
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


def _with_learning_rates(rows: list[tuple[int, dict]], schedule: Callable | None):
    """Adds each row's learning rate, from one vectorised call of the optax schedule
    at log time (a per-step host call would wait on the device every step)."""
    if schedule is None or not rows:
        return rows
    # Row `s` holds the metrics of the update that used the rate of step s − 1.
    rates = np.asarray(jax.vmap(schedule)(jnp.array([step - 1 for step, _ in rows])))
    return [(step, {**metrics, "learning_rate": float(rate)})
            for (step, metrics), rate in zip(rows, rates)]
