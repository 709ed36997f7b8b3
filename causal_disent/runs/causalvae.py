"""Stage `causalvae` in the run format: its checkpoint signature, the model and its
train state (with the DAG constraint's augmented-Lagrangian state), and loading a
trained run."""

import functools
from pathlib import Path

import jax
import jax.numpy as jnp
import ml_collections
import numpy as np
import optax
from flax.training.train_state import TrainState
from jax.sharding import Mesh

from causal_disent import models
from causal_disent.data import pendulum as pendulum_data
from causal_disent.objectives import causalvae as cv
from causal_disent.objectives.causalvae_variants import LabelScaling
from causal_disent.runs.config_file import RunConfigError, read_config
from causal_disent.runs.checkpoint import restore_trained_params

STAGE = "causalvae"

# The authors' (mean, scale) of the label prior, by dataset; others use the training
# split's per-label mean and standard deviation.
AUTHORS_LABEL_SCALE = {"pendulum": pendulum_data.LABEL_SCALE}


class CausalVAEState(TrainState):
    """TrainState plus the augmented-Lagrangian state of the DAG constraint."""

    lagrangian: cv.AugmentedLagrangian


def signature(config: ml_collections.ConfigDict) -> dict:
    """What a checkpoint of this stage depends on: the data and the architecture."""
    return {"data": config.data.name, "model": config.causalvae.model.to_dict()}


def build_model(config: ml_collections.ConfigDict, dataset):
    return models.build_causalvae(config.causalvae.model, dataset.image_shape)


def adjacency_gradient_mask(support: np.ndarray | None) -> optax.GradientTransformation:
    """Zeroes the updates of A outside `support` (None: passes everything).

    Stateless, and always in the optimiser chain so that the optimiser state has one
    structure whatever the graph learning (checkpoints restore either way).
    """
    # NumPy, not jnp: create_state runs under jit, and the mask must not be its tracer.
    mask = None if support is None else np.asarray(support, np.float32)

    def update(updates, state, params=None):
        del params
        if mask is None or "scm" not in updates:
            return updates, state
        scm = updates["scm"]
        return {**updates, "scm": {**scm, "adjacency": scm["adjacency"] * mask}}, state

    return optax.GradientTransformation(lambda params: optax.EmptyState(), update)


def create_state(model, image_shape, init_rng, learning_rate: float,
                 initial_penalty: float, initial_adjacency=None,
                 initial_lagrangian: cv.AugmentedLagrangian | None = None,
                 adjacency_support=None, max_grad_norm: float = 0.0) -> CausalVAEState:
    """A fresh state; A (when the model has one) and the Lagrangian state start from
    `initial_adjacency` / `initial_lagrangian` when given (the pre-training's); A's
    updates are zeroed outside `adjacency_support` when given; gradients are clipped
    to a global norm of `max_grad_norm` when it is > 0."""
    sample = jnp.zeros((1, *image_shape), jnp.float32)
    params = model.init(init_rng, sample)["params"]
    if initial_adjacency is not None and model.has_causal_layer:
        params = {**params, "scm": {**params["scm"],
                                    "adjacency": jnp.asarray(initial_adjacency, jnp.float32)}}
    if initial_lagrangian is None:
        initial_lagrangian = cv.AugmentedLagrangian.create(penalty=initial_penalty)
    # Every link is always present (identity when unused), so the optimiser state has
    # one structure whatever the settings and any checkpoint restores.
    clip = optax.clip_by_global_norm(max_grad_norm) if max_grad_norm > 0 else optax.identity()
    tx = optax.chain(adjacency_gradient_mask(adjacency_support), clip,
                     optax.adam(learning_rate))
    return CausalVAEState.create(
        apply_fn=model.apply, params=params, tx=tx, lagrangian=initial_lagrangian,
    )


def label_scaling(dataset_name: str, train_labels: np.ndarray) -> LabelScaling:
    """The label prior's (mean, scale) and l_u's range, from the training labels
    [n_train, n] (and the authors' constants where known)."""
    low, high = train_labels.min(axis=0), train_labels.max(axis=0)
    if dataset_name in AUTHORS_LABEL_SCALE:
        table = np.asarray(AUTHORS_LABEL_SCALE[dataset_name], np.float32)
        offset, scale = table[:, 0], table[:, 1]
    else:
        offset, scale = train_labels.mean(axis=0), train_labels.std(axis=0)
    return LabelScaling(
        prior_offset=np.asarray(offset, np.float32),
        prior_scale=np.maximum(np.asarray(scale, np.float32), 1e-6),
        low=np.asarray(low, np.float32),
        high=np.asarray(np.maximum(high, low + 1e-6), np.float32),
    )


def evaluation_indices(config: ml_collections.ConfigDict, split: dict) -> np.ndarray:
    """The test images the stage scores: the first `num_eval_images` (0 = all)."""
    return split["test"][: config.causalvae.train.num_eval_images or None]


def load_trained(config: ml_collections.ConfigDict, workdir: Path, mesh: Mesh, dataset):
    """The model and its trained parameters (replicated over `mesh`) from `workdir`'s
    latest checkpoint; CheckpointError if there is none."""
    cfg = config.causalvae
    model = build_model(config, dataset)
    create = functools.partial(
        create_state, model, dataset.image_shape, jax.random.key(0),
        cfg.optim.learning_rate, cfg.objective.initial_penalty,
    )
    return model, restore_trained_params(
        workdir, STAGE, signature(config), create, mesh,
        "no causalvae checkpoint in {directory}: train the run first",
    )


def compared_config(directory: Path, dataset_name: str) -> ml_collections.ConfigDict:
    """The config of a run in `causalvae.train.compare_workdirs`; an error naming the
    fix unless it is a run on `dataset_name`."""
    try:
        other = read_config(directory)
    except RunConfigError as error:
        raise RunConfigError(
            f"{error}; causalvae.train.compare_workdirs must list the --workdir of "
            "finished CausalVAE runs"
        ) from error
    if other.data.name != dataset_name:
        raise ValueError(
            f"{directory} was trained on {other.data.name!r}, not {dataset_name!r}: "
            "compare runs on the same dataset"
        )
    return other
