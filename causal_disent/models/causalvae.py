"""CausalVAE (Yang et al., "CausalVAE: Disentangled Representation Learning via
Neural Structural Causal Models", CVPR 2021, §3–4) and its two baselines, one module.

    image x ─ConvEncoder→ ε [B, n, k] ─LinearSCM→ z = (I − Aᵀ)⁻¹ ε ─MaskLayer→
        z̃_i = g_i(A_i ∘ z) + ε_i ─decoder→ Bernoulli logits of x

`decoder` picks how the latents become an image:

  "per_concept"  (default) one ConvDecoder per concept, reading only that concept's
                 k dims; their logits are averaged. This is the authors' released
                 design (each concept decoded by its own network, the results
                 combined): a concept's code can only draw through its own network,
                 so intervening on one concept cannot redraw another's pixels
                 through a shared decoder.
  "joint"        one ConvDecoder reading all n·k dims (smaller, faster; an
                 intervention on an effect can then disturb the causes' pixels).

`variant` picks the model of the paper's Table 1 (same encoder, decoder and latent
size n·k in all three):

  "causalvae"        the full model above.
  "condition_vae"    ConditionVAE: no causal layer and no mask layer; z = ε is
                     decoded directly, and its label-conditioned prior N(λ₁(u), 1) is
                     in the loss (objectives/causalvae_variants.py).
  "causalvae_unsup"  CausalVAE-unsup: the causal layer (learned A) but no mask layer
                     (the decoder sees z = (I − Aᵀ)⁻¹ ε) and no conditional prior.

The encoder outputs only the mean of q(ε | x): the authors' code fixed its variance
to 1, and the decoder reads the latent means (the authors sampled z with variance
0.001, a negligible jitter; without it the model is deterministic and needs no RNG).

Interventions (`CausalVAE.intervene`) follow the paper and `scm.MaskLayer.intervene`:
do(z_c = v) sets z_c at the mask layer's input (children see v) and/or at its
output (the concept itself reads v). Values v are in the units of the latent codes,
i.e. of the label prior's mean λ₁(u) = (u − mean) / scale.
"""

from collections.abc import Sequence

import chex
import flax.linen as nn
import jax
import jax.numpy as jnp

from causal_disent.models.conv import downsample_stack, upsample_stack
from causal_disent.models.scm import (
    LinearSCM,
    MaskLayer,
    intervene_latents,
    split_concepts,
)

VARIANTS = ("causalvae", "condition_vae", "causalvae_unsup")
DECODERS = ("per_concept", "joint")


def check_causalvae_config(model_config, image_shape) -> None:
    """Raises ValueError naming the first field of `model_config` (the section
    `causalvae.model`, or a CausalVAE) that cannot build a model for images of
    `image_shape` (H, W, ch)."""
    for name, known in (("variant", VARIANTS), ("decoder", DECODERS)):
        value = getattr(model_config, name)
        if value not in known:
            raise ValueError(
                f"causalvae.model.{name} {value!r} is unknown; known: {', '.join(known)}"
            )
    for name in ("num_concepts", "concept_dim", "encoder_hidden", "decoder_hidden",
                 "mechanism_hidden"):
        if getattr(model_config, name) < 1:
            raise ValueError(
                f"causalvae.model.{name} must be positive, got {getattr(model_config, name)}"
            )
    height, width, _ = image_shape
    for name in ("encoder_widths", "decoder_widths"):
        num_layers = len(getattr(model_config, name))
        if not num_layers:
            raise ValueError(f"causalvae.model.{name} must name at least one width")
        if height % 2**num_layers or width % 2**num_layers:
            raise ValueError(
                f"causalvae.model.{name} has {num_layers} stride-2 layers but the "
                f"{height}x{width} images are not divisible by 2^{num_layers}"
            )


class ConvEncoder(nn.Module):
    """Images [B, H, W, ch] in [0, 1] -> ε means [B, latent_width].

    Stride-2 4×4 convolutions (ELU), then an MLP on the flattened feature map.
    """

    widths: Sequence[int]
    hidden: int
    latent_width: int

    @nn.compact
    def __call__(self, images: jax.Array) -> jax.Array:
        x = downsample_stack(images, self.widths, nn.elu)
        x = x.reshape(x.shape[0], -1)
        x = nn.elu(nn.Dense(self.hidden, name="hidden")(x))
        return nn.Dense(self.latent_width, name="to_latent")(x)


