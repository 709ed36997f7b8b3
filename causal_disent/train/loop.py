"""The generic training loop shared by every stage."""

from collections.abc import Callable, Iterable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from absl import logging

from causal_disent.runs.checkpoint import StageCheckpoints
from causal_disent.train import deadline as deadline_lib
from causal_disent.train.deadline import Deadline, TimeBudgetExhausted
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
    deadline: Deadline | None = None,
    evaluate_every_steps: int = 0,
    evaluate_fn: Callable[[Any, int], None] | None = None,
):
    """Runs `step_fn(state, local_batch, step) -> (state, metrics)` from `first_step`
    to `last_step`, logging and checkpointing on the way; returns the final state.
    `step_fn` places the host's batch on the devices and runs the jitted step
    (runner.compiled_step_fn).

    An interrupt (Ctrl-C, preemption's SIGINT) saves a checkpoint of the last
    completed step before it propagates, so a rerun resumes there.

    Time budget: `deadline` (None: `deadline.current()`, the process's). Expired
    before the first step, it raises TimeBudgetExhausted at once and saves nothing
    (nothing happened since the last checkpoint). Expired after a step (checked every
    step; with several processes every `log_every_steps`, as process 0 decides), it
    writes the pending metrics, saves a checkpoint of that step, waits for it and
    raises TimeBudgetExhausted(stage, step). It never pauses at `last_step`: the
    stage finishes instead.

    Periodic evaluation: `evaluate_fn(state, step)` runs on every process, after
    that step's checkpoint logic, at each step of [first_step, last_step) that is a
    multiple of `evaluate_every_steps` (> 0). That includes step 0 (the untrained
    baseline) and the first step of a resumed run, because the interrupted run may
    have stopped between saving that checkpoint and finishing its evaluation; not
    `last_step`, which the stage evaluates itself. `evaluate_fn` must be
    deterministic in (state.params, step) (fixed data and random keys), so that a
    resumed run records the same curve as an uninterrupted one and a step evaluated
    twice gets the same values; and it must be done with `state` when it returns,
    since the next step donates its buffers.
    """
    deadline = deadline if deadline is not None else deadline_lib.current()
    if deadline_lib.expired_on_every_host(deadline):
        raise TimeBudgetExhausted(stage, first_step, last_step, deadline.elapsed_minutes())
    # Agreeing across processes is a collective, too costly to run every step.
    check_deadline_every = 1 if jax.process_count() == 1 else log_every_steps

    def evaluate_if_due(state, step: int) -> None:
        if (evaluate_fn is not None and evaluate_every_steps > 0
                and step % evaluate_every_steps == 0 and step < last_step):
            evaluate_fn(state, step)

    def flush(pending: list[tuple[int, dict]]) -> list[tuple[int, dict]]:
        rows = _with_learning_rates(jax.device_get(pending), learning_rate_fn)
        writer.write(stage, rows)
        return rows

    progress = Progress(stage, last_step, global_batch_size)
    pending: list[tuple[int, dict]] = []
    completed = first_step  # the step `state` is at
    evaluate_if_due(state, first_step)
    try:
        for step, local_batch in zip(range(first_step, last_step), local_batches):
            state, metrics = step_fn(state, local_batch, step)
            completed = step + 1
            pending.append((step + 1, metrics))
            if step == first_step:
                jax.block_until_ready(state)  # compilation ends here; rates start now
                progress.start_timing(step + 1)
            if (step + 1) % log_every_steps == 0 or step + 1 == last_step:
                progress.log(*flush(pending)[-1])
                pending = []
            checkpoints.save(state, step + 1)
            evaluate_if_due(state, step + 1)
            if (step + 1 < last_step and (step + 1) % check_deadline_every == 0
                    and deadline_lib.expired_on_every_host(deadline)):
                rows, pending = flush(pending), []
                if rows:
                    progress.log(*rows[-1])
                _pause(stage, state, step + 1, last_step, checkpoints, deadline)
    except KeyboardInterrupt:
        logging.warning("[%s] interrupted; saving a checkpoint before exiting", stage)
        flush(pending)
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


def _pause(stage: str, state, step: int, last_step: int, checkpoints: StageCheckpoints,
           deadline: Deadline):
    """Checkpoints `state` (at `step`), waits for the write, and raises
    TimeBudgetExhausted so that the process can exit and a rerun resume here."""
    logging.warning("[%s] time budget of %g minutes spent; saving step %d", stage,
                    deadline.minutes, step)
    checkpoints.save(state, step, force=True)
    checkpoints.close()  # waits for the write; the stage ends here
    raise TimeBudgetExhausted(stage, step, last_step, deadline.elapsed_minutes())


def _with_learning_rates(rows: list[tuple[int, dict]], schedule: Callable | None):
    """Adds each row's learning rate, from one vectorised call of the optax schedule
    at log time (a per-step host call would wait on the device every step)."""
    if schedule is None or not rows:
        return rows
    # Row `s` holds the metrics of the update that used the rate of step s − 1.
    rates = np.asarray(jax.vmap(schedule)(jnp.array([step - 1 for step, _ in rows])))
    return [(step, {**metrics, "learning_rate": float(rate)})
            for (step, metrics), rate in zip(rows, rates)]
