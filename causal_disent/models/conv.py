"""Convolutional encoder and decoder of the MCQ-VAE (Gendron et al., "Disentanglement
of Latent Representations via Causal Interventions", IJCAI 2023, §3.3), built like the
VQ-VAE's (van den Oord et al., "Neural Discrete Representation Learning", NeurIPS
2017): strided convolutions and residual blocks.

The reference sizes (64×64 input) are the authors': three 4×4/2 convolutions
(64, 128, 256 channels), a 3×3 convolution, six bias-free residual blocks and a
1×1 projection to D channels; the decoder mirrors it with transposed convolutions.
Every width is a constructor argument so that small variants can shrink them.

`downsample_stack` and `upsample_stack` are also CausalVAE's encoder and decoder
convolutions (models/causalvae.py).
"""

from collections.abc import Callable, Sequence

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np


def leaky_relu(x: jax.Array) -> jax.Array:
    # The authors use LeakyReLU(0.01) everywhere.
    return nn.leaky_relu(x, negative_slope=0.01)


# Which of a 4-tap transposed-convolution kernel's taps (k) each output phase r of a
# stride-2 upsampling reads from input offset d ∈ {−1, 0, +1}; 4 marks "no tap".
# From out[2m + r] = Σ in[m + d]·w[k] with 2(m + d) + k − 1 = 2m + r.
_TAP_FOR_OFFSET_AND_PHASE = np.array([[3, 4], [1, 2], [4, 0]])  # [d + 1, r]


def subpixel_kernel(kernel: jax.Array) -> jax.Array:
    """4×4 stride-2 transposed-conv kernel [4, 4, in, out] -> the equivalent 3×3
    stride-1 kernel [3, 3, in, 4·out] whose output channels are (row phase, column
    phase, out) for a depth-to-space rearrangement."""
    padded = jnp.pad(kernel, ((0, 1), (0, 1), (0, 0), (0, 0)))  # index 4 is zero
    taps = _TAP_FOR_OFFSET_AND_PHASE
    # [dy, ry, dx, rx, in, out] -> [dy, dx, in, ry, rx, out]
    gathered = padded[taps[:, :, None, None], taps[None, None, :, :]]
    gathered = gathered.transpose(0, 2, 4, 1, 3, 5)
    three, _, cin, _, _, cout = gathered.shape
    return gathered.reshape(three, three, cin, 4 * cout)


