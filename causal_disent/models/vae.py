"""The convolutional VAE shared by the VAE baselines (β-VAE and the later members of
the family: the loss differs, the network does not).

Sizes are those of the study of Locatello et al., "Challenging Common Assumptions in
the Unsupervised Learning of Disentangled Representations", ICML 2019 (the encoder /
decoder table of its appendix), for 64x64 images:

    encoder  stride-2 convolutions to 32, 32, 64, 64 channels with 4x4, 4x4, 2x2, 2x2
             kernels (ReLU) -> dense 256 (ReLU) -> dense 2·d: the mean and
             log-variance of q(z | x)
    decoder  dense 256 (ReLU) -> dense 4·4·64 (ReLU) -> 4x4 stride-2 transposed
             convolutions to 64, 32, 32 (ReLU) and to the image's channels: the
             logits of p(x | z)'s per-pixel means

The kernel sizes are the study's code's (disentanglement_lib,
methods/shared/architectures.py, `conv_encoder`), which the appendix table prints
as 4x4 throughout; `encoder_kernel_sizes` sets them. Kernels start Glorot-uniform,
biases at zero, as TF1's layers (which the study used) initialise them;
`weight_init` names the alternative, Flax's LeCun normal (`KERNEL_INITS`).

p(x | z) is `likelihood`: "bernoulli" (the study's choice on every dataset, colour
included, with the pixel values in [0, 1] as targets) or "gaussian" (a fixed variance
around the mean σ(logits), for colour data read as continuous); objectives/vae_terms.py
holds the two negative log-likelihoods.

FactorVAE adds `LatentDiscriminator`, its network on latent samples (the study's
MLP: 6 hidden layers of 1000 units, leaky ReLU with slope 0.2, 2 logits); its sizes
are the config section `vae.discriminator.model`.

The transposed convolutions are models/conv.py's sub-pixel form (same parameters,
fast on CPU). `encode_to_vector` and `decode_to_image` are these networks with the
activation left open (CausalVAE's encoder and decoder have the same shape with ELU).
The sampling of z and the loss are objectives/vae.py's.
"""

import dataclasses
from collections.abc import Callable, Sequence

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np

from causal_disent.models.conv import downsample_stack, upsample_stack
from causal_disent.models.xblock import XBlock

# p(x | z) per pixel, around the decoder's mean σ(logits) (objectives/vae_terms.pixel_nll).
LIKELIHOODS = ("bernoulli", "gaussian")

# `vae.model.weight_init`: how the family's kernels start (biases start at zero either way).
KERNEL_INITS = {
    # TF1's tf.layers default, so disentanglement_lib's (uniform, variance 2 / (fan-in
    # + fan-out)).
    "glorot_uniform": nn.initializers.glorot_uniform(),
    # Flax's default (truncated normal, variance 1 / fan-in): the project's choice
    # before it followed the study's code.
    "lecun_normal": nn.initializers.lecun_normal(),
}


def check_vae_config(model_config, image_shape) -> None:
    """Raises ValueError naming the first field of `model_config` (the section
    `vae.model`, or a VAE) that cannot build a model for images of `image_shape`
    (H, W, ch)."""
    likelihood = getattr(model_config, "likelihood", "bernoulli")
    if likelihood not in LIKELIHOODS:
        raise ValueError(f"vae.model.likelihood must be one of {LIKELIHOODS}, got "
                         f"{likelihood!r}")
    for name in ("num_latents", "encoder_hidden", "decoder_hidden"):
        if getattr(model_config, name) < 1:
            raise ValueError(f"vae.model.{name} must be positive, got "
                             f"{getattr(model_config, name)}")
    check_weight_init(model_config, "vae.model")
    height, width, _ = image_shape
    for name in ("encoder_widths", "decoder_widths"):
        widths = tuple(getattr(model_config, name))
        if not widths or min(widths) < 1:
            raise ValueError(f"vae.model.{name} must name at least one width, all positive; "
                             f"got {widths}")
        scale = 2 ** len(widths)
        if height % scale or width % scale:
            raise ValueError(
                f"vae.model.{name} has {len(widths)} stride-2 layers, so the images' height "
                f"and width must be divisible by {scale}; got {height}x{width}"
            )
    check_kernel_sizes(getattr(model_config, "encoder_kernel_sizes", None),
                       tuple(model_config.encoder_widths))


