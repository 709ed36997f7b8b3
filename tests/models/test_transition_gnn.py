import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from causal_disent.models.transition_gnn import TransitionGNN

BATCH, NODES, FEATURES, CODES, ACTIONS, HIDDEN = 2, 5, 6, 7, 3, 8


def make_inputs(seed=0, edge_probability=0.3):
    rng = np.random.default_rng(seed)
    adjacency = (rng.random((BATCH, NODES, NODES)) < edge_probability).astype(np.float32)
    return {
        "node_features": jnp.asarray(rng.normal(size=(BATCH, NODES, FEATURES)), jnp.float32),
        "action": jnp.asarray([1, 2], jnp.int32),
        "mask": jnp.asarray(rng.random((BATCH, NODES)) < 0.5, jnp.float32),
        "adjacency": jnp.asarray(adjacency),
        "edge_weights": jnp.asarray(adjacency * rng.random(adjacency.shape), jnp.float32),
    }


def make_model(backend="dense", num_layers=2):
    return TransitionGNN(
        num_codes=CODES,
        num_actions=ACTIONS,
        hidden=HIDDEN,
        num_layers=num_layers,
        backend=backend,
        root_weight=False,
    )


def first_layer_only(params):
    """The parameters of a one-layer model, taken from a two-layer one (initialising
    is the slowest step of these tests; the noise node adds no parameters)."""
    return {name: value for name, value in params.items() if name != "gat_layer_1"}


@jax.jit  # one program instead of a few eager ones per leaf
def perturbed(params):
    """Add a fixed element-dependent offset, so that no two heads are alike (the
    biases start at zero) and a mix-up of heads or edges shows."""
    return jax.tree.map(lambda p: p + 0.1 * jnp.sin(jnp.arange(p.size).reshape(p.shape)), params)


@pytest.fixture(scope="module")
def inputs():
    return make_inputs()


@pytest.fixture(scope="module")
def params(inputs):
    # Jitted, like every model call below: executed eagerly, each of the GNN's
    # operations compiled a program of its own, most of this file's time.
    return jax.jit(make_model().init)(jax.random.key(0), **inputs)["params"]


def test_output_shape_and_parameter_layout(inputs, params):
    logits = jax.jit(make_model().apply)({"params": params}, **inputs)
    assert logits.shape == (BATCH, NODES, CODES)
    assert set(params) == {"action_embedding", "gat_layer_0", "gat_layer_1", "readout"}
    assert params["action_embedding"]["embedding"].shape == (ACTIONS + 1, FEATURES)
    assert params["gat_layer_0"]["sender_kernel"].shape == (ACTIONS + 1, FEATURES, HIDDEN)
    assert params["gat_layer_1"]["receiver_kernel"].shape == (ACTIONS + 1, HIDDEN, HIDDEN)
    assert params["gat_layer_1"]["context_sender_kernel"].shape == (ACTIONS + 1, FEATURES, HIDDEN)


@pytest.mark.parametrize("with_noise", [False, True])
def test_dense_and_jraph_backends_agree_with_gradients(inputs, params, with_noise):
    noise_node = jnp.ones((BATCH, FEATURES)) * 0.5 if with_noise else None
    params = perturbed(params)

    def loss(backend, params, mask, edge_weights, adjacency):
        logits = make_model(backend).apply(
            {"params": params},
            **{**inputs, "mask": mask, "edge_weights": edge_weights, "adjacency": adjacency},
            noise_node=noise_node,
        )
        return jnp.sum(jnp.sin(logits)), logits

    differentiable = (params, inputs["mask"], inputs["edge_weights"], inputs["adjacency"])
    results = {}
    for backend in ("dense", "jraph"):
        backend_loss = functools.partial(loss, backend)
        grad_fn = jax.grad(backend_loss, argnums=(0, 1, 2, 3), has_aux=True)
        results[backend] = jax.jit(grad_fn)(*differentiable)
    (dense_grads, dense_logits), (jraph_grads, jraph_logits) = results["dense"], results["jraph"]
    np.testing.assert_allclose(dense_logits, jraph_logits, atol=1e-4)
    jax.tree.map(
        lambda dense, jraph: np.testing.assert_allclose(dense, jraph, atol=1e-4),
        dense_grads,
        jraph_grads,
    )
    _, mask_grad, weight_grad, adjacency_grad = dense_grads
    assert np.abs(mask_grad).max() > 0
    assert np.abs(weight_grad).max() > 0
    assert np.abs(adjacency_grad).max() > 0


