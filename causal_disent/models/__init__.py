"""Pure Flax modules. `build_mcqvae` turns a model config into a module."""

import ml_collections

from causal_disent.models.mcqvae import MCQVAE


def build_mcqvae(model_config: ml_collections.ConfigDict, out_channels: int) -> MCQVAE:
    """The MCQ-VAE described by `config.mcqvae.model` for images with `out_channels`."""
    return MCQVAE(
        downsample_widths=tuple(model_config.downsample_widths),
        hidden_width=model_config.hidden_width,
        num_res_blocks=model_config.num_res_blocks,
        res_hidden=model_config.res_hidden,
        latent_dim=model_config.latent_dim,
        num_codebooks=model_config.num_codebooks,
        num_codes=model_config.num_codes,
        out_channels=out_channels,
        commitment_cost=model_config.commitment_cost,
    )