def depth_to_space(x: jax.Array) -> jax.Array:
    """[B, H, W, (2, 2, C)] -> [B, 2H, 2W, C]."""
    batch, height, width, channels = x.shape
    x = x.reshape(batch, height, width, 2, 2, channels // 4)
    return x.transpose(0, 1, 3, 2, 4, 5).reshape(batch, 2 * height, 2 * width, -1)


class UpsampleConv(nn.Module):
    """A 4×4 stride-2 transposed convolution (PyTorch ConvTranspose2d(k=4, s=2,
    p=1): out[o] = Σ_{o = 2i + k − 1} in[i]·w[k]), output 2H×2W.

    Same parameters as the transposed convolution, computed as a 3×3 convolution
    to 4× the channels plus depth-to-space. XLA's CPU backend differentiates
    transposed convolutions very slowly (10-40× a plain convolution here); this
    form is exact and fast everywhere.
    """

    features: int
    # The kernel is stored [4, 4, in, out]: fan-in 16·in, fan-out 16·out.
    kernel_init: Callable = nn.initializers.lecun_normal(in_axis=(0, 1, 2), out_axis=3)

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        in_features = x.shape[-1]
        kernel = self.param("kernel", self.kernel_init, (4, 4, in_features, self.features))
        bias = self.param("bias", nn.initializers.zeros, (self.features,))
        y = jax.lax.conv_general_dilated(
            x, subpixel_kernel(kernel).astype(x.dtype), window_strides=(1, 1),
            padding=((1, 1), (1, 1)), dimension_numbers=("NHWC", "HWIO", "NHWC"),
        )
        return depth_to_space(y) + bias


def downsample_stack(
    x: jax.Array,
    widths: Sequence[int],
    activation: Callable[[jax.Array], jax.Array],
    kernel_sizes: Sequence[int] | None = None,
    kernel_init: Callable = nn.linear.default_kernel_init,
) -> jax.Array:
    """A stride-2 convolution ('SAME' padding) to each of `widths` in turn, each
    followed by `activation`: [B, H, W, ch] -> [B, H/2^d, W/2^d, widths[-1]],
    d = len(widths). Layer i's kernel is k×k, k = kernel_sizes[i] (4 for every layer
    when None). Called inside a compact `__call__`, so its layers (down0, down1, ...)
    belong to that module."""
    kernel_sizes = kernel_sizes or (4,) * len(widths)
    for i, (width, size) in enumerate(zip(widths, kernel_sizes, strict=True)):
        conv = nn.Conv(width, (size, size), strides=(2, 2), kernel_init=kernel_init,
                       name=f"down{i}")
        x = activation(conv(x))
    return x


def upsample_stack(
    x: jax.Array,
    widths: Sequence[int],
    channels: int,
    activation: Callable[[jax.Array], jax.Array],
    kernel_init: Callable | None = None,
) -> jax.Array:
    """A 2× upsampling to each of `widths` in turn, each followed by `activation`, then
    one more to `channels` outputs with no activation: [B, h, w, F] ->
    [B, h·2^(d+1), w·2^(d+1), channels], d = len(widths). `kernel_init` (None:
    UpsampleConv's LeCun normal) initialises every [4, 4, in, out] kernel. Called inside
    a compact `__call__`, so its layers (up0, up1, ..., to_image) belong to that
    module."""
    init = {} if kernel_init is None else {"kernel_init": kernel_init}
    for i, width in enumerate(widths):
        x = activation(UpsampleConv(width, name=f"up{i}", **init)(x))
    return UpsampleConv(channels, name="to_image", **init)(x)


class ResidualBlock(nn.Module):
    """x + Conv1×1(act(Conv3×3(x))), convolutions without bias."""

    hidden: int

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        channels = x.shape[-1]
        h = nn.Conv(self.hidden, (3, 3), use_bias=False, name="conv3x3")(x)
        h = nn.Conv(channels, (1, 1), use_bias=False, name="conv1x1")(leaky_relu(h))
        return x + h


class ResidualStack(nn.Module):
    num_blocks: int
    hidden: int

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        for i in range(self.num_blocks):
            x = ResidualBlock(self.hidden, name=f"block{i}")(x)
        return leaky_relu(x)


class Encoder(nn.Module):
    """Images [B, H, W, ch] in [0, 1] -> latents [B, H/2^d, W/2^d, D]."""

    downsample_widths: Sequence[int]
    hidden_width: int
    num_res_blocks: int
    res_hidden: int
    latent_dim: int

    @nn.compact
    def __call__(self, images: jax.Array) -> jax.Array:
        x = downsample_stack(images, self.downsample_widths, leaky_relu)
        x = nn.Conv(self.hidden_width, (3, 3), name="conv_in")(x)
        x = ResidualStack(self.num_res_blocks, self.res_hidden, name="res")(x)
        return leaky_relu(nn.Conv(self.latent_dim, (1, 1), name="to_latent")(x))


class Decoder(nn.Module):
    """Quantised latents [B, h, w, D] -> images [B, h·2^d, w·2^d, ch] (tanh)."""

    upsample_widths: Sequence[int]
    hidden_width: int
    num_res_blocks: int
    res_hidden: int
    out_channels: int

    @nn.compact
    def __call__(self, latents: jax.Array) -> jax.Array:
        x = nn.Conv(self.hidden_width, (3, 3), name="conv_in")(latents)
        x = ResidualStack(self.num_res_blocks, self.res_hidden, name="res")(x)
        return jnp.tanh(upsample_stack(x, self.upsample_widths, self.out_channels, leaky_relu))
