"""The VAE family's network: the study's layer sizes, output shapes, and config checks
that name the field before anything is traced."""

import json

import jax
import jax.numpy as jnp
import ml_collections
import numpy as np
import pytest

from causal_disent import models
from configs import betavae_dsprites_synth

IMAGE_SHAPE = (64, 64, 1)


def vae_section(variant=None, **fields):
    model_config = betavae_dsprites_synth.get_config(variant).vae.model
    model_config.update(fields)
    return model_config


def test_base_config_has_the_studys_layer_sizes():
    model = models.build_vae(vae_section(), IMAGE_SHAPE)
    params = jax.eval_shape(model.init, jax.random.key(0), jnp.zeros((1, *IMAGE_SHAPE)))
    kernels = jax.tree.map(lambda x: x.shape, params["params"])
    encoder, decoder = kernels["encoder"], kernels["decoder"]
    assert [encoder[f"down{i}"]["kernel"] for i in range(4)] == [
        (4, 4, 1, 32), (4, 4, 32, 32), (4, 4, 32, 64), (4, 4, 64, 64)]
    assert encoder["hidden"]["kernel"] == (4 * 4 * 64, 256)
    assert encoder["to_latent"]["kernel"] == (256, 2 * 10)  # mean and log-variance
    assert decoder["hidden"]["kernel"] == (10, 256)
    assert decoder["to_map"]["kernel"] == (256, 4 * 4 * 64)
    assert [decoder[name]["kernel"] for name in ("up0", "up1", "up2", "to_image")] == [
        (4, 4, 64, 64), (4, 4, 64, 32), (4, 4, 32, 32), (4, 4, 32, 1)]


def test_tiny_model_encodes_decodes_and_reconstructs_with_the_right_shapes():
    model = models.build_vae(vae_section("tiny"), IMAGE_SHAPE)
    images = jnp.linspace(0, 1, 2 * 64 * 64).reshape(2, *IMAGE_SHAPE)
    variables = model.init(jax.random.key(0), images)
    outputs = model.apply(variables, images)
    assert outputs["mean"].shape == outputs["log_variance"].shape == (2, 3)
    assert outputs["logits"].shape == outputs["reconstruction"].shape == (2, *IMAGE_SHAPE)
    np.testing.assert_allclose(outputs["reconstruction"], jax.nn.sigmoid(outputs["logits"]))
    mean, log_variance = model.apply(variables, images, method=model.encode)
    np.testing.assert_array_equal(mean, outputs["mean"])
    np.testing.assert_array_equal(log_variance, outputs["log_variance"])
    logits = model.apply(variables, jnp.ones((5, 3)), method=model.decode)
    assert logits.shape == (5, *IMAGE_SHAPE)
    with pytest.raises(ValueError, match=r"images must be \[B, 64, 64, 1\]"):
        model.apply(variables, images[:, :32], method=model.encode)
    with pytest.raises(ValueError, match=r"latents must be \[B, 3\]"):
        model.apply(variables, jnp.ones((5, 4)), method=model.decode)


VAE_ERRORS = [
    (dict(num_latents=0), IMAGE_SHAPE, "vae.model.num_latents must be positive, got 0"),
    (dict(encoder_hidden=-1), IMAGE_SHAPE, "vae.model.encoder_hidden must be positive"),
    (dict(encoder_widths=()), IMAGE_SHAPE, "vae.model.encoder_widths must name at least one"),
    (dict(), (60, 60, 1), r"vae.model.encoder_widths has 4 stride-2 layers, so the images' "
                          r"height and width must be divisible by 16; got 60x60"),
    (dict(decoder_widths=(8,) * 7), IMAGE_SHAPE, "vae.model.decoder_widths has 7 stride-2 "
                                                 "layers.*divisible by 128"),
]


@pytest.mark.parametrize("fields, image_shape, message", VAE_ERRORS)
def test_check_and_build_name_the_field(fields, image_shape, message):
    with pytest.raises(ValueError, match=message):
        models.check_vae_config(vae_section(**fields), image_shape)
    with pytest.raises(ValueError, match=message):
        models.build_vae(vae_section(**fields), image_shape)


def test_a_section_read_back_from_json_builds_an_equal_hashable_module():
    config = betavae_dsprites_synth.get_config("tiny")
    read_back = ml_collections.ConfigDict(json.loads(config.to_json_best_effort()))
    assert isinstance(read_back.vae.model.encoder_widths, list)
    built = models.build_vae(config.vae.model, IMAGE_SHAPE)
    rebuilt = models.build_vae(read_back.vae.model, IMAGE_SHAPE)
    assert rebuilt == built and hash(rebuilt) == hash(built)
