"""Stopping a run whose training diverged, before it saves a non-finite state.

A NaN or an infinity in a loss or gradient poisons every later step: the parameters
stay NaN, every checkpoint kept afterwards holds them, and a following stage would
train on them. `loop.fit` therefore checks each fetched row of metrics (at log steps
and before every save, when the host waits on the device anyway) and the state
itself before every save, and raises `NonFiniteTraining` naming the step, the metric
and the last good checkpoint. Nothing non-finite is ever saved.
"""

import math
from collections.abc import Iterable

import jax
import jax.numpy as jnp
import numpy as np


class NonFiniteTraining(RuntimeError):
    """Training produced a non-finite value; the run stopped without saving it."""

    def __init__(self, stage: str, step: int, what: str, last_good: str | None):
        self.stage, self.step, self.what, self.last_good = stage, step, what, last_good
        resume = (f"the last good checkpoint is {last_good}" if last_good
                  else "no checkpoint of this stage was saved")
        super().__init__(
            f"stage {stage} diverged: {what} at step {step}; stopped without saving it "
            f"({resume}). A rerun would diverge again: lower the stage's "
            f"optim.learning_rate, or check the data."
        )


def first_non_finite(rows: Iterable[tuple[int, dict]]) -> tuple[int, str] | None:
    """(step, description) of the first row holding a non-finite numeric metric, the
    loss named first when it is one of them; None when all are finite."""
    for step, metrics in rows:
        bad = [name for name, value in metrics.items()
               if not isinstance(value, str) and not _all_finite_values(value)]
        if bad:
            name = "loss" if "loss" in bad else bad[0]
            return step, f"{name} = {_describe(metrics[name])}"
    return None


def _all_finite_values(value) -> bool:
    if isinstance(value, float):  # most metrics: no array to build
        return math.isfinite(value)
    return bool(np.all(np.isfinite(value)))


def _describe(value) -> str:
    values = np.asarray(value)
    if values.ndim == 0:
        return str(values.item())
    return f"{int(np.sum(~np.isfinite(values)))} non-finite of {values.size} values"


@jax.jit
def _all_finite(tree) -> jax.Array:
    # One reduction over the leaves joined end to end (concatenate widens mixed float
    # types, so no value turns infinite on the way): XLA:CPU compiles it several times
    # faster than a reduction per leaf, for a few ms more per check.
    leaves = [leaf.ravel() for leaf in jax.tree.leaves(tree)
              if jnp.issubdtype(leaf.dtype, jnp.inexact)]
    return jnp.all(jnp.isfinite(jnp.concatenate(leaves))) if leaves else jnp.array(True)


def state_is_finite(state) -> bool:
    """Whether every floating-point array of `state`'s parameters and optimiser
    state (and batch statistics, if any) is finite; one reduction on the
    device. Other fields may be legitimately infinite (CausalVAE's augmented
    Lagrangian starts from H_prev = +inf), so a state with `params` is checked on
    those fields only; any other pytree, whole."""
    return bool(jax.device_get(_all_finite(_checked_fields(state))))


def compile_state_check(state) -> None:
    """Runs the check of `state_is_finite` once and drops its answer, so that its
    compilation (about half a second) falls where the loop's own compilation ends,
    not into the first checkpoint's save; the loop acts on the check before saves."""
    jax.block_until_ready(_all_finite(_checked_fields(state)))


def _checked_fields(state):
    if hasattr(state, "params"):
        return {name: getattr(state, name) for name in _TRAINED_FIELDS if hasattr(state, name)}
    return state


_TRAINED_FIELDS = ("params", "opt_state", "batch_stats")
