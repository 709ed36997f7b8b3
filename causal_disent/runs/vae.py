"""Stage `vae` (the VAE baselines: β-VAE and the later members of the family) in the
run format: its checkpoint signature, its model and train state, and loading a
trained run.

A loss that trains a discriminator beside the VAE (FactorVAE,
objectives/vae.needs_discriminator) has a state whose params are {"vae",
"discriminator"}, each group with its own Adam (`vae.optim`,
`vae.discriminator.optim`); every other loss's state is the VAE's alone."""

import functools
from collections.abc import Callable
from pathlib import Path

import jax
import jax.numpy as jnp
import ml_collections
import numpy as np
import optax
from flax.training.train_state import TrainState
from jax.sharding import Mesh

from causal_disent import models
from causal_disent.data import auxiliary
from causal_disent.models.ivae import IVAE
from causal_disent.models.ladder_vae import LadderVAE
from causal_disent.models.vae import LatentDiscriminator
from causal_disent.objectives.vae import needs_discriminator
from causal_disent.runs.checkpoint import restore_trained_params
from causal_disent.utils.images import images_to_unit_range

STAGE = "vae"


def has_discriminator(config: ml_collections.ConfigDict) -> bool:
    """Whether the run's loss trains a discriminator beside the VAE (FactorVAE)."""
    return needs_discriminator(config.vae.objective.name)


def signature(config: ml_collections.ConfigDict) -> dict:
    """What a checkpoint of this stage depends on: the data and the architecture(s)."""
    fields = {"data": config.data.name, "model": config.vae.model.to_dict()}
    if has_discriminator(config):
        fields["discriminator"] = config.vae.discriminator.model.to_dict()
    if "auxiliary" in config.vae:  # its one-hot's size sets the prior's input
        fields["auxiliary"] = config.vae.auxiliary.to_dict()
    if config.get("num_seeds", 1) > 1:  # a stacked state (train/seed_stacking.py)
        fields["num_seeds"] = config.num_seeds
    return fields


def build_conv_vae(config: ml_collections.ConfigDict, dataset):
    """models/vae.VAE from `vae.model`, for the dataset's images."""
    return models.build_vae(config.vae.model, dataset.image_shape)


def build_ladder_vae(config: ml_collections.ConfigDict, dataset) -> LadderVAE:
    """models/ladder_vae.LadderVAE from `vae.model`, for the dataset's images."""
    if "xblock" in config.vae.model:
        raise ValueError("vae.model.xblock is set, but the 'ladder_vae' loss's LadderVAE "
                         "takes no XBlock: remove it (XBlocks go on the VAE and AE)")
    return LadderVAE(**models.module_fields(config.vae.model),
                     image_shape=tuple(dataset.image_shape))


def build_ivae(config: ml_collections.ConfigDict, dataset) -> IVAE:
    """models/ivae.IVAE from `vae.model`, for the dataset's images, its prior on the
    one-hot factor `vae.auxiliary.factor`; ValueError if that is missing."""
    return IVAE(**models.vae_fields(config.vae.model), image_shape=tuple(dataset.image_shape),
                auxiliary_size=auxiliary_size(config, dataset))


# loss name (vae.objective.name) -> (config, dataset) -> its module, for a loss whose
# network is not models/vae.VAE; the section `vae.model` holds that module's fields.
# Every module has VAE's interface: num_latents, encode, decode and __call__.
MODEL_BUILDERS: dict[str, Callable] = {"ladder_vae": build_ladder_vae, "ivae": build_ivae}


def auxiliary_variable(config: ml_collections.ConfigDict, dataset) -> Callable | None:
    """index [B] -> u [B, n], the run's observed auxiliary variable (`vae.auxiliary`,
    a one-hot dataset factor: data/auxiliary.py), or None when the run has none."""
    if "auxiliary" not in config.vae:
        return None
    return auxiliary.one_hot_factor(dataset, config.vae.auxiliary.factor)


