"""Stage `vae` (the VAE baselines: β-VAE and the later members of the family) in the
run format: its checkpoint signature, its model and train state, and loading a
trained run."""

import functools
from pathlib import Path

import jax
import ml_collections
import numpy as np
import optax
from flax.training.train_state import TrainState
from jax.sharding import Mesh

from causal_disent import models
from causal_disent.runs.restore import restore_trained_params
from causal_disent.utils.images import images_to_unit_range

STAGE = "vae"


def signature(config: ml_collections.ConfigDict) -> dict:
    """What a checkpoint of this stage depends on: the data and the architecture."""
    return {"data": config.data.name, "model": config.vae.model.to_dict()}


def build_model(config: ml_collections.ConfigDict, dataset):
    return models.build_vae(config.vae.model, dataset.image_shape)


def optimizer(optim_config: ml_collections.ConfigDict) -> optax.GradientTransformation:
    """Adam with the section `vae.optim`'s constant learning rate, b1, b2 and eps."""
    return optax.adam(optim_config.learning_rate, b1=optim_config.b1, b2=optim_config.b2,
                      eps=optim_config.eps)


def create_state(model, image_shape, init_rng, tx: optax.GradientTransformation) -> TrainState:
    sample = images_to_unit_range(np.zeros((1, *image_shape), np.uint8))
    params = model.init(init_rng, sample)["params"]
    return TrainState.create(apply_fn=model.apply, params=params, tx=tx)


def load_trained(config: ml_collections.ConfigDict, workdir: Path, mesh: Mesh, dataset):
    """The VAE module and its trained parameters (replicated over `mesh`) from the
    latest checkpoint in `workdir`; CheckpointError if there is none or it was made
    with another architecture."""
    model = build_model(config, dataset)
    create = functools.partial(create_state, model, dataset.image_shape, jax.random.key(0),
                               optimizer(config.vae.optim))
    return model, restore_trained_params(workdir, STAGE, signature(config), create, mesh,
                                         "no vae checkpoint in {directory}: train the run first")
