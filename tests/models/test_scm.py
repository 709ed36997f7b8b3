"""CausalVAE's causal layer (linear SCM) and mask layer, with interventions."""

import functools

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from causal_disent.models import scm

BATCH, CONCEPTS, CONCEPT_DIM, HIDDEN = 3, 3, 2, 8


def random_like(tree, seed):
    """Replaces every leaf by N(0, 1) values so biases are nonzero in the references."""
    rng = np.random.default_rng(seed)
    return jax.tree.map(
        lambda leaf: jnp.asarray(rng.normal(size=leaf.shape), jnp.float32), tree
    )


def random_dag(num_concepts, seed):
    """Strictly upper-triangular weights under a random relabelling of the nodes."""
    rng = np.random.default_rng(seed)
    weights = np.triu(rng.normal(size=(num_concepts, num_concepts)), k=1)
    order = rng.permutation(num_concepts)
    return weights[np.ix_(order, order)].astype(np.float32)


def normal(shape, seed):
    return jnp.asarray(np.random.default_rng(seed).normal(size=shape), jnp.float32)


def edges(*pairs, weight=1.0):
    """[n, n] adjacency with A[j, i] = weight for each edge j -> i in `pairs`."""
    adjacency = np.zeros((CONCEPTS, CONCEPTS), np.float32)
    for parent, child in pairs:
        adjacency[parent, child] = weight
    return jnp.asarray(adjacency)


# ---- linear SCM -------------------------------------------------------------------


@pytest.fixture(scope="module")
def scm_setup():
    module = scm.LinearSCM(num_concepts=CONCEPTS, concept_dim=CONCEPT_DIM)
    exogenous = normal((BATCH, CONCEPTS, CONCEPT_DIM), 0)
    params = module.init(jax.random.key(0), exogenous)["params"]
    return module, jax.jit(module.apply), params, exogenous


def test_linear_scm_starts_as_the_empty_graph(scm_setup):
    module, apply, params, exogenous = scm_setup
    chex.assert_shape(params["adjacency"], (CONCEPTS, CONCEPTS))
    np.testing.assert_array_equal(params["adjacency"], 0.0)
    out = apply({"params": params}, exogenous)
    np.testing.assert_allclose(out["z"], exogenous, atol=1e-6)
    np.testing.assert_array_equal(out["adjacency"], params["adjacency"])


@pytest.mark.parametrize("kind", ["dag", "cyclic"])
def test_linear_scm_solves_z_equals_a_transpose_z_plus_epsilon(scm_setup, kind):
    module, apply, params, exogenous = scm_setup
    if kind == "dag":
        adjacency = random_dag(CONCEPTS, 1)
    else:  # any A with I − Aᵀ invertible: small entries, cycles included
        adjacency = 0.3 * np.asarray(normal((CONCEPTS, CONCEPTS), 2))
    out = apply({"params": {"adjacency": jnp.asarray(adjacency)}}, exogenous)
    latents = np.asarray(out["z"], np.float64)
    # Residual of the structural equations z_i = Σ_j A[j, i] z_j + ε_i.
    residual = latents - np.einsum("ji,bjk->bik", adjacency, latents) - exogenous
    np.testing.assert_allclose(residual, 0.0, atol=1e-5)
    inverse = np.linalg.inv(np.eye(CONCEPTS) - adjacency.T)
    reference = np.einsum("ij,bjk->bik", inverse, np.asarray(exogenous, np.float64))
    np.testing.assert_allclose(latents, reference, rtol=1e-5, atol=1e-5)


def test_linear_scm_takes_flat_latents_concept_major(scm_setup):
    module, apply, params, exogenous = scm_setup
    adjacency = jnp.asarray(random_dag(CONCEPTS, 3))
    variables = {"params": {"adjacency": adjacency}}
    flat = exogenous.reshape(BATCH, CONCEPTS * CONCEPT_DIM)
    np.testing.assert_allclose(
        apply(variables, flat)["z"], apply(variables, exogenous)["z"], atol=1e-6
    )


def test_linear_scm_rejects_latents_of_the_wrong_width(scm_setup):
    module, apply, params, _ = scm_setup
    with pytest.raises(ValueError, match="latent width 7"):
        apply({"params": params}, jnp.zeros((BATCH, CONCEPTS * CONCEPT_DIM + 1)))
    with pytest.raises(ValueError, match="num_concepts, concept_dim"):
        apply({"params": params}, jnp.zeros((BATCH, CONCEPTS + 1, CONCEPT_DIM)))


def test_non_square_or_mismatched_adjacency_is_rejected():
    exogenous = jnp.zeros((BATCH, CONCEPTS, CONCEPT_DIM))
    with pytest.raises(ValueError, match="square"):
        scm.solve_linear_scm(jnp.zeros((CONCEPTS, CONCEPTS + 1)), exogenous)
    with pytest.raises(ValueError, match="exogenous must be"):
        scm.solve_linear_scm(jnp.zeros((CONCEPTS + 1, CONCEPTS + 1)), exogenous)
    with pytest.raises(ValueError, match="concepts"):
        scm.parent_inputs(exogenous, jnp.zeros((CONCEPTS + 1, CONCEPTS + 1)))


