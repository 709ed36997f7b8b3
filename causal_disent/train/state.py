"""Train state and the one generic, jitted train step."""

from collections.abc import Callable

import jax
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


def train_step(
    state: TrainState, batch: dict, rng: jax.Array, *, loss_fn: LossFn
) -> tuple[TrainState, dict]:
    """One optimiser step; the step's randomness is fold_in(rng, step)."""
    step_rng = jax.random.fold_in(rng, state.step)
    grad_fn = jax.value_and_grad(loss_fn, has_aux=True)
    (loss, metrics), grads = grad_fn(state.params, batch, step_rng)
    metrics = {**metrics, "loss": loss, "grad_norm": optax.global_norm(grads)}
    return state.apply_gradients(grads=grads), metrics
