"""The one stage runner: every stage (mcqvae, ct, causalvae, and any new model) is a
`Stage` value, and `run_stage` does the rest the same way for all of them:

  open or resume the checkpoint -> return the saved results if the stage is done ->
  compile the step(s) with their shardings -> run the loop (logging, checkpoints,
  time budget, learning-curve points) -> close -> the final curve point -> the
  stage's evaluation -> WORKDIR/results.json -> the stage's figures (also logged to
  TensorBoard with the final scores).

A finished stage can be visited again without training (`mode`): "eval" restores its
final checkpoint, evaluates it again, records the results and redraws the figures;
"figures" only redraws the figures from the checkpoint and the recorded results.

A stage supplies only what differs: its state, its step function(s), its batches,
its evaluation. A stage with several step functions (CT-VAE stage 2's modes) gives
a schedule `mode_of_step(step)`; the runner picks the step function, so the mode
never travels with the data.
"""

from __future__ import annotations

import dataclasses
import functools
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import jax
import ml_collections
import numpy as np
from absl import logging
from jax.sharding import Mesh

from causal_disent.data import pipeline
from causal_disent.runs import tensorboard
from causal_disent.runs.checkpoint import StageCheckpoints, placed_like
from causal_disent.runs.results import read_results, update_results
from causal_disent.train import multi_step, resume
from causal_disent.train.device_data import DeviceData, place
from causal_disent.train.loop import fit
from causal_disent.train.reporting import MetricsWriter
from causal_disent.utils import console, host_memory
from causal_disent.utils.sharding import batch_sharded, global_batch, replicated

# (state, global batch, rng) -> (state, metrics); the runner jits it.
StepFn = Callable[[Any, dict, jax.Array], tuple[Any, dict]]


@dataclasses.dataclass(frozen=True)
class Training:
    """How a stage trains from a given first step (built only when steps remain)."""

    steps: dict[str, StepFn]  # one entry, or one per mode
    batches: Iterable[dict]  # this host's batches, from the first step on
    rng: jax.Array  # each step's randomness is derived from it and the step
    mode_of_step: Callable[[int], str] | None = None  # needed with several steps
    # Turns the assembled global batch into the step's input (e.g. images -> codes).
    prepare_batch: Callable[[dict], dict] | None = None
    # The training data kept on the devices; its batches replace `batches`.
    device_data: DeviceData | None = None
    # False where the steps cannot run several to a call (train.steps_per_call "auto"
    # then takes 1; a k > 1 set by hand is refused by the stage).
    several_steps_per_call: bool = True


@dataclasses.dataclass(frozen=True)
class Plan:
    """What a stage does from its first step: train (None when already at the last
    step) and record learning-curve points (None: no curve)."""

    training: Training | None
    curve_point: Callable[[Any, int], None] | None = None  # (state, step), deterministic


@dataclasses.dataclass(frozen=True)
class Stage:
    """What differs between stages."""

    name: str
    signature: dict  # what its checkpoints depend on (runs.checkpoint)
    train_config: ml_collections.ConfigDict  # checkpoint, log and curve intervals
    create_state: Callable[[], Any]  # jittable; the fresh state
    total_steps: int
    global_batch_size: int
    plan: Callable[[int], Plan]  # first step -> Plan
    finish: Callable[[Any], dict]  # trained state -> results (test-split evaluation)
    learning_rate_fn: Callable | None = None  # an optax schedule, logged per row
    # (trained state, its results) -> None: writes WORKDIR/figures (called on process 0).
    draw_figures: Callable[[Any, dict], None] | None = None
    batch_unit: str = "images"  # what one of global_batch_size is, for the progress line


MODES = ("train", "eval", "figures")