def check_weight_init(model_config, section: str) -> None:
    """ValueError unless the `weight_init` of `model_config` (the config section
    `section`; absent: "lecun_normal", a config written before the field) is a key of
    KERNEL_INITS."""
    weight_init = getattr(model_config, "weight_init", "lecun_normal")
    if weight_init not in KERNEL_INITS:
        raise ValueError(f"{section}.weight_init must be one of {tuple(KERNEL_INITS)}, got "
                         f"{weight_init!r}")


def check_kernel_sizes(kernel_sizes: Sequence[int] | None, widths: tuple[int, ...]) -> None:
    """ValueError unless `kernel_sizes` (vae.model.encoder_kernel_sizes) is None or one
    positive whole kernel side per encoder convolution."""
    if kernel_sizes is None:
        return
    sizes = tuple(kernel_sizes) if isinstance(kernel_sizes, (list, tuple)) else None
    if (sizes is None or len(sizes) != len(widths)
            or not all(isinstance(k, int) and not isinstance(k, bool) and k >= 1
                       for k in sizes)):
        raise ValueError(
            f"vae.model.encoder_kernel_sizes must give one positive whole kernel side per "
            f"encoder convolution ({len(widths)}, as vae.model.encoder_widths "
            f"{widths}), e.g. the study's (4, 4, 2, 2), or {(4,) * len(widths)} for this "
            f"project's earlier 4x4 throughout; got {kernel_sizes!r}")


def encode_to_vector(images: jax.Array, widths: Sequence[int], hidden: int, width: int,
                     activation: Callable[[jax.Array], jax.Array],
                     kernel_sizes: Sequence[int] | None = None,
                     kernel_init: Callable = nn.linear.default_kernel_init) -> jax.Array:
    """Images [B, H, W, ch] -> [B, width]: `downsample_stack` to `widths` (kernel sides
    `kernel_sizes`, None: 4), then an MLP (one `hidden` layer) on the flattened map,
    each layer but the last followed by `activation`, every kernel from `kernel_init`.
    Called inside a compact `__call__` (layers down0.., hidden, to_latent)."""
    x = downsample_stack(images, widths, activation, kernel_sizes, kernel_init)
    x = activation(nn.Dense(hidden, kernel_init=kernel_init, name="hidden")(
        x.reshape(x.shape[0], -1)))
    return nn.Dense(width, kernel_init=kernel_init, name="to_latent")(x)