class ConvDecoder(nn.Module):
    """Latents [B, latent_width] -> logits [B, H, W, ch] (H, W = base·2^len(widths)).

    An MLP to a [base, base, widths[0]] map, then 2× upsampling convolutions (the
    fast sub-pixel form of a 4×4 stride-2 transposed convolution, models/conv.py) to
    widths[1:] (ELU) and to the logits.
    """

    widths: Sequence[int]
    hidden: int
    image_shape: tuple[int, int, int]

    @nn.compact
    def __call__(self, latents: jax.Array) -> jax.Array:
        base_h, base_w = base_map_size(self.image_shape, self.widths)
        x = nn.elu(nn.Dense(self.hidden, name="hidden")(latents))
        x = nn.elu(nn.Dense(base_h * base_w * self.widths[0], name="to_map")(x))
        x = x.reshape(x.shape[0], base_h, base_w, self.widths[0])
        return upsample_stack(x, self.widths[1:], self.image_shape[-1], nn.elu)


def base_map_size(image_shape, widths: Sequence[int]) -> tuple[int, int]:
    """(h, w) of the map the decoders' MLP produces: the image halved len(widths) times."""
    scale = 2 ** len(widths)
    return image_shape[0] // scale, image_shape[1] // scale


class PerConceptDecoder(nn.Module):
    """Decodes each concept on its own and averages the n logit maps.

    Concept i's k dims go through its own MLP (weights stacked on a leading concept
    axis) to a [base, base, widths[0]] map; the n maps then go, each separately (the
    concepts folded into the batch), through one shared stack of 2× upsampling
    convolutions. Concept i's logits depend on z_i alone, as with the authors'
    fully separate networks; sharing the convolutions is ours: n separate conv
    stacks under `nn.vmap` become grouped convolutions, over an order of magnitude
    slower per step on a CPU (docs/measured_choices.md), while the shared stack costs
    n× the joint decoder's convolutions.
    """

    num_concepts: int
    widths: Sequence[int]
    hidden: int
    image_shape: tuple[int, int, int]

    @nn.compact
    def __call__(self, latents: jax.Array) -> jax.Array:
        """[B, n, k] -> logits [B, H, W, ch] (the mean of the n concepts' logits)."""
        batch, num_concepts, concept_dim = latents.shape
        height, width, channels = self.image_shape
        base_h, base_w = base_map_size(self.image_shape, self.widths)
        map_size = base_h * base_w * self.widths[0]
        kernel_init = nn.initializers.lecun_normal(batch_axis=0)  # fan-in per concept
        hidden_kernel = self.param("hidden_kernel", kernel_init,
                                   (num_concepts, concept_dim, self.hidden))
        hidden_bias = self.param("hidden_bias", nn.initializers.zeros,
                                 (num_concepts, self.hidden))
        map_kernel = self.param("map_kernel", kernel_init, (num_concepts, self.hidden, map_size))
        map_bias = self.param("map_bias", nn.initializers.zeros, (num_concepts, map_size))
        x = nn.elu(jnp.einsum("bnk,nkh->nbh", latents, hidden_kernel) + hidden_bias[:, None])
        x = nn.elu(jnp.einsum("nbh,nhm->nbm", x, map_kernel) + map_bias[:, None])
        x = x.reshape(num_concepts * batch, base_h, base_w, self.widths[0])
        logits = upsample_stack(x, self.widths[1:], channels, nn.elu)
        # The mean, not the sum (as the authors): each concept's network moves the
        # logits by 1/n of its step, so the n networks together learn at the pace of
        # one decoder (with the sum, a `:small` run diverged after 2000 steps).
        return logits.reshape(num_concepts, batch, height, width, channels).mean(axis=0)


