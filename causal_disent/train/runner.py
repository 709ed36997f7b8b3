"""The one stage runner: every stage (mcqvae, ct, causalvae, and any new model) is a
`Stage` value, and `run_stage` does the rest the same way for all of them:

  open or resume the checkpoint -> return the saved results if the stage is done ->
  compile the step(s) with their shardings -> run the loop (logging, checkpoints,
  time budget, learning-curve points) -> close -> the final curve point -> the
  stage's evaluation -> WORKDIR/results.json.

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

from causal_disent.runs.results import update_results
from causal_disent.train import resume
from causal_disent.train.loop import fit
from causal_disent.train.reporting import MetricsWriter
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
    finish: Callable[[Any], dict]  # trained state -> results (evaluation, figures)
    learning_rate_fn: Callable | None = None  # an optax schedule, logged per row


def run_stage(stage: Stage, workdir: Path, mesh: Mesh) -> dict:
    """Trains (or resumes) `stage`, evaluates it and records its results; returns
    them. A finished stage returns its recorded results without recompiling."""
    cfg = stage.train_config
    checkpoints, state, first_step, finished = resume.open_stage(
        stage=stage.name, workdir=workdir, signature=stage.signature, train_config=cfg,
        create_state=stage.create_state, mesh=mesh, total_steps=stage.total_steps,
    )
    if finished is not None:
        return finished
    plan = stage.plan(first_step)
    eval_every_steps = cfg.get("eval_every_steps", 0)
    if plan.training is not None and first_step < stage.total_steps:
        state = fit(
            stage=stage.name, state=state,
            step_fn=compiled_step_fn(plan.training, mesh),
            local_batches=plan.training.batches,
            first_step=first_step, last_step=stage.total_steps,
            global_batch_size=stage.global_batch_size, checkpoints=checkpoints,
            writer=MetricsWriter(workdir), log_every_steps=cfg.log_every_steps,
            learning_rate_fn=stage.learning_rate_fn,
            evaluate_every_steps=eval_every_steps, evaluate_fn=plan.curve_point,
        )
    checkpoints.close()
    final_step = int(jax.device_get(state.step))
    if plan.curve_point is not None and eval_every_steps > 0:
        plan.curve_point(state, final_step)  # `fit` leaves the last step to the stage
    results = stage.finish(state)
    results["steps"] = final_step
    update_results(workdir, stage.name, results)
    return results


def compiled_step_fn(training: Training, mesh: Mesh) -> Callable:
    """(state, this host's batch, step) -> (state, metrics): the jitted step of the
    step's mode, batch sharded and state replicated over `mesh`, state donated."""
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

    def step_fn(state, local_batch: dict, step: int):
        batch = global_batch(local_batch, mesh)
        if training.prepare_batch is not None:
            batch = training.prepare_batch(batch)
        if training.mode_of_step is None:
            (only,) = compiled.values()
            return only(state, batch, training.rng)
        mode = training.mode_of_step(step)
        state, metrics = compiled[mode](state, batch, training.rng)
        return state, {**metrics, "mode": mode}

    return step_fn
