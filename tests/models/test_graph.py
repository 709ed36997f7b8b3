import functools

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from causal_disent.models import graph

BATCH, NODES, CODES, ACTIONS, POSITION_DIM, FEATURES, HIDDEN = 3, 5, 4, 3, 6, 7, 16
NULL = ACTIONS
GUMBEL = {"gumbel": jax.random.key(0)}


def random_like(tree, seed):
    """Replaces every leaf by N(0, 1) values so biases are nonzero in the references."""
    rng = np.random.default_rng(seed)
    return jax.tree.map(
        lambda leaf: jnp.asarray(rng.normal(size=leaf.shape), jnp.float32), tree
    )


@pytest.fixture(scope="module")
def mask_setup():
    module = graph.InterventionMask(num_actions=ACTIONS, num_codes=CODES)
    rng = np.random.default_rng(0)
    codes = jnp.asarray(rng.integers(0, CODES, (BATCH, NODES)), jnp.int32)
    action = jnp.array([0, 2, NULL], jnp.int32)
    positions = jnp.asarray(rng.normal(size=(NODES, POSITION_DIM)), jnp.float32)
    init_rngs = {"params": jax.random.key(0), "gumbel": jax.random.key(1)}
    params = jax.jit(module.init)(init_rngs, codes, action, positions)["params"]
    return module, random_like(params, 1), codes, action, positions


@pytest.fixture(scope="module")
def sampler_setup():
    module = graph.CausalGraphSampler(num_actions=ACTIONS, hidden=HIDDEN)
    rng = np.random.default_rng(2)
    features = jnp.asarray(rng.normal(size=(BATCH, NODES, FEATURES)), jnp.float32)
    action = jnp.array([1, NULL, 0], jnp.int32)
    mask = jnp.asarray(rng.integers(0, 2, (BATCH, NODES)), jnp.float32)
    init_rngs = {"params": jax.random.key(3), "gumbel": jax.random.key(4)}
    params = jax.jit(module.init)(init_rngs, features, action, mask)["params"]
    return module, random_like(params, 5), features, action, mask


def test_intervention_mask_shapes_and_parameters(mask_setup):
    module, params, codes, action, positions = mask_setup
    chex.assert_shape(params["action_kernel"], (ACTIONS + 1, CODES))
    chex.assert_shape(params["position_kernel"], (POSITION_DIM, CODES))
    chex.assert_shape(params["bias"], (CODES,))
    out = module.apply({"params": params}, codes, action, positions, rngs=GUMBEL)
    chex.assert_shape(
        [out["mask_logits"], out["mask_probs"], out["mask"]], (BATCH, NODES)
    )


def test_mask_logits_are_the_linear_read_at_each_nodes_code(mask_setup):
    module, params, codes, action, positions = mask_setup
    out = module.apply({"params": params}, codes, action, positions, rngs=GUMBEL)
    p = jax.tree.map(np.asarray, params)
    kernel = np.concatenate([p["action_kernel"], p["position_kernel"]])
    expected = np.zeros((BATCH, NODES), np.float32)
    for b in range(BATCH):
        for i in range(NODES):
            inputs = np.concatenate([np.eye(ACTIONS + 1)[action[b]], positions[i]])
            per_code = inputs @ kernel + p["bias"]
            expected[b, i] = per_code[codes[b, i]]
    np.testing.assert_allclose(out["mask_logits"], expected, rtol=1e-5, atol=1e-5)
    has_action = np.asarray(action) != NULL
    np.testing.assert_allclose(
        out["mask_probs"][has_action], jax.nn.sigmoid(expected[has_action]), rtol=1e-6
    )


def test_mask_is_binary_and_exactly_zero_without_gradient_for_null_actions(mask_setup):
    module, params, codes, action, positions = mask_setup
    many_codes, many_actions = jnp.tile(codes, (100, 1)), jnp.tile(action, 100)
    null_rows = np.asarray(many_actions) == NULL

    def mask_of(params):
        return module.apply(
            {"params": params}, many_codes, many_actions, positions,
            rngs={"gumbel": jax.random.key(7)},
        )

    out = mask_of(params)
    mask = np.asarray(out["mask"])
    assert set(np.unique(mask).tolist()) == {0.0, 1.0}
    assert np.all(mask[null_rows] == 0.0)
    assert np.all(np.asarray(out["mask_probs"])[null_rows] == 0.0)

    def null_and_action_sums(params):
        mask = mask_of(params)["mask"]
        null_sum = jnp.sum(jnp.where(null_rows[:, None], mask, 0.0))
        return jnp.stack([null_sum, jnp.sum(mask) - null_sum])

    jacobian = jax.jit(jax.jacrev(null_and_action_sums))(params)
    null_grads = jax.tree.map(lambda g: g[0], jacobian)
    action_grads = jax.tree.map(lambda g: g[1], jacobian)
    assert all(np.all(np.asarray(g) == 0.0) for g in jax.tree.leaves(null_grads))
    assert np.any(np.asarray(action_grads["action_kernel"][0]) != 0.0)