def reference_one_layer_logits(params, inputs, noise_node):
    """Loop-over-edges GATv2 reading of the docstring, one layer then the readout."""
    layer = {k: np.asarray(v, np.float64) for k, v in params["gat_layer_0"].items()}
    embedding = np.asarray(params["action_embedding"]["embedding"])
    x, adjacency, weights, mask, action = (
        np.asarray(inputs[k], np.float64)
        for k in ("node_features", "adjacency", "edge_weights", "mask", "action")
    )
    leaky = lambda v: np.where(v > 0, v, 0.2 * v)  # noqa: E731
    hidden = np.zeros((BATCH, NODES, HIDDEN))
    for b in range(BATCH):
        context = [embedding[int(action[b])]] + ([noise_node[b]] if noise_node is not None else [])
        for i in range(NODES):
            per_head = []
            for h in (int(action[b]), ACTIONS):
                receiver = x[b, i] @ layer["receiver_kernel"][h] + layer["score_bias"][h]
                sources = [(x[b, j] @ layer["sender_kernel"][h], weights[b, i, j])
                           for j in range(NODES) if adjacency[b, i, j] == 1]
                sources.append((x[b, i] @ layer["sender_kernel"][h], 1.0))
                sources += [(c @ layer["context_sender_kernel"][h], 1.0) for c in context]
                scores = np.array([
                    layer["attention_vector"][h]
                    @ leaky(receiver + message + weight * layer["edge_kernel"][h])
                    for message, weight in sources
                ])
                attention = np.exp(scores - scores.max())
                attention /= attention.sum()
                per_head.append(sum(a * m for a, (m, _) in zip(attention, sources))
                                + layer["output_bias"][h])
            hidden[b, i] = mask[b, i] * per_head[0] + (1 - mask[b, i]) * per_head[1]
    activated = np.where(hidden > 0, hidden, np.expm1(hidden))
    readout = {name: np.asarray(value) for name, value in params["readout"].items()}
    return activated @ readout["kernel"] + readout["bias"]


@pytest.mark.parametrize("backend", ["dense", "jraph"])
def test_matches_loop_reference(inputs, params, backend):
    noise_node = np.linspace(-1, 1, BATCH * FEATURES).reshape(BATCH, FEATURES)
    model = make_model(backend, num_layers=1)
    params = perturbed(first_layer_only(params))
    logits = jax.jit(model.apply)(
        {"params": params}, **inputs, noise_node=jnp.asarray(noise_node, jnp.float32)
    )
    expected = reference_one_layer_logits(params, inputs, noise_node)
    np.testing.assert_allclose(logits, expected, atol=1e-4)


def test_action_changes_masked_and_unmasked_nodes(inputs, params):
    apply = jax.jit(make_model().apply)
    mask = jnp.asarray([[1, 0, 0, 0, 0]] * BATCH, jnp.float32)
    first = apply({"params": params}, **{**inputs, "mask": mask, "action": jnp.array([0, 0])})
    second = apply({"params": params}, **{**inputs, "mask": mask, "action": jnp.array([1, 1])})
    difference = np.abs(np.asarray(first - second)).max(axis=-1)  # [B, N]
    assert (difference[:, 0] > 1e-4).all()  # mask 1: other heads and action node
    assert (difference[:, 1:] > 1e-4).all()  # mask 0: the action node still sends


def test_non_parent_has_no_effect_and_parent_does(inputs, params):
    apply = jax.jit(make_model(num_layers=1).apply)
    adjacency = jnp.zeros((BATCH, NODES, NODES)).at[:, 0, 1].set(1.0)  # 1 -> 0 only
    inputs = {**inputs, "adjacency": adjacency, "edge_weights": 0.7 * adjacency}
    params = first_layer_only(params)
    base = apply({"params": params}, **inputs)

    def node0_change(sender):
        features = inputs["node_features"].at[:, sender].add(3.0)
        perturbed = apply({"params": params}, **{**inputs, "node_features": features})
        return np.abs(np.asarray(perturbed - base)[:, 0]).max()

    assert node0_change(sender=2) == 0.0
    assert node0_change(sender=1) > 1e-4


@pytest.mark.parametrize("backend", ["dense", "jraph"])
def test_mask_selects_between_action_and_no_action_heads(inputs, params, backend):
    apply = jax.jit(make_model(backend).apply)

    def with_action_heads_replaced(params):
        # Every head but ∅ (the last) gets other values.
        def replace(path, value):
            if path[0].key.startswith("gat_layer"):
                return value.at[:-1].set(value[:-1] * -2.0 + 0.3)
            return value

        return jax.tree_util.tree_map_with_path(replace, params)

    changed = with_action_heads_replaced(params)
    for mask_value, should_change in ((0.0, False), (1.0, True)):
        masked = {**inputs, "mask": jnp.full((BATCH, NODES), mask_value)}
        original = apply({"params": params}, **masked)
        replaced = apply({"params": changed}, **masked)
        difference = np.abs(np.asarray(original - replaced)).max()
        assert (difference > 1e-4) == should_change, (mask_value, difference)


@pytest.mark.parametrize("backend", ["dense", "jraph"])
def test_empty_adjacency_gives_finite_logits_and_gradients(inputs, params, backend):
    empty = jnp.zeros((BATCH, NODES, NODES))
    empty_inputs = {**inputs, "adjacency": empty, "edge_weights": empty}

    def loss(params, adjacency):
        logits = make_model(backend).apply(
            {"params": params}, **{**empty_inputs, "adjacency": adjacency}
        )
        return jnp.sum(logits**2)

    value, (param_grads, adjacency_grad) = jax.jit(jax.value_and_grad(loss, argnums=(0, 1)))(
        params, empty
    )
    assert np.isfinite(value)
    assert all(np.isfinite(g).all() for g in jax.tree.leaves(param_grads))
    assert np.isfinite(adjacency_grad).all()