# ---- mask layer -------------------------------------------------------------------


@pytest.fixture(scope="module")
def mask_setup():
    module = scm.MaskLayer(num_concepts=CONCEPTS, concept_dim=CONCEPT_DIM, hidden=HIDDEN)
    latents = normal((BATCH, CONCEPTS, CONCEPT_DIM), 10)
    exogenous = normal((BATCH, CONCEPTS, CONCEPT_DIM), 11)
    adjacency = jnp.zeros((CONCEPTS, CONCEPTS))
    params = module.init(jax.random.key(1), latents, adjacency, exogenous)["params"]
    apply = jax.jit(module.apply)
    intervene = jax.jit(
        functools.partial(module.apply, method=module.intervene),
        static_argnames=("at_input", "at_output"),
    )
    return module, apply, intervene, random_like(params, 12), latents, exogenous


def test_mask_layer_parameters_are_stacked_per_concept(mask_setup):
    module, apply, _, params, latents, exogenous = mask_setup
    chex.assert_shape(params["hidden_kernel"], (CONCEPTS, CONCEPT_DIM, HIDDEN))
    chex.assert_shape(params["hidden_bias"], (CONCEPTS, HIDDEN))
    chex.assert_shape(params["output_kernel"], (CONCEPTS, HIDDEN, CONCEPT_DIM))
    chex.assert_shape(params["output_bias"], (CONCEPTS, CONCEPT_DIM))
    out = apply({"params": params}, latents, edges((0, 2)), exogenous)
    chex.assert_shape(
        [out["parent_inputs"], out["parent_prediction"], out["z"]],
        (BATCH, CONCEPTS, CONCEPT_DIM),
    )


def reference_mask_layer(params, latents, adjacency, exogenous):
    """z_i = g_i(Σ_j A[j, i] z_j) + ε_i by a NumPy loop over concepts (g_i: ELU MLP).

    Returns (parent_inputs, parent_prediction, z), each [B, n, k] float64.
    """
    p = jax.tree.map(lambda leaf: np.asarray(leaf, np.float64), params)
    z, eps = np.asarray(latents, np.float64), np.asarray(exogenous, np.float64)
    adjacency = np.asarray(adjacency, np.float64)
    inputs, predictions = [], []
    for i in range(adjacency.shape[0]):
        masked = sum(adjacency[j, i] * z[:, j] for j in range(adjacency.shape[0]))  # [B, k]
        pre = masked @ p["hidden_kernel"][i] + p["hidden_bias"][i]
        hidden = np.where(pre > 0, pre, np.expm1(pre))  # ELU
        inputs.append(masked)
        predictions.append(hidden @ p["output_kernel"][i] + p["output_bias"][i])
    inputs, predictions = np.stack(inputs, axis=1), np.stack(predictions, axis=1)
    return inputs, predictions, predictions + eps


