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
    # disentanglement_lib methods/shared/architectures.py, conv_encoder: kernel_size
    # 4, 4, 2, 2 for the four stride-2 convolutions.
    assert [encoder[f"down{i}"]["kernel"] for i in range(4)] == [
        (4, 4, 1, 32), (4, 4, 32, 32), (2, 2, 32, 64), (2, 2, 64, 64)]
    assert encoder["hidden"]["kernel"] == (4 * 4 * 64, 256)
    assert encoder["to_latent"]["kernel"] == (256, 2 * 10)  # mean and log-variance
    assert decoder["hidden"]["kernel"] == (10, 256)
    assert decoder["to_map"]["kernel"] == (256, 4 * 4 * 64)
    assert [decoder[name]["kernel"] for name in ("up0", "up1", "up2", "to_image")] == [
        (4, 4, 64, 64), (4, 4, 64, 32), (4, 4, 32, 32), (4, 4, 32, 1)]


def study_encoder_parameter_count(channels: int, num_latent: int = 10) -> int:
    """conv_encoder of disentanglement_lib's methods/shared/architectures.py, counted
    layer by layer from that file: conv2d 32/4x4, 32/4x4, 64/2x2, 64/2x2 (stride 2,
    'same': 64 -> 4), flatten 4·4·64, dense 256, then the means and log_var heads
    (dense num_latent each); kernels plus biases."""
    convs = [(channels, 32, 4), (32, 32, 4), (32, 64, 2), (64, 64, 2)]
    count = sum(k * k * fan_in * fan_out + fan_out for fan_in, fan_out, k in convs)
    count += 4 * 4 * 64 * 256 + 256
    return count + 2 * (256 * num_latent + num_latent)


@pytest.mark.parametrize("channels", [1, 3])  # dSprites, Shapes3D
def test_encoder_parameter_count_equals_the_study_networks(channels):
    shape = (64, 64, channels)
    model = models.build_vae(vae_section(), shape)
    params = jax.eval_shape(model.init, jax.random.key(0), jnp.zeros((1, *shape)))
    count = sum(int(np.prod(leaf.shape)) for leaf in jax.tree.leaves(params["params"]["encoder"]))
    assert count == study_encoder_parameter_count(channels) == {1: 309_204, 3: 310_228}[channels]
    # The earlier 4x4 kernels throughout carry 73 728 more.
    before = models.build_vae(vae_section(encoder_kernel_sizes=None), shape)
    params = jax.eval_shape(before.init, jax.random.key(0), jnp.zeros((1, *shape)))
    assert sum(int(np.prod(leaf.shape)) for leaf in
               jax.tree.leaves(params["params"]["encoder"])) == count + 73_728


def test_kernels_start_glorot_uniform_as_tf1_layers_and_lecun_normal_on_request():
    """TF1's tf.layers take glorot_uniform when no initializer is given: uniform on
    ±sqrt(6 / (fan_in + fan_out)), fan = kernel side² × channels for a convolution."""
    shape = (64, 64, 1)
    images = jnp.zeros((1, *shape))
    params = models.build_vae(vae_section(), shape).init(jax.random.key(0), images)["params"]
    kernel = np.asarray(params["encoder"]["down1"]["kernel"])  # 4x4, 32 -> 32
    limit = np.sqrt(6 / (16 * 32 + 16 * 32))
    assert np.abs(kernel).max() <= limit and np.abs(kernel).max() > 0.95 * limit
    np.testing.assert_allclose(kernel.var(), limit ** 2 / 3, rtol=0.1)  # uniform's
    dense = np.asarray(params["decoder"]["to_map"]["kernel"])  # 256 -> 1024
    np.testing.assert_allclose(dense.var(), 2 / (256 + 1024), rtol=0.05)
    assert not np.any(np.asarray(params["encoder"]["down1"]["bias"]))
    lecun = models.build_vae(vae_section(weight_init="lecun_normal"), shape).init(
        jax.random.key(0), images)["params"]
    np.testing.assert_allclose(np.asarray(lecun["decoder"]["to_map"]["kernel"]).var(),
                               1 / 256, rtol=0.05)


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
    (dict(encoder_kernel_sizes=(4, 4, 2)), IMAGE_SHAPE,
     r"vae.model.encoder_kernel_sizes must give one positive whole kernel side per encoder "
     r"convolution \(4, .*got \(4, 4, 2\)"),
    (dict(encoder_kernel_sizes=(4, 4, 0, 2)), IMAGE_SHAPE, "encoder_kernel_sizes must give"),
    # What ml_collections makes of --config.vae.model.encoder_kernel_sizes=None: the
    # message spells out the 4x4 tuple to give instead.
    (dict(encoder_kernel_sizes=(None,)), IMAGE_SHAPE,
     r"or \(4, 4, 4, 4\) for this project's earlier 4x4 throughout; got \(None,\)"),
    (dict(weight_init="he_normal"), IMAGE_SHAPE,
     r"vae.model.weight_init must be one of \('glorot_uniform', 'lecun_normal'\), got "
     r"'he_normal'"),
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
