"""Interventions reach every descendant (a 3-node chain), and the per-concept decoder
decodes each concept on its own."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from causal_disent import models
from causal_disent.models import scm
from causal_disent.models.causalvae import DECODERS, CausalVAE
from configs import causalvae_pendulum

BATCH, CONCEPTS, CONCEPT_DIM = 3, 3, 2
CHAIN = np.array([[0, 1.5, 0], [0, 0, -2.0], [0, 0, 0]], np.float32)  # 0 -> 1 -> 2


def normal(shape, seed):
    return jnp.asarray(np.random.default_rng(seed).normal(size=shape), jnp.float32)


@pytest.fixture(scope="module")
def chain():
    layer = scm.MaskLayer(CONCEPTS, CONCEPT_DIM, hidden=8)
    latents = normal((BATCH, CONCEPTS, CONCEPT_DIM), 0)
    exogenous = normal((BATCH, CONCEPTS, CONCEPT_DIM), 1)
    params = layer.init(jax.random.key(0), latents, jnp.asarray(CHAIN), exogenous)["params"]
    # Nonzero biases, so that a wrong formula cannot hide behind zeros.
    params = jax.tree.map(lambda leaf: leaf + 0.3, params)
    return layer, params, latents, exogenous


def mechanisms(layer, params, inputs):
    return layer.apply({"params": params}, inputs, method=scm.MaskLayer.mechanisms)


def by_hand(layer, params, latents, concept, value):
    """z' in topological order 0, 1, 2 of the chain, written out concept by concept."""
    adjacency = jnp.asarray(CHAIN)
    factual = mechanisms(layer, params, scm.parent_inputs(latents, adjacency))
    counterfactual = np.array(latents)
    counterfactual[:, concept] = value
    for child in range(CONCEPTS):
        if child == concept:
            continue
        moved = mechanisms(layer, params, scm.parent_inputs(jnp.asarray(counterfactual), adjacency))
        counterfactual[:, child] = latents[:, child] + moved[:, child] - factual[:, child]
    return counterfactual


@pytest.mark.parametrize("concept", [0, 1, 2])
def test_propagation_equals_a_pass_in_topological_order(chain, concept):
    layer, params, latents, _ = chain
    value = 2.5
    propagated = layer.apply({"params": params}, latents, jnp.asarray(CHAIN), concept, value,
                             method=scm.MaskLayer.propagate_intervention)
    np.testing.assert_allclose(propagated, by_hand(layer, params, latents, concept, value),
                               rtol=1e-5, atol=1e-5)


def test_do_on_the_root_reaches_the_grandchild(chain):
    layer, params, latents, exogenous = chain
    apply = lambda **kw: layer.apply(  # noqa: E731
        {"params": params}, latents, jnp.asarray(CHAIN), exogenous, 0, 2.5,
        method=scm.MaskLayer.intervene, **kw)
    outputs = apply()
    factual = layer.apply({"params": params}, latents, jnp.asarray(CHAIN), exogenous)
    # The grandchild moves: one pass with only the root set (the paper's) would
    # leave it at its factual value, since its parent's input was not updated.
    assert np.abs(np.asarray(outputs["z"][:, 2] - factual["z"][:, 2])).min() > 1e-3
    one_pass = layer.apply({"params": params}, scm.intervene_latents(latents, 0, 2.5),
                           jnp.asarray(CHAIN), exogenous)
    np.testing.assert_allclose(one_pass["z"][:, 2], factual["z"][:, 2], atol=1e-6)
    assert np.abs(np.asarray(outputs["z"][:, 2] - one_pass["z"][:, 2])).min() > 1e-3
    np.testing.assert_allclose(outputs["z"][:, 0], 2.5)


def test_do_on_the_middle_leaves_the_root_and_moves_the_leaf(chain):
    layer, params, latents, exogenous = chain
    outputs = layer.apply({"params": params}, latents, jnp.asarray(CHAIN), exogenous, 1, -1.0,
                          method=scm.MaskLayer.intervene)
    factual = layer.apply({"params": params}, latents, jnp.asarray(CHAIN), exogenous)
    np.testing.assert_array_equal(outputs["z"][:, 0], factual["z"][:, 0])
    assert np.abs(np.asarray(outputs["z"][:, 2] - factual["z"][:, 2])).min() > 1e-3


def test_do_with_the_factual_value_changes_nothing(chain):
    layer, params, latents, exogenous = chain
    factual = layer.apply({"params": params}, latents, jnp.asarray(CHAIN), exogenous)
    outputs = layer.apply({"params": params}, latents, jnp.asarray(CHAIN), exogenous, 0,
                          latents[:, 0], method=scm.MaskLayer.intervene, at_output=False)
    np.testing.assert_allclose(outputs["z"], factual["z"], atol=1e-6)


# ---- decoders ---------------------------------------------------------------------


def tiny_model(decoder):
    """The Pendulum config's CausalVAE, shrunk to 16×16 images and `decoder`."""
    model_config = causalvae_pendulum.get_config().causalvae.model
    model_config.update(num_concepts=CONCEPTS, concept_dim=CONCEPT_DIM, encoder_widths=(4, 4),
                        encoder_hidden=8, decoder_widths=(4, 4), decoder_hidden=8,
                        decoder=decoder)
    return models.build_causalvae(model_config, (16, 16, 3))


def decode(model, params, latents):
    return np.asarray(model.apply({"params": params}, latents, method=CausalVAE.decode))


@pytest.mark.parametrize("decoder", DECODERS)
def test_only_the_per_concept_decoder_is_a_sum_over_concepts(decoder):
    """f(a) + f(b) = f(a0, b1, b2) + f(b0, a1, a2) holds for a sum of per-concept
    terms f = Σ_i D_i(z_i), and not for a decoder that mixes concepts."""
    model = tiny_model(decoder)
    params = model.init(jax.random.key(0), jnp.zeros((1, 16, 16, 3)))["params"]
    a, b = normal((2, CONCEPTS, CONCEPT_DIM), 3), normal((2, CONCEPTS, CONCEPT_DIM), 4)
    mixed_ab = a.at[:, 1:].set(b[:, 1:])  # (a0, b1, b2)
    mixed_ba = b.at[:, 1:].set(a[:, 1:])  # (b0, a1, a2)
    gap = np.abs(decode(model, params, a) + decode(model, params, b)
                 - decode(model, params, mixed_ab) - decode(model, params, mixed_ba)).max()
    if decoder == "per_concept":
        assert gap < 1e-4
    else:
        assert gap > 1e-3


def test_unknown_decoder_is_rejected_when_the_model_is_built():
    with pytest.raises(ValueError,
                       match="causalvae.model.decoder 'deconv' is unknown; known: per_concept"):
        tiny_model("deconv")