def auxiliary_size(config: ml_collections.ConfigDict, dataset) -> int:
    """The size n of the run's auxiliary variable u, for a model whose prior is
    conditioned on one; ValueError when `vae.auxiliary` is missing."""
    if "auxiliary" not in config.vae:
        raise ValueError(
            f"vae.auxiliary.factor is missing: the {config.vae.objective.name!r} loss "
            "conditions its prior on an observed auxiliary variable u; set it to one of "
            f"{dataset.name}'s factors ({', '.join(dataset.factor_names)})")
    factor = config.vae.auxiliary.factor
    return dataset.factor_sizes[auxiliary.factor_position(dataset, factor)]


def build_model(config: ml_collections.ConfigDict, dataset):
    """The module of the run's loss (`MODEL_BUILDERS`, else VAE); constructing it checks
    `vae.model` (ValueError naming the field)."""
    return MODEL_BUILDERS.get(config.vae.objective.name, build_conv_vae)(config, dataset)


def build_discriminator(config: ml_collections.ConfigDict) -> LatentDiscriminator | None:
    """The discriminator of `vae.discriminator.model`, or None for a loss without one."""
    if not has_discriminator(config):
        return None
    return LatentDiscriminator(**config.vae.discriminator.model)


def optimizer(optim_config: ml_collections.ConfigDict) -> optax.GradientTransformation:
    """Adam with the section `vae.optim`'s constant learning rate, b1, b2 and eps."""
    return optax.adam(optim_config.learning_rate, b1=optim_config.b1, b2=optim_config.b2,
                      eps=optim_config.eps)


def stage_optimizer(config: ml_collections.ConfigDict) -> optax.GradientTransformation:
    """The stage's optimiser: `optimizer(vae.optim)`, or with a discriminator, that
    Adam on the "vae" group and `optimizer(vae.discriminator.optim)` on the
    "discriminator" group."""
    if not has_discriminator(config):
        return optimizer(config.vae.optim)
    groups = {"vae": optimizer(config.vae.optim),
              "discriminator": optimizer(config.vae.discriminator.optim)}
    return optax.multi_transform(groups, {group: group for group in groups})


def create_state(model, image_shape, init_rng, tx: optax.GradientTransformation,
                 discriminator: LatentDiscriminator | None = None) -> TrainState:
    """The fresh state: the VAE's params from `init_rng`, or with a discriminator
    {"vae": those, "discriminator": its params from fold_in(init_rng, 1)}."""
    sample = images_to_unit_range(np.zeros((1, *image_shape), np.uint8))
    params = model.init(init_rng, sample)["params"]
    if discriminator is not None:
        latents = jnp.zeros((1, model.num_latents), jnp.float32)
        params = {"vae": params, "discriminator": discriminator.init(
            jax.random.fold_in(init_rng, 1), latents)["params"]}
    return TrainState.create(apply_fn=model.apply, params=params, tx=tx)


def state_factory(config: ml_collections.ConfigDict, model, image_shape, init_rng):
    """() -> the fresh state of the run's model (and discriminator), with the stage's
    optimiser: the stage's `create_state`."""
    create = functools.partial(create_state, model, image_shape, init_rng,
                               stage_optimizer(config))
    discriminator = build_discriminator(config)
    return create if discriminator is None else functools.partial(
        create, discriminator=discriminator)


def vae_params(config: ml_collections.ConfigDict, params: dict) -> dict:
    """The VAE's parameters within a state's `params` (the "vae" group of a run with
    a discriminator)."""
    return params["vae"] if has_discriminator(config) else params


def load_trained(config: ml_collections.ConfigDict, workdir: Path, mesh: Mesh, dataset):
    """The VAE module and its trained parameters (replicated over `mesh`; a
    discriminator's are left out) from the latest checkpoint in `workdir`;
    CheckpointError if there is none or it was made with another architecture."""
    model = build_model(config, dataset)
    create = state_factory(config, model, dataset.image_shape, jax.random.key(0))
    params = restore_trained_params(workdir, STAGE, signature(config), create, mesh,
                                    "no vae checkpoint in {directory}: train the run first")
    return model, vae_params(config, params)