def naive_pair_logits(params, features, network):
    """α_ij for one network by concatenating [x_i ; x_j] and running both Linears."""
    p = jax.tree.map(lambda x: np.asarray(x, np.float64), params)
    first_kernel = np.concatenate(
        [p["child_kernel"][network], p["parent_kernel"][network]]
    )
    features = np.asarray(features, np.float64)
    batch, nodes, _ = features.shape
    logits = np.zeros((batch, nodes, nodes))
    for b in range(batch):
        for i in range(nodes):
            for j in range(nodes):
                pair = np.concatenate([features[b, i], features[b, j]])
                hidden = pair @ first_kernel + p["hidden_bias"][network]
                hidden = np.where(hidden >= 0, hidden, 0.01 * hidden)
                output = hidden @ p["output_kernel"][network]
                logits[b, i, j] = output + p["output_bias"][network]
    return logits


def network_logits(module, params, features, network):
    return module.apply(
        {"params": params}, features, network, method=module.network_logits
    )


def normal(shape, seed):
    return jnp.asarray(np.random.default_rng(seed).normal(size=shape), jnp.float32)


def test_kernels_start_with_lecun_scale_of_the_unsplit_layers():
    features, hidden, positions = 32, 256, 60
    sampler = graph.CausalGraphSampler(num_actions=ACTIONS, hidden=hidden)
    init_sampler = jax.jit(functools.partial(sampler.init, method="network_logits"))
    sampler_params = init_sampler(
        jax.random.key(0), jnp.zeros((1, 2, features)), jnp.zeros((1,), jnp.int32)
    )["params"]
    mask_module = graph.InterventionMask(num_actions=ACTIONS, num_codes=64)
    mask_params = jax.jit(mask_module.init)(
        {"params": jax.random.key(1), "gumbel": jax.random.key(2)},
        jnp.zeros((1, 2), jnp.int32), jnp.zeros((1,), jnp.int32),
        jnp.zeros((2, positions)),
    )["params"]
    expected_stds = [
        (sampler_params["child_kernel"], 1 / np.sqrt(2 * features)),
        (sampler_params["parent_kernel"], 1 / np.sqrt(2 * features)),
        (sampler_params["output_kernel"], 1 / np.sqrt(hidden)),
        (mask_params["position_kernel"], 1 / np.sqrt(ACTIONS + 1 + positions)),
    ]
    for kernel, std in expected_stds:
        assert float(jnp.std(kernel)) == pytest.approx(std, rel=0.1)


def test_sampler_parameter_shapes(sampler_setup):
    _, params, *_ = sampler_setup
    chex.assert_shape(params["child_kernel"], (ACTIONS + 1, FEATURES, HIDDEN))
    chex.assert_shape(params["parent_kernel"], (ACTIONS + 1, FEATURES, HIDDEN))
    chex.assert_shape(params["hidden_bias"], (ACTIONS + 1, HIDDEN))
    chex.assert_shape(params["output_kernel"], (ACTIONS + 1, HIDDEN))
    chex.assert_shape(params["output_bias"], (ACTIONS + 1,))


def test_pair_mlp_matches_naive_concatenation_for_every_network(sampler_setup):
    module, params, features, *_ = sampler_setup
    for network in range(ACTIONS + 1):
        same_network = jnp.full((BATCH,), network, jnp.int32)
        logits = network_logits(module, params, features, same_network)
        chex.assert_shape(logits, (BATCH, NODES, NODES))
        expected = naive_pair_logits(params, features, network)
        np.testing.assert_allclose(logits, expected, rtol=1e-5, atol=1e-5)


def test_each_batch_element_uses_its_own_network(sampler_setup):
    module, params, features, *_ = sampler_setup
    networks = jnp.array([2, 0, NULL], jnp.int32)
    logits = network_logits(module, params, features, networks)
    for b, network in enumerate(np.asarray(networks)):
        expected = naive_pair_logits(params, features, network)[b]
        np.testing.assert_allclose(logits[b], expected, rtol=1e-5, atol=1e-5)


