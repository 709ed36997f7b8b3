"""The generic training loop shared by every stage."""

import dataclasses
import signal
from collections.abc import Callable, Iterable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from absl import logging

from causal_disent.runs.checkpoint import StageCheckpoints
from causal_disent.train import deadline as deadline_lib
from causal_disent.train import finite_guard, interrupts
from causal_disent.train.deadline import Deadline, TimeBudgetExhausted
from causal_disent.train.reporting import MetricsWriter, Progress

# How many calls of the step the host may dispatch ahead of the device. JAX runs them
# asynchronously, so unbounded the host runs up to a log interval ahead (it waits only
# to fetch the metrics), and a SIGTERM or the deadline takes effect that late. Two
# calls queued keep the device busy while the host prepares the next.
MAX_CALLS_AHEAD = 2


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
    batch_unit: str = "images",
    steps_per_call: int = 1,
    rows_of_call: Callable[[int, Any], list[tuple[int, dict]]] | None = None,
):
    """Runs `step_fn(state, local_batch, step) -> (state, metrics)` from `first_step`
    to `last_step`, logging and checkpointing on the way; returns the final state.
    `step_fn` places the host's batch on the devices and runs the jitted step
    (runner.compiled_step_fn).

    With `steps_per_call` = k > 1 (train/multi_step.py), each `step_fn` call runs
    the k steps after `step` on a batch of k stacked host batches, and
    `rows_of_call(step, fetched metrics)` turns its metrics into one row per step.
    Everything below then happens between calls: `first_step`, `last_step` and the
    log, checkpoint and evaluation intervals are multiples of k (multi_step checks).

    SIGTERM or SIGINT (preemption, Ctrl-C) lets the step in flight finish, saves it
    and raises interrupts.Interrupted (with several processes, all stop at the same
    step: they agree every `log_every_steps`); a rerun resumes there. The host stays
    at most MAX_CALLS_AHEAD calls ahead of the device, so that step comes soon.

    A non-finite metric or state stops the run with finite_guard.NonFiniteTraining
    before anything non-finite is saved (checked at log steps and before each save).

    Time budget: `deadline` (None: `deadline.current()`, the process's). Expired
    before the first step, it raises TimeBudgetExhausted at once and saves nothing
    (nothing happened since the last checkpoint). Expired after a step (checked every
    step; with several processes every `log_every_steps`, as process 0 decides), it
    writes the pending metrics, saves a checkpoint of that step, waits for it and
    raises TimeBudgetExhausted(stage, step). It never pauses at `last_step`: the
    stage finishes instead. Its pause step (`deadline.pause_at_step`) stops the stage
    in the same way after the call that reaches it (at once when the stage starts
    there or past it), with `at_pause_step` set.

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
    if first_step < last_step and deadline.step_reached(first_step):
        raise TimeBudgetExhausted(stage, first_step, last_step, deadline.elapsed_minutes(),
                                  trained=deadline.trained, at_pause_step=True)
    if deadline_lib.expired_on_every_host(deadline):
        raise TimeBudgetExhausted(stage, first_step, last_step, deadline.elapsed_minutes(),
                                  trained=deadline.trained)
    k = steps_per_call
    run = _Run(stage=stage, last_step=last_step, writer=writer, checkpoints=checkpoints,
               deadline=deadline, log_every_steps=log_every_steps,
               rows_of_call=rows_of_call or _one_row, learning_rate_fn=learning_rate_fn,
               evaluate_fn=evaluate_fn, evaluate_every_steps=evaluate_every_steps,
               progress=Progress(stage, last_step, global_batch_size, batch_unit),
               several_hosts=jax.process_count() > 1, steps_per_call=k)
    writer.discard_after(stage, first_step)
    run.evaluate_if_due(state, first_step)
    with interrupts.deferred():
        for step, local_batch in zip(range(first_step, last_step, k), local_batches):
            state = run.dispatch(step_fn, state, local_batch, step)
            step += k  # the step the state is at now
            if step == first_step + k:
                run.start_timing(state, step)
            run.log_if_due(step)
            run.save(state, step)
            run.evaluate_if_due(state, step)
            run.stop_if_signalled(state, step)
            run.pause_if_due(state, step)
        run.save(state, last_step, force=True)
        checkpoints.wait()
    return state


@dataclasses.dataclass
class _Run:
    """What `fit` does between its calls of the step, each check a method."""

    stage: str
    last_step: int
    writer: MetricsWriter
    checkpoints: StageCheckpoints
    deadline: Deadline
    log_every_steps: int
    rows_of_call: Callable[[int, Any], list[tuple[int, dict]]]
    learning_rate_fn: Callable | None
    evaluate_fn: Callable[[Any, int], None] | None
    evaluate_every_steps: int
    progress: Progress
    several_hosts: bool
    steps_per_call: int
    # (step before the call, its metrics) of the calls whose rows are not written yet.
    pending: list[tuple[int, Any]] = dataclasses.field(default_factory=list)

    @property
    def check_every(self) -> int:
        """Steps between checks of signals and of the time budget: agreeing across
        processes is a collective, too costly to run every call."""
        return self.log_every_steps if self.several_hosts else self.steps_per_call

    def dispatch(self, step_fn: Callable, state, local_batch: dict, step: int):
        """Runs the call from `step`, staying at most MAX_CALLS_AHEAD calls ahead of
        the device."""
        state, metrics = step_fn(state, local_batch, step)
        self.pending.append((step, metrics))
        if len(self.pending) > MAX_CALLS_AHEAD:
            jax.block_until_ready(self.pending[-1 - MAX_CALLS_AHEAD][1])
        return state

    def start_timing(self, state, step: int) -> None:
        """After the first call: compilation ends here, so rates start now."""
        self.deadline.trained = True
        jax.block_until_ready(state)
        finite_guard.compile_state_check(state)  # the saves' check, too
        self.progress.start_timing(step)
        interrupts.step_finished()

    def log_if_due(self, step: int) -> None:
        if step % self.log_every_steps == 0 or step == self.last_step:
            rows, self.pending = self.fetched(self.pending), []
            self.writer.write(self.stage, rows)
            self.progress.log(*rows[-1])

    def fetched(self, pending: list[tuple[int, Any]]) -> list[tuple[int, dict]]:
        """The rows on the host, checked: a non-finite one is written (for the
        record) with those before it, then stops the run."""
        calls = jax.device_get(pending)  # one transfer for every pending call
        rows = [row for step, metrics in calls
                for row in self.rows_of_call(step, _as_python(metrics))]
        rows = _with_learning_rates(rows, self.learning_rate_fn)
        bad = finite_guard.first_non_finite(rows)
        if bad is not None:
            self.writer.write(self.stage, [row for row in rows if row[0] <= bad[0]])
            self.writer.flush()
            raise finite_guard.NonFiniteTraining(self.stage, *bad,
                                                 self.checkpoints.latest_path())
        return rows

    def save(self, state, step: int, *, force: bool = False) -> None:
        """Saves `state` at `step` when due (or `force`), after checking the rows not
        yet written and the state itself."""
        if not (force or self.checkpoints.due(step)):
            return
        self.fetched(self.pending)
        self.writer.flush()  # the rows of the steps this checkpoint holds are on disk first
        if not finite_guard.state_is_finite(state):
            raise finite_guard.NonFiniteTraining(
                self.stage, step, "a parameter or optimiser value is not finite",
                self.checkpoints.latest_path())
        self.checkpoints.save(state, step, force=True)

    def evaluate_if_due(self, state, step: int) -> None:
        if (self.evaluate_fn is not None and self.evaluate_every_steps > 0
                and step % self.evaluate_every_steps == 0 and step < self.last_step):
            self.writer.flush()  # the curve point's row follows its step's training rows
            self.evaluate_fn(state, step)

    def stop_if_signalled(self, state, step: int) -> None:
        if not (step % self.check_every == 0 or step == self.last_step):
            return
        signal_number = interrupts.requested(on_every_host=self.several_hosts)
        if signal_number is not None:
            logging.warning("[%s] %s received: saving step %d and stopping", self.stage,
                            signal.Signals(signal_number).name, step)
            self._stop(state, step)
            raise interrupts.Interrupted(signal_number, self.stage, step)

    def pause_if_due(self, state, step: int) -> None:
        """Stops at the deadline's pause step or when the time budget is spent."""
        at_pause_step = step < self.last_step and self.deadline.step_reached(step)
        if at_pause_step or (step < self.last_step and step % self.check_every == 0
                             and deadline_lib.expired_on_every_host(self.deadline)):
            logging.warning("[%s] %s; saving step %d", self.stage,
                            "pause step reached" if at_pause_step else
                            f"time budget of {self.deadline.minutes:g} minutes spent", step)
            self._stop(state, step)
            self.checkpoints.close()  # the stage ends here
            raise TimeBudgetExhausted(self.stage, step, self.last_step,
                                      self.deadline.elapsed_minutes(),
                                      at_pause_step=at_pause_step)

    def _stop(self, state, step: int) -> None:
        """Writes the pending rows and waits for a checkpoint of `step`."""
        rows = self.fetched(self.pending)
        self.writer.write(self.stage, rows)
        if rows:
            self.progress.log(*rows[-1])
        self.pending = []
        self.save(state, step, force=True)
        self.checkpoints.wait()


def _one_row(step: int, metrics: dict) -> list[tuple[int, dict]]:
    """The row of a call of one step from `step`."""
    return [(step + 1, metrics)]


def _as_python(metrics: dict) -> dict:
    """A call's fetched metrics as Python numbers and lists: converted once per array
    here, each row's values are then cheap to check and write on the writer's thread,
    which otherwise holds the interpreter lock while this thread waits for it."""
    return {name: value.tolist() if isinstance(value, np.ndarray)
            and value.dtype.kind in "biuf" else value
            for name, value in metrics.items()}


def _with_learning_rates(rows: list[tuple[int, dict]], schedule: Callable | None):
    """Adds each row's learning rate, from one vectorised call of the optax schedule
    at log time (a per-step host call would wait on the device every step)."""
    if schedule is None or not rows:
        return rows
    # Row `s` holds the metrics of the update that used the rate of step s − 1.
    rates = np.asarray(jax.vmap(schedule)(jnp.array([step - 1 for step, _ in rows])))
    return [(step, {**metrics, "learning_rate": float(rate)})
            for (step, metrics), rate in zip(rows, rates)]
