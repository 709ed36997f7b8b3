"""The Ladder VAE's network (models/ladder_vae.py): the precision-weighted merge, the
layer sizes of the config, the top-down pass's structure, the family's interface
(encode, decode, __call__) and the config checks that name the field before anything
is traced."""

import json

import jax
import jax.numpy as jnp
import ml_collections
import numpy as np
import pytest

from causal_disent import models
from causal_disent.models.ladder_vae import LadderVAE, precision_weighted
from causal_disent.train import stages
from configs import laddervae_dsprites_synth

IMAGE_SHAPE = (64, 64, 1)


def ladder_section(variant="tiny", **fields):
    model_config = laddervae_dsprites_synth.get_config(variant).vae.model
    model_config.update(fields)
    return model_config


def build(model_config, image_shape=IMAGE_SHAPE):
    """What runs/vae.build_ladder_vae builds from the section."""
    return LadderVAE(**models.module_fields(model_config), image_shape=image_shape)


# --- the precision-weighted merge -------------------------------------------------

def test_precision_weighted_merge_adds_precisions_and_weighs_the_means():
    likelihood_mean = np.array([[1.0, -2.0, 0.5]], np.float32)
    likelihood_log_variance = np.array([[0.0, np.log(0.25), 3.0]], np.float32)
    prior_mean = np.array([[3.0, 1.0, -1.0]], np.float32)
    prior_log_variance = np.array([[0.0, np.log(4.0), -2.0]], np.float32)
    mean, log_variance = precision_weighted(likelihood_mean, likelihood_log_variance,
                                            prior_mean, prior_log_variance)
    likelihood_precision = np.exp(-likelihood_log_variance.astype(np.float64))
    prior_precision = np.exp(-prior_log_variance.astype(np.float64))
    precision = likelihood_precision + prior_precision
    np.testing.assert_allclose(np.exp(-log_variance), precision, rtol=1e-5)
    np.testing.assert_allclose(
        mean, (likelihood_mean * likelihood_precision + prior_mean * prior_precision)
        / precision, rtol=1e-5)
    # Equal variances: the midpoint, half the variance.
    np.testing.assert_allclose(mean[0, 0], 2.0, rtol=1e-6)
    np.testing.assert_allclose(log_variance[0, 0], np.log(0.5), rtol=1e-6)


def test_precision_weighted_merge_is_finite_at_extreme_variances():
    # A variance of e^-100 dominates; the precision e^100 overflows float32.
    mean, log_variance = precision_weighted(jnp.float32(1.0), jnp.float32(-100.0),
                                            jnp.float32(5.0), jnp.float32(100.0))
    np.testing.assert_allclose(mean, 1.0)
    np.testing.assert_allclose(log_variance, -100.0, rtol=1e-6)


# --- the network ------------------------------------------------------------------

def test_base_config_has_the_studys_conv_network_and_its_ladder():
    model = build(ladder_section(variant=None))
    assert model.num_latents == 10
    params = jax.eval_shape(model.init, jax.random.key(0), jnp.zeros((1, *IMAGE_SHAPE)))
    kernels = jax.tree.map(lambda x: x.shape, params["params"])
    bottom_up, decoder = kernels["bottom_up"], kernels["decoder"]
    assert [bottom_up[f"down{i}"]["kernel"] for i in range(4)] == [  # the study's
        (4, 4, 1, 32), (4, 4, 32, 32), (2, 2, 32, 64), (2, 2, 64, 64)]
    assert bottom_up["hidden"]["kernel"] == (4 * 4 * 64, 256)
    assert bottom_up["to_latent"]["kernel"] == (256, 256)  # d_1
    assert bottom_up["likelihood0"]["kernel"] == (256, 2 * 6)
    assert bottom_up["step1"]["kernel"] == (256, 128)  # d_2
    assert bottom_up["likelihood1"]["kernel"] == (128, 2 * 4)
    prior = kernels["priors_0"]  # p(z_1 | z_2)
    assert (prior["hidden"]["kernel"], prior["to_latent"]["kernel"]) == ((4, 256),
                                                                          (256, 2 * 6))
    assert decoder["hidden"]["kernel"] == (6, 256)  # z_1 only
    assert decoder["to_map"]["kernel"] == (256, 4 * 4 * 64)
    assert [decoder[name]["kernel"] for name in ("up0", "up1", "up2", "to_image")] == [
        (4, 4, 64, 64), (4, 4, 64, 32), (4, 4, 32, 32), (4, 4, 32, 1)]


@pytest.fixture(scope="module")
def three_layers():
    """A tiny three-layer ladder (sizes 2, 3, 1), its variables and two images."""
    model = build(ladder_section(latent_sizes=(2, 3, 1), ladder_hidden=(8, 6, 4)))
    images = jnp.linspace(0, 1, 2 * 64 * 64).reshape(2, *IMAGE_SHAPE)
    return model, model.init(jax.random.key(0), images), images