def test_unknown_backend_fails_clearly(inputs):
    with pytest.raises(ValueError, match="backend"):
        make_model("sparse").init(jax.random.key(0), **inputs)


@pytest.mark.parametrize("backend", ["dense", "jraph"])
def test_unsampled_edges_get_exactly_zero_gradient(inputs, params, backend):
    """A non-edge is masked before the softmax, so the likelihood sends nothing back
    to its adjacency entry or its edge weight; sampled edges do get a gradient."""

    def loss(adjacency, edge_weights):
        logits = make_model(backend).apply(
            {"params": perturbed(params)},
            **{**inputs, "adjacency": adjacency, "edge_weights": edge_weights},
        )
        return jnp.sum(jnp.sin(logits))

    adjacency_grad, weight_grad = jax.jit(jax.grad(loss, argnums=(0, 1)))(
        inputs["adjacency"], inputs["edge_weights"]
    )
    unsampled = np.asarray(inputs["adjacency"]) == 0
    assert unsampled.any() and (~unsampled).any()
    for grad in (np.asarray(adjacency_grad), np.asarray(weight_grad)):
        np.testing.assert_array_equal(grad[unsampled], 0.0)
        assert np.abs(grad[~unsampled]).min() > 0


@pytest.mark.parametrize("root_weight", [False, True])
def test_grouped_action_layout_computes_the_same_function(root_weight):
    """The causal mode's layout (G groups, group g under action g) through the grouped
    projections equals the per-example path, values and gradients."""
    groups, per_group = ACTIONS, 2
    rng = np.random.default_rng(3)
    batch = groups * per_group
    adjacency = (rng.random((batch, NODES, NODES)) < 0.4).astype(np.float32)
    inputs = {
        "node_features": jnp.asarray(rng.normal(size=(batch, NODES, FEATURES)), jnp.float32),
        "action": jnp.repeat(jnp.arange(groups, dtype=jnp.int32), per_group),
        "mask": jnp.asarray(rng.random((batch, NODES)) < 0.5, jnp.float32),
        "adjacency": jnp.asarray(adjacency),
        "edge_weights": jnp.asarray(adjacency * rng.random(adjacency.shape), jnp.float32),
    }
    model = TransitionGNN(num_codes=CODES, num_actions=ACTIONS, hidden=HIDDEN, num_layers=2,
                          backend="dense", root_weight=root_weight)
    params = perturbed(jax.jit(model.init)(jax.random.key(0), **inputs)["params"])

    def loss(params, features, action_groups):
        logits = model.apply({"params": params}, **{**inputs, "node_features": features},
                             action_groups=action_groups)
        return jnp.sum(jnp.sin(logits))

    value_and_grad = jax.jit(jax.value_and_grad(loss, argnums=(0, 1)), static_argnums=2)
    per_example = value_and_grad(params, inputs["node_features"], 0)
    grouped = value_and_grad(params, inputs["node_features"], groups)
    np.testing.assert_allclose(grouped[0], per_example[0], rtol=1e-5)
    jax.tree.map(functools.partial(np.testing.assert_allclose, rtol=1e-4, atol=1e-5),
                 grouped[1], per_example[1])


@pytest.mark.parametrize("backend", ["dense", "jraph"])
def test_null_action_only_computes_the_same_function(inputs, params, backend):
    """With every action ∅ and every mask 0 (standard mode), computing the ∅ head
    alone gives the two-head path's logits and gradients."""
    model = make_model(backend)
    null_inputs = {**inputs, "action": jnp.full((BATCH,), ACTIONS, jnp.int32),
                   "mask": jnp.zeros((BATCH, NODES), jnp.float32)}

    def loss(params, features, null_action_only):
        logits = model.apply({"params": params}, **{**null_inputs, "node_features": features},
                             null_action_only=null_action_only)
        return jnp.sum(jnp.sin(logits))

    value_and_grad = jax.jit(jax.value_and_grad(loss, argnums=(0, 1)), static_argnums=2)
    both_heads = value_and_grad(perturbed(params), null_inputs["node_features"], False)
    null_head = value_and_grad(perturbed(params), null_inputs["node_features"], True)
    np.testing.assert_allclose(null_head[0], both_heads[0], rtol=1e-6)
    jax.tree.map(functools.partial(np.testing.assert_allclose, rtol=1e-5, atol=1e-7),
                 null_head[1], both_heads[1])
    # The ∅ head is trained: its attention vector gets a gradient, no other head's does.
    attention_grad = null_head[1][0]["gat_layer_0"]["attention_vector"]
    assert float(jnp.abs(attention_grad[ACTIONS]).max()) > 0
    assert float(jnp.abs(attention_grad[:ACTIONS]).max()) == 0
