import jax
import jax.numpy as jnp
import numpy as np
import pytest

from causal_disent import models
from configs import ctvae_shapes3d
from tests.helpers import tiny_config


def conv_params(kernel, cin, cout, bias=True):
    return kernel * kernel * cin * cout + (cout if bias else 0)


def expected_parameter_count(m, out_channels):
    widths = list(m.downsample_widths)
    res = m.num_res_blocks * (
        conv_params(3, m.hidden_width, m.res_hidden, False)
        + conv_params(1, m.res_hidden, m.hidden_width, False)
    )
    encoder = sum(conv_params(4, cin, cout) for cin, cout in zip([out_channels] + widths, widths))
    encoder += conv_params(3, widths[-1], m.hidden_width) + res
    encoder += conv_params(1, m.hidden_width, m.latent_dim)
    codebooks = m.num_codebooks * m.num_codes * (m.latent_dim // m.num_codebooks)
    up = [m.hidden_width] + widths[::-1][1:] + [out_channels]
    decoder = conv_params(3, m.latent_dim, m.hidden_width) + res
    decoder += sum(conv_params(4, cin, cout) for cin, cout in zip(up, up[1:]))
    return encoder + codebooks + decoder


def init_shapes(model_config, batch=2):
    model = models.build_mcqvae(model_config, out_channels=3)
    images = jnp.zeros((batch, 64, 64, 3))
    params = jax.eval_shape(model.init, jax.random.key(0), images)["params"]
    outputs = jax.eval_shape(lambda p: model.apply({"params": p}, images), params)
    return params, outputs


@pytest.mark.parametrize("num_codebooks", [1, 4])
def test_paper_size_shapes_and_parameter_count(num_codebooks):
    """The CT-VAE authors' one codebook (the default) and their stand-alone
    MCQ-VAE's four: the same parameter count, C codebooks of D/C channels."""
    model_config = ctvae_shapes3d.get_config().mcqvae.model
    assert model_config.num_codebooks == 1
    model_config.num_codebooks = num_codebooks
    params, outputs = init_shapes(model_config)
    count = sum(p.size for p in jax.tree.leaves(params))
    assert count == expected_parameter_count(model_config, 3)
    # At the authors' sizes (models/conv.py) the MCQ-VAE has ≈ 10.1 M parameters.
    assert abs(count - 10.1e6) < 0.05e6
    assert params["quantizer"]["codebooks"].shape == (num_codebooks, 64, 128 // num_codebooks)
    assert outputs["latents"].shape == (2, 8, 8, 128)
    assert outputs["codes"].shape == (2, num_codebooks, 8, 8)
    assert outputs["reconstruction"].shape == (2, 64, 64, 3)
    assert outputs["perplexity"].shape == outputs["usage"].shape == (num_codebooks,)


def test_small_variant_parameter_count():
    model_config = ctvae_shapes3d.get_config("small").mcqvae.model
    params, outputs = init_shapes(model_config)
    assert sum(p.size for p in jax.tree.leaves(params)) == expected_parameter_count(model_config, 3)
    assert outputs["codes"].shape == (2, 1, 8, 8)  # N = 64 causal variables


def test_codes_round_trip_matches_forward_pass():
    model = models.build_mcqvae(tiny_config().mcqvae.model, out_channels=3)
    images = jnp.asarray(np.random.default_rng(0).uniform(size=(2, 64, 64, 3)), jnp.float32)
    variables = model.init(jax.random.key(0), images)
    outputs = model.apply(variables, images)
    codes = model.apply(variables, images, method=model.encode_codes)
    decoded = model.apply(variables, codes, method=model.decode_codes)
    np.testing.assert_array_equal(codes, outputs["codes"])
    np.testing.assert_allclose(decoded, outputs["reconstruction"], atol=1e-5)
    assert float(jnp.abs(outputs["reconstruction"]).max()) <= 1.0  # tanh output
