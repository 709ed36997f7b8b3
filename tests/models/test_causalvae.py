"""CausalVAE module: output shapes and submodules of each variant (traced only, via
jax.eval_shape, so nothing compiles)."""

import jax
import jax.numpy as jnp
import pytest

from causal_disent import models
from causal_disent.models.causalvae import VARIANTS, CausalVAE
from configs import causalvae_pendulum

IMAGE_SHAPE = (96, 96, 4)


def build(variant):
    model_config = causalvae_pendulum.get_config("tiny").causalvae.model
    model_config.variant = variant
    return models.build_causalvae(model_config, IMAGE_SHAPE)


@pytest.mark.parametrize("variant", VARIANTS)
def test_outputs_and_submodules_of_each_variant(variant):
    model = build(variant)
    images = jax.ShapeDtypeStruct((3, *IMAGE_SHAPE), jnp.float32)
    variables = jax.eval_shape(model.init, jax.random.key(0), images)
    outputs = jax.eval_shape(model.apply, variables, images)
    for name in ("exogenous", "z", "decoded_z"):
        assert outputs[name].shape == (3, 4, 4), name
    assert outputs["reconstruction_logits"].shape == (3, *IMAGE_SHAPE)
    params = variables["params"]
    assert ("scm" in params) == (variant != "condition_vae")
    assert ("adjacency" in outputs) == (variant != "condition_vae")
    assert ("mask" in params) == ("parent_prediction" in outputs) == (variant == "causalvae")
    if variant != "condition_vae":
        assert params["scm"]["adjacency"].shape == (4, 4)


def test_unknown_variant_is_rejected():
    model = CausalVAE(num_concepts=4, concept_dim=4, image_shape=IMAGE_SHAPE, variant="beta_vae")
    with pytest.raises(ValueError, match="unknown CausalVAE variant 'beta_vae'"):
        jax.eval_shape(model.init, jax.random.key(0), jnp.zeros((1, *IMAGE_SHAPE)))
