"""MCQ-VAE: convolutional VQ-VAE with several codebooks, stage 1 of CT-VAE (Gendron et
al., "Disentanglement of Latent Representations via Causal Interventions", IJCAI 2023,
§3.3)."""

import dataclasses

import chex
import flax.linen as nn
import jax

from causal_disent.models.conv import (ACTIVATIONS, ACTIVATIONS_BEFORE_THE_FIELD,
                                       FORMER_ACTIVATIONS_NAMES, Decoder, Encoder)
from causal_disent.models.vq import MultiCodebookQuantizer


def check_mcqvae_config(model_config) -> None:
    """Raises ValueError naming the first field of `model_config` (the section
    `mcqvae.model`, or an MCQVAE) that cannot build a model."""
    for name in ("num_codebooks", "num_codes", "latent_dim", "hidden_width"):
        if getattr(model_config, name) < 1:
            raise ValueError(
                f"mcqvae.model.{name} must be positive, got {getattr(model_config, name)}"
            )
    if model_config.latent_dim % model_config.num_codebooks:
        raise ValueError(
            f"mcqvae.model.latent_dim (D = {model_config.latent_dim}) must be divisible by "
            f"mcqvae.model.num_codebooks (C = {model_config.num_codebooks}): each codebook "
            f"quantises D/C channels"
        )
    if not model_config.downsample_widths:
        raise ValueError("mcqvae.model.downsample_widths must name at least one width")
    activations = getattr(model_config, "activations", ACTIVATIONS_BEFORE_THE_FIELD)
    if FORMER_ACTIVATIONS_NAMES.get(activations, activations) not in ACTIVATIONS:
        raise ValueError(f"mcqvae.model.activations must be one of {tuple(ACTIVATIONS)}, "
                         f"got {activations!r}")


class MCQVAE(nn.Module):
    """images [B, H, W, ch] in [0, 1] -> dict of named intermediates.

    `__call__` returns {latents, quantized, codes [B, C, h, w], reconstruction,
    vq_loss, perplexity [C], usage [C]}. `encode_codes` and `decode_codes` give the
    frozen stage-2 view: images -> codes -> images.

    Every field but `out_channels` (the images') is a key of the config section
    `mcqvae.model`, which holds their values; `check_mcqvae_config` checks them when
    the module is constructed.
    """

    downsample_widths: tuple[int, ...]
    hidden_width: int
    num_res_blocks: int
    res_hidden: int
    latent_dim: int
    num_codebooks: int
    num_codes: int
    out_channels: int
    commitment_cost: float
    # models/conv.ACTIVATIONS: the configs name the authors' "authors"; a config written
    # before this field existed means the network its workdir was trained with.
    activations: str = dataclasses.field(default=ACTIVATIONS_BEFORE_THE_FIELD, kw_only=True)

    def __post_init__(self):
        check_mcqvae_config(self)
        super().__post_init__()

    def setup(self):
        self.encoder = Encoder(
            downsample_widths=self.downsample_widths,
            hidden_width=self.hidden_width,
            num_res_blocks=self.num_res_blocks,
            res_hidden=self.res_hidden,
            latent_dim=self.latent_dim,
            activations=self.activations,
        )
        self.quantizer = MultiCodebookQuantizer(
            latent_dim=self.latent_dim,
            num_codebooks=self.num_codebooks,
            num_codes=self.num_codes,
            commitment_cost=self.commitment_cost,
        )
        self.decoder = Decoder(
            upsample_widths=tuple(reversed(self.downsample_widths))[1:],
            hidden_width=self.hidden_width,
            num_res_blocks=self.num_res_blocks,
            res_hidden=self.res_hidden,
            out_channels=self.out_channels,
            activations=self.activations,
        )

    def __call__(self, images: jax.Array) -> dict[str, jax.Array]:
        chex.assert_rank(images, 4)
        latents = self.encoder(images)
        quantized = self.quantizer(latents)
        reconstruction = self.decoder(quantized["quantized"])
        chex.assert_equal_shape([reconstruction, images])
        return {"latents": latents, "reconstruction": reconstruction, **quantized}

    def code_grid_shape(self, image_shape) -> tuple[int, int, int]:
        """(C, h, w) of the codes of an image of `image_shape` [H, W, ch]; the CT layer
        has N = C·h·w nodes."""
        downsampling = 2 ** len(self.downsample_widths)
        return (self.num_codebooks, image_shape[0] // downsampling, image_shape[1] // downsampling)

    def encode_codes(self, images: jax.Array) -> jax.Array:
        """images [B, H, W, ch] -> codes [B, C, h, w]."""
        return self.quantizer(self.encoder(images))["codes"]

    def decode_codes(self, codes: jax.Array) -> jax.Array:
        """codes [B, C, h, w] -> images [B, H, W, ch]."""
        return self.decoder(self.quantizer.embed_codes(codes))
