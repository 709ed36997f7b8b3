"""Convolutional encoder and decoder of the MCQ-VAE (Gendron et al., "Disentanglement
of Latent Representations via Causal Interventions", IJCAI 2023, §3.3), built like the
VQ-VAE's (van den Oord et al., "Neural Discrete Representation Learning", NeurIPS
2017): strided convolutions and residual blocks.

The reference sizes (64×64 input) are the authors': three 4×4/2 convolutions
(64, 128, 256 channels), a 3×3 convolution, six bias-free residual blocks and a
1×1 projection to D channels; the decoder mirrors it with transposed convolutions.
Every width is a constructor argument so that small variants can shrink them.
The activations are theirs too (`activations="authors"`): LeakyReLU(0.01) after
every convolution outside the residual blocks (the 3×3 ones included), ReLU inside
them. "leaky_relu_in_blocks" puts LeakyReLU inside the blocks and nothing after the
3×3 convolutions: the network of stage-1 workdirs trained before the library
followed the authors', kept so that they load and encode as they were trained.

`downsample_stack` and `upsample_stack` are also CausalVAE's encoder and decoder
convolutions (models/causalvae.py).
"""

import contextlib
import contextvars
from collections.abc import Callable, Sequence

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np


def leaky_relu(x: jax.Array) -> jax.Array:
    # The authors' activation everywhere but inside a residual block: LeakyReLU(0.01).
    return nn.leaky_relu(x, negative_slope=0.01)


def identity(x: jax.Array) -> jax.Array:
    return x


# `mcqvae.model.activations`: (inside a residual block, after the 3×3 conv_in).
ACTIVATIONS: dict[str, tuple[Callable, Callable]] = {
    "authors": (nn.relu, leaky_relu),
    "leaky_relu_in_blocks": (leaky_relu, identity),
}
# What a workdir's config.json may call them from before they were named by what
# they are; a config without the field means the network of that time.
FORMER_ACTIVATIONS_NAMES = {"earlier": "leaky_relu_in_blocks"}
ACTIVATIONS_BEFORE_THE_FIELD = "leaky_relu_in_blocks"


def activations_of(name: str) -> tuple[Callable, Callable]:
    """(inside a residual block, after conv_in) of ACTIVATIONS' `name`, or of the one a
    former name stands for."""
    return ACTIVATIONS[FORMER_ACTIVATIONS_NAMES.get(name, name)]


# Whether `convolve` is traced as a convolution (False) or as strided slices and one
# matmul (True); set by `convolutions_as_matmuls`.
_AS_MATMULS = contextvars.ContextVar("convolutions_as_matmuls", default=False)
_NHWC = ("NHWC", "HWIO", "NHWC")


@contextlib.contextmanager
def convolutions_as_matmuls():
    """Traces this module's convolutions (`downsample_stack`, `UpsampleConv`) inside
    the block as matmuls over image patches: the same values up to float rounding.

    Why: under `jax.vmap` over both images and kernels (several seeds' models in one
    step, train/seed_stacking.py) a convolution and its gradients become grouped
    convolutions, which XLA:CPU runs several times slower than the same
    convolutions one by one (benchmarks/seed_stacking.py), while a matmul becomes
    one batched matmul. The cost is memory: a layer's patches (kh·kw times the
    channels at every output position) and their gradient are materialised (eight
    β-VAE :small models at batch 64, compiled for a CPU: 2015 MB of temporaries
    against 496 vmapped with convolutions, benchmarks/seed_stacking.py). The form
    is chosen at trace time, like `jax.default_matmul_precision`, so the block must
    enclose the tracing of the function (e.g. the body of the jitted step)."""
    token = _AS_MATMULS.set(True)
    try:
        yield
    finally:
        _AS_MATMULS.reset(token)


def convolve(x: jax.Array, kernel: jax.Array, window_strides: Sequence[int],
             padding: str | Sequence[tuple[int, int]], **options) -> jax.Array:
    """`lax.conv_general_dilated` of NHWC images and an HWIO kernel, with flax
    `nn.Conv`'s signature (its `conv_general_dilated` hook); inside
    `convolutions_as_matmuls`, computed by `patch_matmul_conv` where it can be
    (no dilation, no feature groups)."""
    plain = x.ndim == 4 and all(
        options.get(name) in (None, 1, (1, 1))
        for name in ("lhs_dilation", "rhs_dilation", "feature_group_count"))
    if _AS_MATMULS.get() and plain:
        return patch_matmul_conv(x, kernel, window_strides, padding)
    options.setdefault("dimension_numbers", _NHWC)
    return jax.lax.conv_general_dilated(x, kernel, window_strides, padding, **options)


