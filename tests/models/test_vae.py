"""The VAE family's network and FactorVAE's discriminator: the study's layer sizes,
output shapes, and config checks that name the field before anything is traced."""

import json

import jax
import jax.numpy as jnp
import ml_collections
import numpy as np
import pytest

from causal_disent import models
from causal_disent.models.vae import LatentDiscriminator, check_discriminator_config
from configs import betavae_dsprites_synth, factorvae_dsprites_synth

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


def discriminator_section(variant=None, **fields):
    model_config = factorvae_dsprites_synth.get_config(variant).vae.discriminator.model
    model_config.update(fields)
    return model_config


def test_discriminator_has_the_studys_sizes_and_two_logits():
    discriminator = LatentDiscriminator(**discriminator_section())
    params = jax.eval_shape(discriminator.init, jax.random.key(0), jnp.zeros((1, 10)))
    kernels = {name: layer["kernel"].shape for name, layer in params["params"].items()}
    assert kernels == {"hidden0": (10, 1000), **{f"hidden{i}": (1000, 1000)
                                                 for i in range(1, 6)},
                       "logits": (1000, 2)}
    tiny = LatentDiscriminator(**discriminator_section("tiny"))
    latents = jnp.linspace(-2, 2, 12).reshape(4, 3)
    variables = tiny.init(jax.random.key(0), latents)
    assert tiny.apply(variables, latents).shape == (4, 2)
    # Leaky ReLU with slope 0.2: one unit, weights 1, bias 0, then the identity.
    one = LatentDiscriminator(num_hidden_layers=1, hidden_units=1)
    unit = {"hidden0": {"kernel": jnp.ones((1, 1)), "bias": jnp.zeros(1)},
            "logits": {"kernel": jnp.ones((1, 2)), "bias": jnp.zeros(2)}}
    logits = one.apply({"params": unit}, jnp.array([[-5.0], [3.0]]))
    np.testing.assert_allclose(logits, [[-1.0, -1.0], [3.0, 3.0]], rtol=1e-6)


@pytest.mark.parametrize("fields, message", [
    (dict(num_hidden_layers=0), "vae.discriminator.model.num_hidden_layers must be positive"),
    (dict(hidden_units=-1), "vae.discriminator.model.hidden_units must be positive, got -1"),
])
def test_discriminator_check_names_the_field(fields, message):
    with pytest.raises(ValueError, match=message):
        check_discriminator_config(discriminator_section(**fields))
    with pytest.raises(ValueError, match=message):
        LatentDiscriminator(**discriminator_section(**fields))