def run_stage(stage: Stage, workdir: Path, mesh: Mesh, mode: str = "train") -> dict:
    """Trains (or resumes) `stage`, evaluates it, records its results and draws its
    figures; returns the results. A finished stage returns its recorded results
    without recompiling. `mode` "eval" or "figures" visits a finished stage again
    without training (module docstring); the caller checks it is finished
    (stages.check_finished)."""
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
    if mode != "train":
        return _revisit(stage, workdir, mesh, mode)
    cfg = stage.train_config
    checkpoints, state, first_step, finished = resume.open_stage(
        stage=stage.name, workdir=workdir, signature=stage.signature, train_config=cfg,
        create_state=stage.create_state, mesh=mesh, total_steps=stage.total_steps,
    )
    if finished is not None:
        console.say(f"[{stage.name}] already finished at step {first_step}; skipped")
        return finished
    plan = stage.plan(first_step)
    eval_every_steps = cfg.get("eval_every_steps", 0)
    writer = MetricsWriter(workdir)
    try:
        state = _train(stage, state, first_step, plan, eval_every_steps, mesh, writer,
                       checkpoints)
    except BaseException:
        # A stop (signal, time budget, non-finite values, a failure): what was
        # written and saved is finished and released before the error goes on.
        _release(writer, checkpoints, workdir, stage.name)
        raise
    writer.close()
    checkpoints.close()
    final_step = int(jax.device_get(state.step))
    if plan.curve_point is not None and eval_every_steps > 0:
        plan.curve_point(state, final_step)  # `fit` leaves the last step to the stage
    return _evaluate(stage, state, final_step, workdir)


def _train(stage: Stage, state, first_step: int, plan, eval_every_steps: int, mesh: Mesh,
           writer: MetricsWriter, checkpoints) -> Any:
    """Trains `stage` from `first_step` to its last step (`fit`), or, when it has none
    left, drops what an attempt killed after its last checkpoint logged past it."""
    cfg = stage.train_config
    if plan.training is not None and first_step < stage.total_steps:
        platform, several = platform_of(mesh), plan.training.several_steps_per_call
        k = multi_step.steps_per_call(cfg, platform, stage.total_steps, first_step, several)
        shortfall = multi_step.auto_shortfall(cfg, platform, stage.total_steps, first_step,
                                              several, k)
        if shortfall is not None:
            console.say(f"[{stage.name}] {shortfall}")
        elif cfg.get("steps_per_call", 1) == multi_step.AUTO:
            logging.info("[%s] %d step%s a call (train.steps_per_call = 0: auto, on %s)",
                         stage.name, k, "s" * (k > 1), platform)
        multi_step.check_total_steps(stage.name, stage.total_steps, first_step, k)
        step_fn, rows_of_call = compiled_step_fn(plan.training, mesh, stage.name, k,
                                                 cfg.get("unroll_call", "auto"))
        training = plan.training
        batches = training.batches if training.device_data is None else training.device_data.batches
        state = fit(
            stage=stage.name, state=state, step_fn=step_fn,
            # Stacking k batches costs a copy of each: done in a thread of its own.
            local_batches=(batches if k == 1
                           else pipeline.prefetched(multi_step.grouped(batches, k), 2)),
            steps_per_call=k, rows_of_call=rows_of_call,
            first_step=first_step, last_step=stage.total_steps,
            global_batch_size=stage.global_batch_size, checkpoints=checkpoints,
            writer=writer, log_every_steps=cfg.log_every_steps,
            learning_rate_fn=stage.learning_rate_fn,
            evaluate_every_steps=eval_every_steps, evaluate_fn=plan.curve_point,
            batch_unit=stage.batch_unit,
        )
    else:  # killed after its last checkpoint: drop what that attempt logged past it
        writer.discard_after(stage.name, first_step)
    return state


def platform_of(mesh: Mesh) -> str:
    """"cpu", "gpu" or "tpu": what the loop's "auto" settings choose by."""
    return mesh.devices.flat[0].platform


def _release(writer: MetricsWriter, checkpoints, workdir: Path, stage: str) -> None:
    """Closes the stage's metrics writer, checkpoints and event file on the way out
    of a stop; a failure here is logged, not raised over the stop's own error."""
    for close in (writer.close, checkpoints.close,
                  lambda: tensorboard.close(workdir, stage)):
        try:
            close()
        except Exception as failure:  # noqa: BLE001 - the stop's error matters more
            logging.warning("[%s] while stopping: %s", stage, failure)