def decode_to_image(latents: jax.Array, widths: Sequence[int], hidden: int,
                    image_shape: tuple[int, int, int],
                    activation: Callable[[jax.Array], jax.Array],
                    kernel_init: Callable = nn.linear.default_kernel_init) -> jax.Array:
    """Latents [B, d] -> [B, H, W, ch] (no output activation): an MLP (one `hidden`
    layer) to a [H/2^n, W/2^n, widths[0]] map, n = len(widths), then `upsample_stack`
    to widths[1:] and the image's channels; `activation` after every layer but the
    last, every kernel from `kernel_init`. Called inside a compact `__call__` (layers
    hidden, to_map, up0.., to_image)."""
    scale = 2 ** len(widths)
    map_shape = (image_shape[0] // scale, image_shape[1] // scale, widths[0])
    x = activation(nn.Dense(hidden, kernel_init=kernel_init, name="hidden")(latents))
    x = activation(nn.Dense(int(np.prod(map_shape)), kernel_init=kernel_init,
                            name="to_map")(x))
    return upsample_stack(x.reshape(x.shape[0], *map_shape), widths[1:], image_shape[-1],
                          activation, kernel_init)


class GaussianHead(nn.Module):
    """x [B, n] -> (mean, log-variance) of a conditional Gaussian, each [B, d]: one
    dense layer `hidden` of `hidden` units with `activation`, then a dense layer
    `to_latent` of 2d. LadderVAE's p(z_l | z_{l+1})."""

    hidden: int
    num_latents: int
    activation: Callable[[jax.Array], jax.Array] = nn.relu
    kernel_init: Callable = nn.linear.default_kernel_init

    @nn.compact
    def __call__(self, x: jax.Array) -> tuple[jax.Array, jax.Array]:
        x = self.activation(nn.Dense(self.hidden, kernel_init=self.kernel_init,
                                     name="hidden")(x))
        mean, log_variance = jnp.split(
            nn.Dense(2 * self.num_latents, kernel_init=self.kernel_init, name="to_latent")(x),
            2, axis=-1)
        return mean, log_variance


class GaussianEncoder(nn.Module):
    """Images [B, H, W, ch] in [0, 1] -> (mean, log-variance) of q(z | x), each [B, d]."""

    widths: Sequence[int]
    hidden: int
    num_latents: int
    kernel_sizes: Sequence[int] | None = None
    kernel_init: Callable = nn.linear.default_kernel_init

    @nn.compact
    def __call__(self, images: jax.Array) -> tuple[jax.Array, jax.Array]:
        posterior = encode_to_vector(images, self.widths, self.hidden, 2 * self.num_latents,
                                     nn.relu, self.kernel_sizes, self.kernel_init)
        mean, log_variance = jnp.split(posterior, 2, axis=-1)
        return mean, log_variance


class ImageDecoder(nn.Module):
    """Latents [B, d] -> logits [B, H, W, ch] of the pixels' means (`decode_to_image`,
    ReLU)."""

    widths: Sequence[int]
    hidden: int
    image_shape: tuple[int, int, int]
    kernel_init: Callable = nn.linear.default_kernel_init

    @nn.compact
    def __call__(self, latents: jax.Array) -> jax.Array:
        return decode_to_image(latents, self.widths, self.hidden, self.image_shape, nn.relu,
                               self.kernel_init)


class VAE(nn.Module):
    """A Gaussian-posterior VAE with a N(0, I) prior and pixels p(x | z) of
    `likelihood` (`LIKELIHOODS`).

    Every field but `image_shape` (the images') is a key of the config section
    `vae.model`, which holds their values (`likelihood` may be left out: Bernoulli);
    `check_vae_config` checks them when the module is constructed.
    """

    num_latents: int
    encoder_widths: Sequence[int]
    encoder_hidden: int
    decoder_widths: Sequence[int]
    decoder_hidden: int
    image_shape: tuple[int, int, int]
    likelihood: str = dataclasses.field(default="bernoulli", kw_only=True)
    # The study's encoder kernels are (4, 4, 2, 2); None is 4x4 everywhere, the network
    # of a config written before this field existed (so its checkpoints still load).
    encoder_kernel_sizes: Sequence[int] | None = dataclasses.field(default=None,
                                                                   kw_only=True)
    # A key of KERNEL_INITS; the configs name the study's "glorot_uniform", and a config
    # written before this field existed means Flax's "lecun_normal".
    weight_init: str = dataclasses.field(default="lecun_normal", kw_only=True)
    # XAE / XVAE: the explicit causal latent block between the latents and the decoder
    # (models/xblock.py); its num_units must be num_latents.
    xblock: XBlock | None = dataclasses.field(default=None, kw_only=True)

    def __post_init__(self):
        check_vae_config(self, self.image_shape)
        if self.xblock is not None and self.xblock.num_units != self.num_latents:
            raise ValueError(f"the XBlock has {self.xblock.num_units} units but the model "
                             f"{self.num_latents} latents (vae.model.num_latents)")
        super().__post_init__()

    def setup(self):
        kernel_init = KERNEL_INITS[self.weight_init]
        self.encoder = GaussianEncoder(self.encoder_widths, self.encoder_hidden,
                                       self.num_latents, self.encoder_kernel_sizes,
                                       kernel_init)
        self.decoder = ImageDecoder(self.decoder_widths, self.decoder_hidden,
                                    tuple(self.image_shape), kernel_init)

    def encode(self, images: jax.Array) -> tuple[jax.Array, jax.Array]:
        """Images [B, H, W, ch] in [0, 1] -> (mean, log-variance), each [B, d]."""
        if images.ndim != 4 or tuple(images.shape[1:]) != tuple(self.image_shape):
            raise ValueError(f"images must be [B, {', '.join(map(str, self.image_shape))}] "
                             f"floats in [0, 1]; got shape {images.shape}")
        return self.encoder(images)

    def causes(self, latents: jax.Array, step: jax.Array | None = None) -> jax.Array:
        """What the decoder reads: the XBlock's causal units X(latents) [B, d·unit
        size] (its mask's temperature that of training step `step`; None: the
        schedule's last), or the latents themselves without one."""
        return latents if self.xblock is None else self.xblock(latents, step)

    def decode(self, latents: jax.Array, step: jax.Array | None = None) -> jax.Array:
        """Latents [B, d] -> logits [B, H, W, ch] of the pixels' means (through the
        XBlock when there is one, at training step `step`: `causes`)."""
        if latents.ndim != 2 or latents.shape[-1] != self.num_latents:
            raise ValueError(f"latents must be [B, {self.num_latents}]; got shape "
                             f"{latents.shape}")
        return self.decoder(self.causes(latents, step))

    def __call__(self, images: jax.Array) -> dict[str, jax.Array]:
        """The deterministic pass (z = the posterior mean), for evaluation and figures:
        {mean, log_variance [B, d], logits, reconstruction = σ(logits) [B, H, W, ch]}."""
        mean, log_variance = self.encode(images)
        logits = self.decode(mean)
        return {"mean": mean, "log_variance": log_variance, "logits": logits,
                "reconstruction": jax.nn.sigmoid(logits)}


def check_discriminator_config(model_config) -> None:
    """Raises ValueError naming the first field of `model_config` (the section
    `vae.discriminator.model`, or a LatentDiscriminator) that is invalid."""
    for name in ("num_hidden_layers", "hidden_units"):
        if getattr(model_config, name) < 1:
            raise ValueError(f"vae.discriminator.model.{name} must be positive, got "
                             f"{getattr(model_config, name)}")
    check_weight_init(model_config, "vae.discriminator.model")


class LatentDiscriminator(nn.Module):
    """FactorVAE's discriminator (Kim & Mnih, "Disentangling by Factorising", ICML
    2018, §3): latent samples [B, d] -> logits [B, 2] of "drawn from q(z)" (column 0)
    and "drawn from the product of its marginals" (column 1), by an MLP of
    `num_hidden_layers` leaky-ReLU layers of `hidden_units`. Its fields are the keys
    of `vae.discriminator.model`, checked when the module is constructed."""

    num_hidden_layers: int
    hidden_units: int
    # A key of KERNEL_INITS; the configs name "glorot_uniform" (fc_discriminator's
    # tf.layers.dense default), a config written before this field Flax's default.
    weight_init: str = "lecun_normal"
    negative_slope = 0.2  # tf.nn.leaky_relu's, which disentanglement_lib uses

    def __post_init__(self):
        check_discriminator_config(self)
        super().__post_init__()

    @nn.compact
    def __call__(self, latents: jax.Array) -> jax.Array:
        x = latents
        kernel_init = KERNEL_INITS[self.weight_init]
        for layer in range(self.num_hidden_layers):
            dense = nn.Dense(self.hidden_units, kernel_init=kernel_init, name=f"hidden{layer}")
            x = nn.leaky_relu(dense(x), negative_slope=self.negative_slope)
        return nn.Dense(2, kernel_init=kernel_init, name="logits")(x)