def test_mask_layer_equals_a_loop_over_concepts(mask_setup):
    module, apply, _, params, latents, exogenous = mask_setup
    adjacency = np.asarray(normal((CONCEPTS, CONCEPTS), 13))
    out = apply({"params": params}, latents, jnp.asarray(adjacency), exogenous)
    masked, g, z = reference_mask_layer(params, latents, adjacency, exogenous)
    np.testing.assert_allclose(out["parent_inputs"], masked, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(out["parent_prediction"], g, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(out["z"], z, rtol=1e-5, atol=1e-5)


def _outputs_after_changing(apply, params, latents, exogenous, adjacency, concept):
    changed = latents.at[:, concept].add(1.0)
    before = apply({"params": params}, latents, adjacency, exogenous)["z"]
    after = apply({"params": params}, changed, adjacency, exogenous)["z"]
    return np.asarray(before), np.asarray(after)


def test_without_edges_no_output_depends_on_another_concept(mask_setup):
    module, apply, _, params, latents, exogenous = mask_setup
    for concept in range(CONCEPTS):
        before, after = _outputs_after_changing(
            apply, params, latents, exogenous, jnp.zeros((CONCEPTS, CONCEPTS)), concept
        )
        np.testing.assert_array_equal(after, before)


def test_an_edge_carries_the_parent_to_its_child_only(mask_setup):
    module, apply, _, params, latents, exogenous = mask_setup
    before, after = _outputs_after_changing(
        apply, params, latents, exogenous, edges((0, 2)), concept=0
    )
    # The child follows its parent's new value: g_2(z_0 + 1) + ε_2.
    expected = reference_mask_layer(
        params, latents.at[:, 0].add(1.0), edges((0, 2)), exogenous
    )[2]
    np.testing.assert_allclose(after[:, 2], expected[:, 2], rtol=1e-5, atol=1e-5)
    assert np.abs(after[:, 2] - before[:, 2]).max() > 1e-3
    np.testing.assert_array_equal(after[:, :2], before[:, :2])


def test_mask_layer_takes_flat_latents_and_rejects_bad_shapes(mask_setup):
    module, apply, _, params, latents, exogenous = mask_setup
    flat = latents.reshape(BATCH, -1)
    np.testing.assert_allclose(
        apply({"params": params}, flat, edges((0, 1)), exogenous)["z"],
        apply({"params": params}, latents, edges((0, 1)), exogenous)["z"],
        atol=1e-6,
    )
    with pytest.raises(ValueError, match="latent width"):
        apply({"params": params}, flat[:, 1:], edges((0, 1)))
    with pytest.raises(ValueError, match="square"):
        apply({"params": params}, latents, jnp.zeros((CONCEPTS, CONCEPTS - 1)))
    with pytest.raises(ValueError, match="concepts"):
        apply({"params": params}, latents, jnp.zeros((CONCEPTS + 1, CONCEPTS + 1)))


# ---- interventions (DAG 0 -> 2 <- 1) -----------------------------------------------

COLLIDER = edges((0, 2), (1, 2), weight=0.9)
VALUE = 2.5


@pytest.fixture(scope="module")
def collider_outputs(mask_setup):
    """The observational outputs and every intervention used below."""
    module, apply, intervene, params, latents, exogenous = mask_setup
    variables = {"params": params}

    def do(concept, at_input, at_output):
        out = intervene(
            variables, latents, COLLIDER, exogenous, jnp.int32(concept), VALUE,
            at_input=at_input, at_output=at_output,
        )
        return np.asarray(out["z"])

    return {
        "observed": np.asarray(apply(variables, latents, COLLIDER, exogenous)["z"]),
        "cause_input": do(0, True, False),
        "cause_both": do(0, True, True),
        "effect_output": do(2, False, True),
        "effect_both": do(2, True, True),
    }


def child_of_do_cause(mask_setup):
    """Concept 2 of the collider with z_0 = VALUE at the input: g_2(0.9·VALUE +
    0.9·z_1) + ε_2, by the NumPy reference."""
    _, _, _, params, latents, exogenous = mask_setup
    set_cause = latents.at[:, 0].set(VALUE)
    return reference_mask_layer(params, set_cause, COLLIDER, exogenous)[2][:, 2]


def test_intervening_a_cause_at_the_input_changes_its_child_only(mask_setup,
                                                                 collider_outputs):
    observed, intervened = collider_outputs["observed"], collider_outputs["cause_input"]
    np.testing.assert_allclose(intervened[:, 2], child_of_do_cause(mask_setup),
                               rtol=1e-5, atol=1e-5)
    assert np.abs(intervened[:, 2] - observed[:, 2]).max() > 1e-3
    np.testing.assert_array_equal(intervened[:, 1], observed[:, 1])
    # Without a self-loop, z_0 does not feed g_0.
    np.testing.assert_array_equal(intervened[:, 0], observed[:, 0])


def test_do_on_a_cause_sets_it_and_propagates(mask_setup, collider_outputs):
    intervened = collider_outputs["cause_both"]
    np.testing.assert_array_equal(intervened[:, 0], VALUE)
    np.testing.assert_allclose(intervened[:, 2], child_of_do_cause(mask_setup),
                               rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(intervened[:, 1], collider_outputs["observed"][:, 1])


@pytest.mark.parametrize("variant", ["effect_output", "effect_both"])
def test_intervening_an_effect_leaves_its_causes_unchanged(collider_outputs, variant):
    observed, intervened = collider_outputs["observed"], collider_outputs[variant]
    np.testing.assert_array_equal(intervened[:, :2], observed[:, :2])
    np.testing.assert_array_equal(intervened[:, 2], VALUE)


def test_intervene_with_a_python_int_matches_a_traced_concept(mask_setup, collider_outputs):
    module, apply, intervene, params, latents, exogenous = mask_setup
    out = module.apply(
        {"params": params}, latents, COLLIDER, exogenous, 0, VALUE, method=module.intervene
    )
    np.testing.assert_allclose(out["z"], collider_outputs["cause_both"], atol=1e-6)


# ---- intervene_latents ------------------------------------------------------------


def test_intervene_latents_sets_one_concept_and_broadcasts_values():
    latents = normal((BATCH, CONCEPTS, CONCEPT_DIM), 20)
    out = scm.intervene_latents(latents, 1, jnp.array([3.0, 4.0]))
    np.testing.assert_array_equal(out[:, 1], np.broadcast_to([3.0, 4.0], (BATCH, 2)))
    np.testing.assert_array_equal(out[:, [0, 2]], latents[:, [0, 2]])
    per_example = jnp.arange(BATCH, dtype=jnp.float32)[:, None]
    out = scm.intervene_latents(latents, 2, per_example)
    np.testing.assert_array_equal(out[:, 2], np.repeat(np.arange(BATCH)[:, None], 2, 1))


def test_intervene_latents_rejects_an_unknown_concept():
    latents = jnp.zeros((BATCH, CONCEPTS, CONCEPT_DIM))
    with pytest.raises(ValueError, match="concept 3"):
        scm.intervene_latents(latents, CONCEPTS, 0.0)
    with pytest.raises(ValueError, match="concept -1"):
        scm.intervene_latents(latents, -1, 0.0)