def test_network_logits_under_vmap_and_lax_map_equal_a_loop(sampler_setup):
    module, params, features, *_ = sampler_setup
    networks = np.random.default_rng(6).integers(0, ACTIONS, (ACTIONS, BATCH))
    networks = jnp.asarray(networks, jnp.int32)

    def logits_of(network):
        return network_logits(module, params, features, network)

    looped = np.stack([logits_of(network) for network in networks])
    vmapped = jax.jit(jax.vmap(logits_of))(networks)
    np.testing.assert_allclose(vmapped, looped, rtol=1e-5, atol=1e-6)
    mapped = jax.lax.map(logits_of, networks)
    np.testing.assert_allclose(mapped, looped, rtol=1e-5, atol=1e-6)


def test_combine_takes_row_i_from_the_action_network_where_mask_is_one(sampler_setup):
    module, params, *_ = sampler_setup
    mask = jnp.asarray(np.random.default_rng(8).integers(0, 2, (BATCH, NODES)))
    mask = mask.astype(jnp.float32)
    action_logits = normal((BATCH, NODES, NODES), 9)
    null_logits = normal((BATCH, NODES, NODES), 10)
    combined = module.apply(
        {"params": params}, mask, action_logits, null_logits, method=module.combine
    )
    expected = np.where(np.asarray(mask)[:, :, None] == 1, action_logits, null_logits)
    np.testing.assert_array_equal(combined, expected)


def test_call_samples_a_binary_graph_from_the_combined_logits(sampler_setup):
    module, params, features, action, mask = sampler_setup
    out = module.apply({"params": params}, features, action, mask, rngs=GUMBEL)
    chex.assert_shape(
        [out["edge_logits"], out["edge_probs"], out["adjacency"]], (BATCH, NODES, NODES)
    )
    action_logits = network_logits(module, params, features, action)
    null_logits = network_logits(module, params, features, jnp.full_like(action, NULL))
    expected = module.apply(
        {"params": params}, mask, action_logits, null_logits, method=module.combine
    )
    np.testing.assert_allclose(out["edge_logits"], expected, rtol=1e-6)
    np.testing.assert_allclose(out["edge_probs"], jax.nn.sigmoid(expected), rtol=1e-6)
    assert set(np.unique(np.asarray(out["adjacency"])).tolist()) == {0.0, 1.0}


def test_gradients_reach_edge_logits_and_mask_through_the_sample(sampler_setup):
    module, params, features, action, mask = sampler_setup
    weights = normal((BATCH, NODES, NODES), 11)

    def weighted_adjacency(edge_logits):
        out = module.apply(
            {"params": params}, edge_logits, method=module.sample, rngs=GUMBEL
        )
        return jnp.sum(weights * out["adjacency"])

    logit_grad = np.asarray(jax.grad(weighted_adjacency)(normal(weights.shape, 12)))
    assert np.count_nonzero(logit_grad) > 0.9 * logit_grad.size

    def weighted_graph(mask):
        out = module.apply({"params": params}, features, action, mask, rngs=GUMBEL)
        return jnp.sum(weights * out["adjacency"])

    mask_grad = np.asarray(jax.grad(weighted_graph)(mask))
    # Rows of batch elements whose action is ∅ get no gradient (both networks are ∅).
    has_action = np.asarray(action) != NULL
    assert np.all(mask_grad[has_action] != 0.0)
    assert np.all(mask_grad[~has_action] == 0.0)


def test_graph_loss_trains_the_intervention_mask_end_to_end(mask_setup, sampler_setup):
    mask_module, mask_params, codes, _, positions = mask_setup
    sampler, sampler_params, features, *_ = sampler_setup
    action = jnp.array([0, 1, 2], jnp.int32)

    def graph_size(mask_params):
        mask = mask_module.apply(
            {"params": mask_params}, codes, action, positions, rngs=GUMBEL
        )["mask"]
        out = sampler.apply(
            {"params": sampler_params}, features, action, mask, rngs=GUMBEL
        )
        return jnp.mean(out["adjacency"] ** 2)

    grads = jax.grad(graph_size)(mask_params)
    assert np.any(np.asarray(grads["action_kernel"]) != 0.0)
    assert np.all(np.isfinite(np.asarray(grads["position_kernel"])))
