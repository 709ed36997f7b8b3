import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from causal_disent import models
from causal_disent.models.conv import (
    Decoder,
    Encoder,
    UpsampleConv,
    convolutions_as_matmuls,
    convolve,
    depth_to_space,
    downsample_stack,
    patch_matmul_conv,
)
from tests.helpers import tiny_config


def reference_transposed_conv(x, kernel, bias):
    """PyTorch ConvTranspose2d(k=4, s=2, p=1) by its definition, one image [H, W, in]."""
    height, width, _ = x.shape
    out = np.zeros((2 * height, 2 * width, kernel.shape[-1]))
    for i in range(height):
        for j in range(width):
            for ky in range(4):
                for kx in range(4):
                    oy, ox = 2 * i + ky - 1, 2 * j + kx - 1
                    if 0 <= oy < 2 * height and 0 <= ox < 2 * width:
                        out[oy, ox] += x[i, j] @ kernel[ky, kx]
    return out + bias


def test_upsample_conv_equals_transposed_convolution():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(2, 5, 4, 3)).astype(np.float32)
    module = UpsampleConv(6)
    params = module.init(jax.random.key(0), x)
    params = jax.tree.map(lambda a: rng.normal(size=a.shape).astype(np.float32), params)
    got = np.asarray(module.apply(params, x))
    expected = np.stack(
        [reference_transposed_conv(image, params["params"]["kernel"], params["params"]["bias"]) for image in x]
    )
    assert got.shape == (2, 10, 8, 6)
    np.testing.assert_allclose(got, expected, atol=1e-4)


def test_depth_to_space_places_phases():
    x = np.arange(2 * 2 * 4).reshape(1, 1, 2, 4 * 2)  # [B, H, W, (ry, rx, C=2)]
    y = np.asarray(depth_to_space(x))
    assert y.shape == (1, 2, 4, 2)
    # output (2m + ry, 2n + rx, c) = input (m, n, ry·4 + rx·2 + c)
    for ry in range(2):
        for rx in range(2):
            for n in range(2):
                for c in range(2):
                    assert y[0, ry, 2 * n + rx, c] == x[0, 0, n, ry * 4 + rx * 2 + c]


def reference_conv(x, kernel, strides, pads):
    """A convolution by its definition (cross-correlation), images [B, H, W, C]."""
    x = np.pad(x, ((0, 0), *pads, (0, 0)))
    kh, kw, _, features = kernel.shape
    out_h = (x.shape[1] - kh) // strides[0] + 1
    out_w = (x.shape[2] - kw) // strides[1] + 1
    out = np.zeros((x.shape[0], out_h, out_w, features))
    for i in range(out_h):
        for j in range(out_w):
            window = x[:, i * strides[0]:i * strides[0] + kh, j * strides[1]:j * strides[1] + kw]
            out[:, i, j] = np.einsum("bhwc,hwco->bo", window, kernel)
    return out


# (image H, W; kernel side; strides; padding): the VAE family's stride-2 'SAME' layers
# (4x4 and 2x2 kernels), UpsampleConv's 3x3 with one pixel of padding, odd sides.
CASES = [((8, 8), 4, (2, 2), "SAME"), ((8, 8), 2, (2, 2), "SAME"),
         ((5, 4), 3, (1, 1), ((1, 1), (1, 1))), ((7, 5), 3, (2, 1), "SAME"),
         ((6, 6), 3, (1, 1), "VALID")]


@pytest.mark.parametrize("shape, side, strides, padding", CASES)
def test_patch_matmul_conv_is_the_convolution(shape, side, strides, padding):
    rng = np.random.default_rng(1)
    x = rng.normal(size=(2, *shape, 3)).astype(np.float32)
    kernel = rng.normal(size=(side, side, 3, 5)).astype(np.float32)
    pads = (jax.lax.padtype_to_pads(shape, (side, side), strides, padding)
            if isinstance(padding, str) else padding)
    expected = reference_conv(x, kernel, strides, pads)
    np.testing.assert_allclose(patch_matmul_conv(x, kernel, strides, padding), expected,
                               atol=1e-4)
    np.testing.assert_allclose(convolve(x, kernel, strides, padding), expected, atol=1e-4)


def stacked_encoder_gradients() -> tuple[str, dict]:
    """The lowered text and the values of the kernel gradients of a two-layer
    downsample_stack, vmapped over 2 seeds' images and kernels (as a stacked step runs
    it), traced afresh (a function traced once is not traced again)."""

    class Stack(nn.Module):
        @nn.compact
        def __call__(self, x):
            return downsample_stack(x, (4, 6), nn.relu, (4, 2))

    module = Stack()
    images = jax.random.normal(jax.random.key(1), (2, 3, 8, 8, 1))
    params = jax.vmap(module.init)(jax.random.split(jax.random.key(0), 2), images)
    gradient = jax.jit(jax.vmap(jax.grad(lambda p, x: jnp.sum(jnp.tanh(module.apply(p, x))))))
    return gradient.lower(params, images).as_text(), gradient(params, images)


def test_convolutions_as_matmuls_leave_no_convolution_and_the_same_gradients():
    plain_hlo, plain = stacked_encoder_gradients()
    with convolutions_as_matmuls():
        matmul_hlo, as_matmuls = stacked_encoder_gradients()
    assert "convolution" in plain_hlo and "convolution" not in matmul_hlo
    assert "dot_general" in matmul_hlo
    jax.tree.map(lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6),
                 as_matmuls, plain)


