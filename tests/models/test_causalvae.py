"""CausalVAE module: output shapes and submodules of each variant (traced only, via
jax.eval_shape), and the forward pass and interventions of the tiny model against
its parts put together by hand."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from causal_disent import models
from causal_disent.models import scm
from causal_disent.models.causalvae import VARIANTS
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


def test_unknown_variant_is_rejected_when_the_model_is_built():
    with pytest.raises(ValueError, match="causalvae.model.variant 'beta_vae' is unknown"):
        build("beta_vae")


@pytest.mark.parametrize("variant", VARIANTS)
def test_forward_pass_and_intervention_compose_the_parts(variant):
    model = build(variant)
    rng = np.random.default_rng(0)
    images = jnp.asarray(rng.uniform(size=(2, *IMAGE_SHAPE)), jnp.float32)
    params = model.init(jax.random.key(0), images)["params"]
    adjacency = None
    if model.has_causal_layer:  # a nonzero A (with a cycle), so z differs from ε
        adjacency = 0.3 * rng.normal(size=(4, 4)).astype(np.float32)
        params = {**params, "scm": {"adjacency": jnp.asarray(adjacency)}}
    variables = {"params": params}
    out = model.apply(variables, images)
    exogenous = np.asarray(model.apply(variables, images, method="encode"), np.float64)
    np.testing.assert_allclose(out["exogenous"], exogenous, rtol=1e-6)

    # z = (I − Aᵀ)⁻¹ ε per example and dim (ε itself without a causal layer).
    if adjacency is None:
        latents = exogenous
    else:
        np.testing.assert_array_equal(out["adjacency"], adjacency)
        inverse = np.linalg.inv(np.eye(4) - adjacency.T.astype(np.float64))
        latents = np.einsum("ij,bjk->bik", inverse, exogenous)
    np.testing.assert_allclose(out["z"], latents, rtol=1e-4, atol=1e-5)
    # The decoder reads the mask layer's g_i(A_i ∘ z) + ε_i, else z.
    if model.has_mask_layer:
        mask = scm.MaskLayer(4, 4, model.mechanism_hidden)
        masked = mask.apply({"params": params["mask"]}, out["z"], out["adjacency"],
                            out["exogenous"])
        np.testing.assert_allclose(out["parent_prediction"], masked["parent_prediction"],
                                   rtol=1e-5, atol=1e-6)
        decoded = np.asarray(masked["z"])
    else:
        decoded = latents
    np.testing.assert_allclose(out["decoded_z"], decoded, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(
        out["reconstruction_logits"],
        model.apply(variables, out["decoded_z"], method="decode"), rtol=1e-5, atol=1e-5,
    )

    # do(z_1 = v) at the output only: the decoder reads v for concept 1, the rest as
    # observed (nothing reads the set value at the input), and decodes that.
    done = model.apply(variables, images, 1, 1.5, False, True, method="intervene")
    expected = np.array(out["decoded_z"])
    expected[:, 1] = 1.5
    np.testing.assert_allclose(done["decoded_z"], expected, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(
        done["reconstruction_logits"],
        model.apply(variables, jnp.asarray(expected), method="decode"), rtol=1e-5, atol=1e-5,
    )
