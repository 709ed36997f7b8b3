"""Pure Flax modules. `build_mcqvae`, `build_ct_layer`, `build_causalvae` and
`build_vae` turn model configs into modules; `check_mcqvae_config`, `check_ct_config`,
`check_causalvae_config` and `check_vae_config` check a config section before
anything is built.

A family's config section (`mcqvae.model`, `ct.model`, `causalvae.model`,
`vae.model`) holds exactly its module's fields, and is their only source of values:
the modules have no defaults for them. The fields a section lacks (the image channels
or shape, the number of nodes, codes and actions) come from the dataset and the
earlier stage.
"""

import ml_collections

from causal_disent.models.causalvae import CausalVAE, check_causalvae_config
from causal_disent.models.ct_layer import CausalTransition, check_ct_config
from causal_disent.models.mcqvae import MCQVAE, check_mcqvae_config
from causal_disent.models.vae import VAE, check_vae_config
from causal_disent.models.xblock import XBlock

__all__ = [
    "build_causalvae",
    "build_ct_layer",
    "build_mcqvae",
    "build_vae",
    "check_causalvae_config",
    "check_ct_config",
    "check_mcqvae_config",
    "check_vae_config",
]


def module_fields(model_config: ml_collections.ConfigDict) -> dict:
    """The section's fields as module keyword arguments, sequences as tuples (a config
    read back from JSON holds lists, and a module must stay hashable)."""
    return {
        name: tuple(value) if isinstance(value, (list, tuple)) else value
        for name, value in model_config.items()
    }


def build_mcqvae(model_config: ml_collections.ConfigDict, out_channels: int) -> MCQVAE:
    """The MCQ-VAE described by `config.mcqvae.model` for images with `out_channels`."""
    return MCQVAE(**module_fields(model_config), out_channels=out_channels)


def build_ct_layer(
    model_config: ml_collections.ConfigDict, num_nodes: int, num_codes: int, num_actions: int
) -> CausalTransition:
    """The CT layer described by `config.ct.model` over N nodes of K codes, A actions."""
    return CausalTransition(
        **module_fields(model_config),
        num_nodes=num_nodes, num_codes=num_codes, num_actions=num_actions,
    )


def build_causalvae(
    model_config: ml_collections.ConfigDict, image_shape: tuple[int, int, int]
) -> CausalVAE:
    """The CausalVAE (or baseline, `model_config.variant`) of `config.causalvae.model`
    for images of `image_shape` (H, W, ch)."""
    return CausalVAE(**module_fields(model_config), image_shape=tuple(image_shape))


def vae_fields(model_config: ml_collections.ConfigDict) -> dict:
    """`module_fields` of the section `vae.model` of a models/vae.VAE (or subclass),
    its subsection `xblock`, if any, built into the XBlock over num_latents units."""
    fields = module_fields(model_config)
    if "xblock" in fields:
        block = module_fields(model_config.xblock)
        if block.get("allowed_parents") is not None:  # hashable: tuples of tuples
            block["allowed_parents"] = tuple(map(tuple, block["allowed_parents"]))
        fields["xblock"] = XBlock(num_units=model_config.num_latents, **block)
    return fields


def build_vae(model_config: ml_collections.ConfigDict, image_shape: tuple[int, int, int]) -> VAE:
    """The VAE (an XVAE / XAE with the subsection `xblock`) of `config.vae.model` for
    images of `image_shape` (H, W, ch)."""
    return VAE(**vae_fields(model_config), image_shape=tuple(image_shape))
