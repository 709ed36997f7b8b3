"""Stage `ct` (CT-VAE stage 2) in the run format: its checkpoint signature, the CT
layer and its train state, its random keys, and loading the trained layer."""

import functools
import math
from pathlib import Path

import jax
import jax.numpy as jnp
import ml_collections
import optax
from flax.training.train_state import TrainState
from jax.sharding import Mesh

from causal_disent import models
from causal_disent.data import transitions
from causal_disent.models.ct_layer import CausalTransition
from causal_disent.runs import mcqvae as mcqvae_run
from causal_disent.runs import stage_one_record
from causal_disent.runs.checkpoint import restore_trained_params

STAGE = "ct"


def signature(config: ml_collections.ConfigDict) -> dict:
    """A CT checkpoint depends on the data, the stage-1 architecture and its own."""
    return {
        "data": config.data.name,
        "mcqvae_model": config.mcqvae.model.to_dict(),
        "ct_model": config.ct.model.to_dict(),
    }


def build_model(config: ml_collections.ConfigDict, dataset) -> CausalTransition:
    """The CT layer over the N = C·h·w codes of the config's MCQ-VAE, 2F actions (F
    factors or attributes that actions move)."""
    mcqvae = mcqvae_run.build_model(config, dataset)
    return models.build_ct_layer(
        config.ct.model,
        num_nodes=math.prod(mcqvae.code_grid_shape(dataset.image_shape)),
        num_codes=config.mcqvae.model.num_codes,
        num_actions=transitions.num_dataset_actions(dataset),
    )


def mcqvae_workdir(config: ml_collections.ConfigDict, workdir: Path) -> Path:
    """Where stage 1 of this run lives: `ct.mcqvae_workdir`, or the run's own."""
    return Path(config.ct.mcqvae_workdir) if config.ct.mcqvae_workdir else workdir


def stage_one_elsewhere(config: ml_collections.ConfigDict) -> bool:
    """Whether stage 2 takes its trained stage 1 from another run's workdir."""
    return "ct" in config.stages and bool(config.get("ct", {}).get("mcqvae_workdir"))


def stage_rngs(config: ml_collections.ConfigDict) -> tuple[jax.Array, jax.Array, jax.Array]:
    """(init, train, eval) keys of stage 2."""
    return tuple(jax.random.split(jax.random.key(config.seed + 1), 3))


def create_state(model: CausalTransition, init_rng, schedule) -> TrainState:
    param_rng, gumbel_rng = jax.random.split(init_rng)
    codes = jnp.zeros((1, model.num_nodes), jnp.int32)
    params = model.init(
        {"params": param_rng, "gumbel": gumbel_rng, "noise": gumbel_rng},
        codes, jnp.zeros((1,), jnp.int32),
    )["params"]
    return TrainState.create(apply_fn=model.apply, params=params, tx=optax.adam(schedule))


def load_trained(config: ml_collections.ConfigDict, workdir: Path, mesh: Mesh, dataset, *,
                 stage1_params):
    """The CT layer and its trained parameters from `workdir`'s latest checkpoint;
    CheckpointError when it was trained on another stage 1 than `stage1_params`
    (runs/stage_one_record.py)."""
    stage_one_record.check(workdir, mcqvae_workdir(config, workdir), stage1_params)
    model = build_model(config, dataset)
    create = functools.partial(create_state, model, jax.random.key(0),
                               optax.constant_schedule(0.0))
    return model, restore_trained_params(
        workdir, STAGE, signature(config), create, mesh,
        "no stage-2 (ct) checkpoint in {directory}: train the CT layer first "
        "(config.stages includes 'ct')",
    )
