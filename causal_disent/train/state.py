"""Train state and the one generic, jitted train step."""

from collections.abc import Callable

import jax
import jax.numpy as jnp
import optax
from flax.training import train_state

TrainState = train_state.TrainState

# loss_fn(params, batch, rng) -> (scalar loss, dict of metrics)
LossFn = Callable[[dict, dict, jax.Array], tuple[jax.Array, dict]]


def per_epoch_exponential_decay(
    learning_rate: float, decay_rate_per_epoch: float, steps_per_epoch: int
) -> optax.Schedule:
    """lr · decay^floor(step / steps_per_epoch), the authors' per-epoch decay."""
    return optax.exponential_decay(
        init_value=learning_rate,
        transition_steps=steps_per_epoch,
        decay_rate=decay_rate_per_epoch,
        staircase=True,
    )


SCHEDULES = ("exponential", "cosine")


def stage_schedule(optim_config, steps_per_epoch: int, total_steps: int) -> optax.Schedule:
    """The learning rate of a stage's `optim` section: "exponential" is the authors'
    per-epoch decay (`decay_rate_per_epoch`); "cosine" decays from `learning_rate` to
    `final_learning_fraction`·`learning_rate` over the run's `total_steps`, for short
    runs whose epochs are too long for a per-epoch decay to act. With `warmup_steps`
    W > 0 (absent: 0) the rate is that schedule's times min(1, (step + 1) / W)."""
    name = optim_config.get("schedule", "exponential")
    if name == "exponential":
        schedule = per_epoch_exponential_decay(
            optim_config.learning_rate, optim_config.decay_rate_per_epoch, steps_per_epoch
        )
    elif name == "cosine":
        schedule = optax.cosine_decay_schedule(
            optim_config.learning_rate, total_steps, alpha=optim_config.final_learning_fraction
        )
    else:
        raise ValueError(f"optim.schedule must be one of {SCHEDULES}, got {name!r}")
    warmup_steps = optim_config.get("warmup_steps", 0)
    return schedule if warmup_steps <= 0 else with_linear_warmup(schedule, warmup_steps)


def with_linear_warmup(schedule: optax.Schedule, warmup_steps: int) -> optax.Schedule:
    """`schedule` scaled by min(1, (step + 1) / warmup_steps): the first update already
    moves (at 1/W of the rate) and step W − 1 onwards is the schedule's own rate."""
    def warmed_up(step):
        return schedule(step) * jnp.minimum(1.0, (step + 1) / warmup_steps)
    return warmed_up


def train_step(
    state: TrainState, batch: dict, rng: jax.Array, *, loss_fn: LossFn
) -> tuple[TrainState, dict]:
    """One optimiser step; the step's randomness is fold_in(rng, step)."""
    step_rng = jax.random.fold_in(rng, state.step)
    grad_fn = jax.value_and_grad(loss_fn, has_aux=True)
    (loss, metrics), grads = grad_fn(state.params, batch, step_rng)
    metrics = {**metrics, "loss": loss, "grad_norm": optax.tree.norm(grads)}
    return state.apply_gradients(grads=grads), metrics
