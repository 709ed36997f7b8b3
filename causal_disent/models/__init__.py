"""Pure Flax modules. `build_mcqvae`, `build_ct_layer` and `build_causalvae` turn
model configs into modules."""

import ml_collections

from causal_disent.models.causalvae import CausalVAE, check_decoder, check_variant
from causal_disent.models.ct_layer import CausalTransition
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


def build_ct_layer(
    model_config: ml_collections.ConfigDict, num_nodes: int, num_codes: int, num_actions: int
) -> CausalTransition:
    """The CT layer described by `config.ct.model` over N nodes of K codes, A actions."""
    return CausalTransition(
        num_nodes=num_nodes,
        num_codes=num_codes,
        num_actions=num_actions,
        graph_hidden=model_config.graph_hidden,
        gnn_hidden=model_config.gnn_hidden,
        gnn_layers=model_config.gnn_layers,
        position_dropout=model_config.position_dropout,
        noise=model_config.noise,
        gnn_backend=model_config.gnn_backend,
        gnn_root_weight=model_config.gnn_root_weight,
    )


def build_causalvae(
    model_config: ml_collections.ConfigDict, image_shape: tuple[int, int, int]
) -> CausalVAE:
    """The CausalVAE (or baseline, `model_config.variant`) of `config.causalvae.model`
    for images of `image_shape` (H, W, ch)."""
    check_variant(model_config.variant)
    check_decoder(model_config.decoder)
    return CausalVAE(
        num_concepts=model_config.num_concepts,
        concept_dim=model_config.concept_dim,
        image_shape=tuple(image_shape),
        encoder_widths=tuple(model_config.encoder_widths),
        encoder_hidden=model_config.encoder_hidden,
        decoder_widths=tuple(model_config.decoder_widths),
        decoder_hidden=model_config.decoder_hidden,
        variant=model_config.variant,
        mechanism_hidden=model_config.mechanism_hidden,
        decoder=model_config.decoder,
    )