def test_top_down_pass_merges_each_layer_with_the_prior_at_the_sample_above(three_layers):
    model, variables, images = three_layers
    noise = jax.random.normal(jax.random.key(5), (2, 6))
    outputs = model.apply(variables, images, noise, method=model.ladder_pass)
    assert outputs["logits"].shape == (2, *IMAGE_SHAPE)
    likelihoods = model.apply(variables, images, method=lambda m, x: m.bottom_up(x))
    columns = [slice(0, 2), slice(2, 5), slice(5, 6)]  # bottom layer first
    posterior_mean, posterior_log_variance = (outputs["posterior_mean"],
                                              outputs["posterior_log_variance"])
    z = outputs["z"]
    np.testing.assert_allclose(z, posterior_mean + np.exp(0.5 * posterior_log_variance)
                               * noise, rtol=1e-5, atol=1e-6)
    # The top layer: the bottom-up estimate itself, under a N(0, I) prior.
    np.testing.assert_allclose(posterior_mean[:, columns[2]], likelihoods[2][0], rtol=1e-6)
    np.testing.assert_allclose(outputs["prior_mean"][:, columns[2]], 0.0)
    np.testing.assert_allclose(outputs["prior_log_variance"][:, columns[2]], 0.0)
    for layer in (1, 0):
        prior = model.apply(variables, z[:, columns[layer + 1]],
                            method=lambda m, above, l=layer: m.priors[l](above))
        np.testing.assert_allclose(outputs["prior_mean"][:, columns[layer]], prior[0],
                                   rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(outputs["prior_log_variance"][:, columns[layer]],
                                   prior[1], rtol=1e-5, atol=1e-6)
        merged = precision_weighted(*likelihoods[layer], *prior)
        np.testing.assert_allclose(posterior_mean[:, columns[layer]], merged[0],
                                   rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(posterior_log_variance[:, columns[layer]], merged[1],
                                   rtol=1e-5, atol=1e-6)
    # p(x | z_1): the decoder of the bottom sample.
    np.testing.assert_allclose(
        outputs["logits"], model.apply(variables, z[:, columns[0]],
                                       method=lambda m, z1: m.decoder(z1)),
        rtol=1e-5, atol=1e-5)


def test_encode_decode_and_call_have_the_familys_interface(three_layers):
    model, variables, images = three_layers
    outputs = model.apply(variables, images)
    assert outputs["mean"].shape == outputs["log_variance"].shape == (2, 6)
    assert outputs["logits"].shape == outputs["reconstruction"].shape == (2, *IMAGE_SHAPE)
    np.testing.assert_allclose(outputs["reconstruction"], jax.nn.sigmoid(outputs["logits"]))
    # encode is the pass with ε = 0, which feeds each posterior mean down.
    mean, log_variance = model.apply(variables, images, method=model.encode)
    deterministic = model.apply(variables, images, jnp.zeros((2, 6)),
                                method=model.ladder_pass)
    np.testing.assert_array_equal(mean, deterministic["posterior_mean"])
    np.testing.assert_array_equal(log_variance, deterministic["posterior_log_variance"])
    np.testing.assert_array_equal(deterministic["z"], mean)
    np.testing.assert_array_equal(mean, outputs["mean"])
    # decode reads the bottom layer's columns only.
    latents = jax.random.normal(jax.random.key(2), (5, 6))
    logits = model.apply(variables, latents, method=model.decode)
    assert logits.shape == (5, *IMAGE_SHAPE)
    moved_above = latents.at[:, 2:].add(3.0)
    np.testing.assert_array_equal(model.apply(variables, moved_above, method=model.decode),
                                  logits)
    assert not np.allclose(model.apply(variables, latents.at[:, 0].add(3.0),
                                       method=model.decode), logits)
    np.testing.assert_allclose(outputs["logits"], model.apply(variables, mean,
                                                              method=model.decode),
                               rtol=1e-6)
    with pytest.raises(ValueError, match=r"images must be \[B, 64, 64, 1\]"):
        model.apply(variables, images[:, :32], method=model.encode)
    with pytest.raises(ValueError, match=r"latents must be \[B, 6\]"):
        model.apply(variables, latents[:, :2], method=model.decode)


def test_a_section_read_back_from_json_builds_an_equal_hashable_module():
    config = laddervae_dsprites_synth.get_config("tiny")
    read_back = ml_collections.ConfigDict(json.loads(config.to_json_best_effort()))
    assert isinstance(read_back.vae.model.latent_sizes, list)
    built, rebuilt = build(config.vae.model), build(read_back.vae.model)
    assert rebuilt == built and hash(rebuilt) == hash(built)


# --- config checks ----------------------------------------------------------------

LADDER_ERRORS = [
    (dict(latent_sizes=()), r"^vae.model.latent_sizes must name at least one layer's size "
                            r"\(bottom layer first\), all positive; got \(\)$"),
    (dict(latent_sizes=(2, 0)), r"vae.model.latent_sizes must .* got \(2, 0\)"),
    (dict(ladder_hidden=(8, 4, 4)), r"^vae.model.ladder_hidden names 3 widths but "
                                    r"vae.model.latent_sizes 2 layers: give one width per "
                                    r"layer$"),
    (dict(ladder_hidden=(8, -1)), r"vae.model.ladder_hidden must be positive, got \(8, -1\)"),
    (dict(encoder_hidden=0), "vae.model.encoder_hidden must be positive"),
    (dict(decoder_widths=(4,) * 7), "vae.model.decoder_widths has 7 stride-2 layers"),
]


@pytest.mark.parametrize("fields, message", LADDER_ERRORS)
def test_bad_section_is_refused_when_the_module_is_built(fields, message):
    with pytest.raises(ValueError, match=message):
        build(ladder_section(**fields))


@pytest.mark.parametrize("fields, message", LADDER_ERRORS[:3])
def test_bad_section_fails_the_run_before_compiling(fields, message, tmp_path):
    config = laddervae_dsprites_synth.get_config("tiny")
    config.vae.model.update(fields)
    with pytest.raises(stages.InvalidRunError, match=message):
        stages.validate(config, tmp_path, stages.make_data_mesh())