def patch_matmul_conv(x: jax.Array, kernel: jax.Array, window_strides: Sequence[int],
                      padding: str | Sequence[tuple[int, int]]) -> jax.Array:
    """The convolution of images x [B, H, W, C] with kernel [kh, kw, C, O] as one
    matmul: the kh·kw strided slices of the padded images (one per kernel tap)
    against the kernel's taps, contracted over (tap, C) -> [B, H', W', O]."""
    batch, height, width, channels = x.shape
    kh, kw, _, features = kernel.shape
    sh, sw = window_strides
    if isinstance(padding, str):  # "SAME" or "VALID"
        pads = jax.lax.padtype_to_pads((height, width), (kh, kw), (sh, sw), padding)
    else:
        pads = tuple(tuple(pad) for pad in padding)
    padded = jnp.pad(x, ((0, 0), *pads, (0, 0)))
    out_h = (padded.shape[1] - kh) // sh + 1
    out_w = (padded.shape[2] - kw) // sw + 1
    taps = [jax.lax.slice(padded, (0, i, j, 0),
                          (batch, i + (out_h - 1) * sh + 1, j + (out_w - 1) * sw + 1, channels),
                          (1, sh, sw, 1))
            for i in range(kh) for j in range(kw)]
    patches = jnp.stack(taps, axis=3)  # [B, H', W', kh·kw, C]
    return jnp.einsum("bhwtc,tco->bhwo", patches,
                      kernel.reshape(kh * kw, channels, features))


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
        y = convolve(x, subpixel_kernel(kernel).astype(x.dtype), (1, 1), ((1, 1), (1, 1)))
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
                       conv_general_dilated=convolve, name=f"down{i}")
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
    """x + Conv1×1(act(Conv3×3(x))), convolutions without bias; act is ReLU in
    VQ-VAE's block, which the MCQ-VAE authors keep (LeakyReLU elsewhere)."""

    hidden: int
    activation: Callable[[jax.Array], jax.Array] = nn.relu

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        channels = x.shape[-1]
        h = nn.Conv(self.hidden, (3, 3), use_bias=False, name="conv3x3")(x)
        h = nn.Conv(channels, (1, 1), use_bias=False, name="conv1x1")(self.activation(h))
        return x + h


class ResidualStack(nn.Module):
    num_blocks: int
    hidden: int
    activation: Callable[[jax.Array], jax.Array] = nn.relu  # inside each block

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        for i in range(self.num_blocks):
            x = ResidualBlock(self.hidden, self.activation, name=f"block{i}")(x)
        return leaky_relu(x)


class Encoder(nn.Module):
    """Images [B, H, W, ch] in [0, 1] -> latents [B, H/2^d, W/2^d, D]."""

    downsample_widths: Sequence[int]
    hidden_width: int
    num_res_blocks: int
    res_hidden: int
    latent_dim: int
    activations: str = "authors"  # a key of ACTIVATIONS

    @nn.compact
    def __call__(self, images: jax.Array) -> jax.Array:
        inside_blocks, after_conv_in = activations_of(self.activations)
        x = downsample_stack(images, self.downsample_widths, leaky_relu)
        x = after_conv_in(nn.Conv(self.hidden_width, (3, 3), name="conv_in")(x))
        x = ResidualStack(self.num_res_blocks, self.res_hidden, inside_blocks, name="res")(x)
        return leaky_relu(nn.Conv(self.latent_dim, (1, 1), name="to_latent")(x))


class Decoder(nn.Module):
    """Quantised latents [B, h, w, D] -> images [B, h·2^d, w·2^d, ch] (tanh)."""

    upsample_widths: Sequence[int]
    hidden_width: int
    num_res_blocks: int
    res_hidden: int
    out_channels: int
    activations: str = "authors"  # a key of ACTIVATIONS

    @nn.compact
    def __call__(self, latents: jax.Array) -> jax.Array:
        inside_blocks, after_conv_in = activations_of(self.activations)
        x = after_conv_in(nn.Conv(self.hidden_width, (3, 3), name="conv_in")(latents))
        x = ResidualStack(self.num_res_blocks, self.res_hidden, inside_blocks, name="res")(x)
        return jnp.tanh(upsample_stack(x, self.upsample_widths, self.out_channels, leaky_relu))
