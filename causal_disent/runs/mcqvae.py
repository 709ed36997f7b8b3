"""Stage `mcqvae` (CT-VAE stage 1) in the run format: its checkpoint signature, its
model and train state, and loading the trained MCQ-VAE."""

import functools
from pathlib import Path

import jax
import ml_collections
import numpy as np
import optax
from flax.training.train_state import TrainState
from jax.sharding import Mesh

from causal_disent import models
from causal_disent.runs import checkpoint_paths
from causal_disent.runs.checkpoint import (CheckpointError, check_workdir_compatible,
                                           checkpoint_dir, restore_trained_params)
from causal_disent.utils.images import images_to_unit_range

STAGE = "mcqvae"


def signature(config: ml_collections.ConfigDict) -> dict:
    """What a checkpoint of this stage depends on: the data and the architecture."""
    return {"data": config.data.name, "model": config.mcqvae.model.to_dict()}


def build_model(config: ml_collections.ConfigDict, dataset):
    return models.build_mcqvae(config.mcqvae.model, out_channels=dataset.image_shape[-1])


def create_state(model, image_shape, init_rng, schedule) -> TrainState:
    sample = images_to_unit_range(np.zeros((1, *image_shape), np.uint8))
    params = model.init(init_rng, sample)["params"]
    return TrainState.create(apply_fn=model.apply, params=params, tx=optax.adam(schedule))


def check_trained(config: ml_collections.ConfigDict, workdir: Path) -> None:
    """CheckpointError unless `workdir` holds a stage-1 checkpoint of this config's
    architecture (reads only its small JSON signature)."""
    directory = checkpoint_dir(workdir, STAGE)
    if not checkpoint_paths.saved_steps(workdir, STAGE):
        raise CheckpointError(
            f"no stage-1 (mcqvae) checkpoint in {directory}: run stage 'mcqvae' first "
            f"(list it in config.stages) or point config.ct.mcqvae_workdir at a "
            f"finished stage-1 run"
        )
    check_workdir_compatible(workdir, STAGE, signature(config))


def load_trained(config: ml_collections.ConfigDict, workdir: Path, mesh: Mesh, dataset):
    """The MCQ-VAE module and its trained parameters (replicated over `mesh`) from
    the latest stage-1 checkpoint in `workdir`; CheckpointError if there is none or
    it was made with another architecture."""
    model = build_model(config, dataset)
    check_trained(config, workdir)
    create = functools.partial(create_state, model, dataset.image_shape, jax.random.key(0),
                               optax.constant_schedule(0.0))
    return model, restore_trained_params(workdir, STAGE, signature(config), create, mesh,
                                         "no stage-1 (mcqvae) checkpoint in {directory}")