def _evaluate(stage: Stage, state, step: int, workdir: Path) -> dict:
    """The stage's evaluation of `state`, recorded in results.json, then its figures."""
    console.say(f"[{stage.name}] evaluating step {step} on the test split...")
    results = stage.finish(state)
    results["steps"] = step
    update_results(workdir, stage.name, results)
    tensorboard.add_scalars(workdir, stage.name, step, results, prefix="results")
    _draw(stage, state, results, workdir, step)
    return results


def _draw(stage: Stage, state, results: dict, workdir: Path, step: int) -> None:
    """The stage's figures (process 0), each also logged to TensorBoard at `step`."""
    if stage.draw_figures is not None and jax.process_index() == 0:
        stage.draw_figures(state, results)
        tensorboard.add_figures(workdir, stage.name, step,
                                sorted((workdir / "figures").glob(f"{stage.name}_*.png")))
    tensorboard.close(workdir, stage.name)


def _revisit(stage: Stage, workdir: Path, mesh: Mesh, mode: str) -> dict:
    """"eval" or "figures" on the finished stage's last checkpoint (read, never moved)."""
    checkpoints = StageCheckpoints(workdir, stage.name, stage.signature, 1, 1, read_only=True)
    try:
        state = checkpoints.restore_latest(
            placed_like(jax.eval_shape(stage.create_state), mesh))
    finally:
        checkpoints.close()
    step = int(jax.device_get(state.step))
    if mode == "eval":
        return _evaluate(stage, state, step, workdir)
    results = read_results(workdir)[stage.name]
    console.say(f"[{stage.name}] drawing the figures of step {step}")
    _draw(stage, state, results, workdir, step)
    return results


def compiled_step_fn(training: Training, mesh: Mesh, stage: str = "",
                     steps_per_call: int = 1,
                     unroll_call: str = "auto") -> tuple[Callable, Callable | None]:
    """(step_fn, rows_of_call) for `loop.fit` (`CompiledSteps`); rows_of_call is None
    for one step a call: one row a call."""
    steps = CompiledSteps(training, mesh, stage, steps_per_call, unroll_call)
    return steps, (steps.rows_of_call if steps.steps_per_call > 1 else None)


