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
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import jax
import ml_collections
from jax.sharding import Mesh

from causal_disent.runs import tensorboard
from causal_disent.runs.checkpoint import StageCheckpoints
from causal_disent.runs.restore import placed_like
from causal_disent.runs.results import read_results, update_results
from causal_disent.train import resume
from causal_disent.train.loop import fit
from causal_disent.train.reporting import MetricsWriter
from causal_disent.utils import console
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
    if plan.training is not None and first_step < stage.total_steps:
        state = fit(
            stage=stage.name, state=state,
            step_fn=compiled_step_fn(plan.training, mesh, stage.name),
            local_batches=plan.training.batches,
            first_step=first_step, last_step=stage.total_steps,
            global_batch_size=stage.global_batch_size, checkpoints=checkpoints,
            writer=writer, log_every_steps=cfg.log_every_steps,
            learning_rate_fn=stage.learning_rate_fn,
            evaluate_every_steps=eval_every_steps, evaluate_fn=plan.curve_point,
            batch_unit=stage.batch_unit,
        )
    else:  # killed after its last checkpoint: drop what that attempt logged past it
        writer.discard_after(stage.name, first_step)
    checkpoints.close()
    final_step = int(jax.device_get(state.step))
    if plan.curve_point is not None and eval_every_steps > 0:
        plan.curve_point(state, final_step)  # `fit` leaves the last step to the stage
    return _evaluate(stage, state, final_step, workdir)


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
    """"eval" or "figures" on the finished stage's last checkpoint."""
    checkpoints = StageCheckpoints(workdir, stage.name, stage.signature, 1, 1)
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


def compiled_step_fn(training: Training, mesh: Mesh, stage: str = "") -> Callable:
    """(state, this host's batch, step) -> (state, metrics): the jitted step of the
    step's mode, batch sharded and state replicated over `mesh`, state donated. The
    first step of each mode compiles it, which takes from seconds to minutes: the
    console says so before it starts."""
    compiled = {
        mode: jax.jit(
            step,
            in_shardings=(replicated(mesh), batch_sharded(mesh), replicated(mesh)),
            out_shardings=(replicated(mesh), replicated(mesh)),
            donate_argnums=0,
        )
        for mode, step in training.steps.items()
    }
    if training.mode_of_step is None and len(compiled) != 1:
        raise ValueError(f"a stage with several step functions {tuple(compiled)} needs "
                         "mode_of_step")
    not_yet_run = set(compiled)

    def run_compiled(mode: str, state, batch):
        if mode in not_yet_run:
            not_yet_run.discard(mode)
            what = f"the {mode} step" if len(compiled) > 1 else "the training step"
            console.say(f"[{stage}] compiling {what}...")
        return compiled[mode](state, batch, training.rng)

    def step_fn(state, local_batch: dict, step: int):
        batch = global_batch(local_batch, mesh)
        if training.prepare_batch is not None:
            batch = training.prepare_batch(batch)
        if training.mode_of_step is None:
            (only,) = compiled
            return run_compiled(only, state, batch)
        mode = training.mode_of_step(step)
        state, metrics = run_compiled(mode, state, batch)
        return state, {**metrics, "mode": mode}

    return step_fn