def test_dilated_or_grouped_convolutions_stay_convolutions():
    x, kernel = jnp.ones((1, 6, 6, 2)), jnp.ones((3, 3, 1, 2))
    with convolutions_as_matmuls():
        hlo = jax.jit(lambda x, k: convolve(x, k, (1, 1), "SAME", feature_group_count=2)
                      ).lower(x, kernel).as_text()
    assert "convolution" in hlo


def leaky(x):
    return np.where(x > 0, x, 0.01 * x)


def reference_residual_stack(x, blocks, inside=lambda h: np.maximum(h, 0)):
    """The authors' ResidualLayer x + Conv1×1(ReLU(Conv3×3(x))) (no biases) per block,
    then LeakyReLU."""
    for block in blocks:
        hidden = inside(reference_conv(x, block["conv3x3"]["kernel"], (1, 1), ((1, 1), (1, 1))))
        x = x + reference_conv(hidden, block["conv1x1"]["kernel"], (1, 1), ((0, 0), (0, 0)))
    return leaky(x)


def random_params(module, x, seed):
    rng = np.random.default_rng(seed)
    params = module.init(jax.random.key(0), x)["params"]
    return jax.tree.map(lambda a: rng.normal(scale=0.3, size=a.shape), params)


def test_encoder_and_decoder_follow_the_authors_layers():
    """The MCQ-VAE's encoder and decoder as the authors' nn.Sequential lists them, in
    NumPy: LeakyReLU(0.01) after every convolution but the last decoder layer (tanh),
    the 3×3 ones included, and ReLU inside the residual blocks."""
    images = np.random.default_rng(2).uniform(size=(2, 8, 8, 3))
    encoder = Encoder(downsample_widths=(4, 6), hidden_width=6, num_res_blocks=2,
                      res_hidden=5, latent_dim=4)
    params = random_params(encoder, images, 3)
    x = images
    for name in ("down0", "down1"):
        x = leaky(reference_conv(x, params[name]["kernel"], (2, 2), ((1, 1), (1, 1)))
                  + params[name]["bias"])
    x = leaky(reference_conv(x, params["conv_in"]["kernel"], (1, 1), ((1, 1), (1, 1)))
              + params["conv_in"]["bias"])
    x = reference_residual_stack(x, [params["res"]["block0"], params["res"]["block1"]])
    expected = leaky(reference_conv(x, params["to_latent"]["kernel"], (1, 1), ((0, 0), (0, 0)))
                     + params["to_latent"]["bias"])
    latents = np.asarray(encoder.apply({"params": params}, images))
    np.testing.assert_allclose(latents, expected, rtol=1e-4, atol=1e-4)

    decoder = Decoder(upsample_widths=(6,), hidden_width=6, num_res_blocks=2, res_hidden=5,
                      out_channels=3)
    params = random_params(decoder, latents, 4)
    x = leaky(reference_conv(latents, params["conv_in"]["kernel"], (1, 1), ((1, 1), (1, 1)))
              + params["conv_in"]["bias"])
    x = reference_residual_stack(x, [params["res"]["block0"], params["res"]["block1"]])
    def transposed(x, layer):
        return np.stack([reference_transposed_conv(image, params[layer]["kernel"],
                                                   params[layer]["bias"]) for image in x])

    expected = np.tanh(transposed(leaky(transposed(x, "up0")), "to_image"))
    got = np.asarray(decoder.apply({"params": params}, latents))
    assert got.shape == (2, 8, 8, 3)
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4)


def test_leaky_relu_in_blocks_is_the_network_before_it_followed_the_authors():
    """`activations="leaky_relu_in_blocks"`: LeakyReLU inside the residual blocks and
    nothing after conv_in, so that stage-1 workdirs trained before the change encode as
    trained; an MCQ-VAE section without the key (written before it existed) or with its
    former name "earlier" builds it."""
    images = np.random.default_rng(5).uniform(size=(2, 8, 8, 3))
    encoder = Encoder(downsample_widths=(4,), hidden_width=6, num_res_blocks=1,
                      res_hidden=5, latent_dim=4, activations="leaky_relu_in_blocks")
    params = random_params(encoder, images, 6)
    x = leaky(reference_conv(images, params["down0"]["kernel"], (2, 2), ((1, 1), (1, 1)))
              + params["down0"]["bias"])
    x = (reference_conv(x, params["conv_in"]["kernel"], (1, 1), ((1, 1), (1, 1)))
         + params["conv_in"]["bias"])
    x = reference_residual_stack(x, [params["res"]["block0"]], inside=leaky)
    expected = leaky(reference_conv(x, params["to_latent"]["kernel"], (1, 1), ((0, 0), (0, 0)))
                     + params["to_latent"]["bias"])
    np.testing.assert_allclose(encoder.apply({"params": params}, images), expected,
                               rtol=1e-4, atol=1e-4)

    section = tiny_config().mcqvae.model
    assert section.activations == "authors"
    del section["activations"]
    assert models.build_mcqvae(section, out_channels=3).activations == "leaky_relu_in_blocks"
    formerly_named = encoder.clone(activations="earlier")
    np.testing.assert_array_equal(formerly_named.apply({"params": params}, images),
                                  encoder.apply({"params": params}, images))