class CompiledSteps:
    """A stage's jitted step(s) as `loop.fit` calls them: `(state, this host's batch,
    step) -> (state, metrics)` runs the step of the step's mode, batch sharded and
    state replicated over `mesh`, state donated.

    With `steps_per_call` k > 1 one call runs the k steps from `step` on k stacked
    batches, and `rows_of_call` splits their metrics into rows; `unroll_call` says
    whether those k steps are unrolled or a loop (multi_step.unrolled). With
    `training.device_data`, the batch holds row indices and the compiled call gathers
    its data from the table placed on the devices here. The first call of each mode
    compiles it, from seconds to minutes: the console says so first."""

    def __init__(self, training: Training, mesh: Mesh, stage: str = "",
                 steps_per_call: int = 1, unroll_call: str = "auto"):
        self.training, self.mesh, self.stage = training, mesh, stage
        self.steps_per_call = steps_per_call
        self.modes = tuple(training.steps)
        self.several_modes = len(self.modes) > 1
        if self.several_modes and training.mode_of_step is None:
            raise ValueError(
                f"a stage with several step functions {self.modes} needs mode_of_step")
        self.table = self._placed_device_table()
        # A stacked call's batches are [k, batch, ...]: the batch axis moves to second.
        self.batch_sharding = (batch_sharded(mesh) if steps_per_call == 1
                               else batch_sharded(mesh, axis=1))
        self.rows = multi_step.Rows(self.modes if self.several_modes else None)
        self.calls = self._jitted_calls(multi_step.unrolled(unroll_call, platform_of(mesh)))
        self.not_yet_run = set(self.calls)

    def __call__(self, state, local_batch: dict, step: int):
        batch = global_batch(local_batch, self.mesh, self.batch_sharding)
        if self.training.prepare_batch is not None:
            batch = self.training.prepare_batch(batch)
        if self.steps_per_call > 1:
            if not self.several_modes:
                return self._run("all", state, batch)
            return self._run("all", state, batch, self._mode_indices(step))
        if not self.several_modes:
            (only,) = self.calls
            return self._run(only, state, batch)
        mode = self.training.mode_of_step(step)
        state, metrics = self._run(mode, state, batch)
        return state, {**metrics, "mode": mode}

    def rows_of_call(self, step: int, metrics: dict) -> list[tuple[int, dict]]:
        """The fetched metrics of the k-step call from `step`, one row per step."""
        step_modes = ([self.training.mode_of_step(s)
                       for s in range(step, step + self.steps_per_call)]
                      if self.several_modes else None)
        return self.rows(step, metrics, step_modes)

    def _placed_device_table(self):
        data = self.training.device_data
        if data is None:
            return None
        started = time.perf_counter()
        table = jax.block_until_ready(place(data.table, self.mesh))
        # In log.txt only: with the rendering's line it splits a run's setup time.
        logging.info("[%s] training data placed on the devices in %.1f s", self.stage,
                     time.perf_counter() - started)
        return table

    def _jitted_calls(self, unroll: bool) -> dict[str, Callable]:
        """{mode: jitted step} for one step a call; {"all": jitted k-step call}
        otherwise (scanning over the modes' switch when there are several)."""
        if self.steps_per_call == 1:
            return {mode: self._jitted(self._with_data(lambda steps, mode=mode: steps[mode]))
                    for mode in self.modes}
        if self.several_modes:
            return {"all": self._jitted(self._with_data(
                lambda steps: multi_step.scanned_modes(steps, self.rows, unroll)),
                extra_inputs=1)}
        only = self.modes[0]
        return {"all": self._jitted(self._with_data(
            lambda steps: multi_step.scanned(steps[only], unroll)))}

    def _with_data(self, build: Callable[[dict], Callable]) -> Callable:
        """The call `build(step functions)` makes, taking the device table last and
        giving the step functions the batches gathered from it (when there is one)."""
        data = self.training.device_data
        if data is None:
            return build(self.training.steps)

        def call(state, batch, rng, *extra_and_table):
            *extra, table = extra_and_table
            steps = {mode: functools.partial(_on_gathered, step, data.gather, table)
                     for mode, step in self.training.steps.items()}
            return build(steps)(state, batch, rng, *extra)
        return call

    def _jitted(self, call: Callable, extra_inputs: int = 0) -> Callable:
        replicated_inputs = extra_inputs + (self.table is not None)
        in_shardings = ((replicated(self.mesh), self.batch_sharding, replicated(self.mesh))
                        + (replicated(self.mesh),) * replicated_inputs)
        return jax.jit(call, in_shardings=in_shardings,
                       out_shardings=(replicated(self.mesh), replicated(self.mesh)),
                       donate_argnums=0)

    def _mode_indices(self, step: int) -> jax.Array:
        """The modes of the k steps from `step`, as indices into `modes`, on the devices."""
        step_modes = [self.modes.index(self.training.mode_of_step(s))
                      for s in range(step, step + self.steps_per_call)]
        return global_batch(np.asarray(step_modes, np.int32), self.mesh,
                            replicated(self.mesh))

    def _run(self, key: str, state, batch, *extra):
        inputs = (state, batch, self.training.rng, *extra,
                  *(() if self.table is None else (self.table,)))
        if key in self.not_yet_run:
            self.not_yet_run.discard(key)
            k = self.steps_per_call
            what = (f"the {key} step" if k == 1 and self.several_modes
                    else "the training step" if k == 1 else f"the {k}-step call")
            console.say(f"[{self.stage}] compiling {what}...")
            # Compiled ahead of its first call, so that its memory is known before it
            # runs; later calls run this executable, whose dispatch costs what the
            # jitted function's does.
            self.calls[key] = host_memory.compile_checked(
                self.calls[key], inputs, what, self.stage,
                saved_state_bytes=host_memory.array_bytes(state))
        return self.calls[key](*inputs)


def _on_gathered(step: StepFn, gather: Callable, table: dict, state, batch, rng):
    """`step` on the batch `gather` takes from the device `table` by `batch`'s rows."""
    return step(state, gather(table, batch), rng)