class CausalVAE(nn.Module):
    """CausalVAE / ConditionVAE / CausalVAE-unsup (see the module docstring).

    Attributes:
      num_concepts: n.
      concept_dim: k; the latent has n·k dims, concept i = dims [i·k, (i+1)·k).
      image_shape: (H, W, ch); H and W divisible by 2^len(encoder_widths) and by
        2^len(decoder_widths).
      encoder_widths, encoder_hidden: the encoder's conv widths and MLP width.
      decoder_widths, decoder_hidden: the decoder's map widths (the first is the
        MLP's output map) and MLP width.
      variant: one of VARIANTS.
      mechanism_hidden: width of each mask-layer MLP g_i (the authors': 32).
      decoder: one of DECODERS (module docstring).

    Every field but `image_shape` (the images') is a key of the config section
    `causalvae.model`, which holds their values; `check_causalvae_config` checks them
    when the module is constructed.
    """

    num_concepts: int
    concept_dim: int
    image_shape: tuple[int, int, int]
    encoder_widths: Sequence[int]
    encoder_hidden: int
    decoder_widths: Sequence[int]
    decoder_hidden: int
    variant: str
    mechanism_hidden: int
    decoder: str

    def __post_init__(self):
        check_causalvae_config(self, self.image_shape)
        super().__post_init__()

    @property
    def has_causal_layer(self) -> bool:
        return self.variant in ("causalvae", "causalvae_unsup")

    @property
    def has_mask_layer(self) -> bool:
        return self.variant == "causalvae"

    @property
    def uses_label_prior(self) -> bool:
        return self.variant in ("causalvae", "condition_vae")

    def setup(self):
        width = self.num_concepts * self.concept_dim
        self.encoder = ConvEncoder(self.encoder_widths, self.encoder_hidden, width)
        if self.decoder == "per_concept":
            self.image_decoder = PerConceptDecoder(
                self.num_concepts, self.decoder_widths, self.decoder_hidden,
                tuple(self.image_shape),
            )
        else:
            self.image_decoder = ConvDecoder(
                self.decoder_widths, self.decoder_hidden, tuple(self.image_shape)
            )
        if self.has_causal_layer:
            self.scm = LinearSCM(self.num_concepts, self.concept_dim)
        if self.has_mask_layer:
            self.mask = MaskLayer(self.num_concepts, self.concept_dim, self.mechanism_hidden)

    def _check_images(self, images: jax.Array) -> None:
        if images.ndim != 4 or tuple(images.shape[1:]) != tuple(self.image_shape):
            raise ValueError(
                f"images must be [B, {', '.join(map(str, self.image_shape))}] floats in "
                f"[0, 1]; got shape {images.shape}"
            )

    def encode(self, images: jax.Array) -> jax.Array:
        """Images [B, H, W, ch] in [0, 1] -> ε means [B, n, k]."""
        self._check_images(images)
        exogenous = self.encoder(images)
        return split_concepts(exogenous, self.num_concepts, self.concept_dim)

    def decode(self, latents: jax.Array) -> jax.Array:
        """Latents [B, n, k] or [B, n·k] -> Bernoulli logits [B, H, W, ch].

        Raises ValueError if the latent width is not n·k.
        """
        latents = split_concepts(latents, self.num_concepts, self.concept_dim)
        if self.decoder == "per_concept":
            logits = self.image_decoder(latents)
        else:
            logits = self.image_decoder(latents.reshape(latents.shape[0], -1))
        chex.assert_shape(logits, (latents.shape[0], *self.image_shape))
        return logits

    def __call__(self, images: jax.Array) -> dict[str, jax.Array]:
        """Forward pass.

        Args:
          images: [B, H, W, ch] floats in [0, 1].
        Returns:
          dict with
            exogenous: [B, n, k] ε (mean of q(ε | x)),
            z: [B, n, k] the causal layer's output (I − Aᵀ)⁻¹ ε (= ε without a
              causal layer): the concept codes scored by MIC/TIC and matched to the
              label prior,
            decoded_z: [B, n, k] what the decoder reads (the mask layer's output
              g_i(A_i ∘ z) + ε_i for "causalvae", else z),
            reconstruction_logits: [B, H, W, ch],
          and, with a causal layer, adjacency [n, n] (A[j, i]: j → i); with the mask
          layer, parent_prediction [B, n, k] g_i(A_i ∘ z) (what l_m compares to z).
        """
        return self._forward(images, intervention=None)

    def intervene(self, images: jax.Array, concept: int | jax.Array, value,
                  at_input: bool = True, at_output: bool = True) -> dict[str, jax.Array]:
        """`__call__` under do(z_c = v).

        Args:
          images: [B, H, W, ch] in [0, 1].
          concept: c (a Python int, checked, or a traced int).
          value: v, broadcastable to [B, k] ([B, 1] for one scalar per example).
          at_input: set z_c at the mask layer's input, so c's children see v
            (ignored by models without a mask layer, whose decoder reads z itself).
          at_output: set z_c in what the decoder reads. The paper's do() is both;
            for an effect, `at_output` alone leaves its causes untouched whatever A.
        Returns:
          `__call__`'s dict computed under the intervention.
        """
        return self._forward(images, intervention=(concept, value, at_input, at_output))

    def _forward(self, images, intervention) -> dict[str, jax.Array]:
        exogenous = self.encode(images)
        outputs = {"exogenous": exogenous}
        if self.has_causal_layer:
            scm = self.scm(exogenous)
            latents = scm["z"]
            outputs["adjacency"] = scm["adjacency"]
        else:
            latents = exogenous
        outputs["z"] = latents
        if self.has_mask_layer:
            if intervention is None:
                masked = self.mask(latents, outputs["adjacency"], exogenous)
            else:
                concept, value, at_input, at_output = intervention
                masked = self.mask.intervene(
                    latents, outputs["adjacency"], exogenous, concept, value,
                    at_input=at_input, at_output=at_output,
                )
            outputs["parent_prediction"] = masked["parent_prediction"]
            decoded = masked["z"]
        else:
            decoded = latents
            if intervention is not None:
                concept, value, at_input, at_output = intervention
                if at_input or at_output:
                    decoded = intervene_latents(decoded, concept, value)
        outputs["decoded_z"] = decoded
        outputs["reconstruction_logits"] = self.decode(decoded)
        return outputs
