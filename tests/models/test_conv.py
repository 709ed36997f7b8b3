import jax
import numpy as np

from causal_disent.models.conv import UpsampleConv, depth_to_space


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
