"""The assembled CT layer: shapes, the action's effect, the causal-mode batching,
an identity-graph overfit, and one finite train step per mode."""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from causal_disent import models
from causal_disent.models.ct_layer import sinusoidal_positions
from causal_disent.objectives import ct
from causal_disent.train.state import TrainState, train_step
from configs import ctvae_shapes3d

B, N, K, A = 4, 12, 6, 4


def ct_layer(**fields):
    """The CT layer over N nodes of K codes with A actions: the paper config's
    `ct.model` with `fields` changed."""
    model_config = ctvae_shapes3d.get_config().ct.model
    model_config.update(fields)
    return models.build_ct_layer(model_config, N, K, A)


@pytest.fixture(scope="module")
def model_and_params():
    model = ct_layer(graph_hidden=16, gnn_hidden=8)
    codes = jnp.zeros((B, N), jnp.int32)
    keys = jax.random.split(jax.random.key(0), 3)
    params = model.init({"params": keys[0], "gumbel": keys[1], "noise": keys[2]}, codes, jnp.zeros(B, jnp.int32))["params"]
    return model, params


def codes_batch(seed=0):
    rng = np.random.default_rng(seed)
    return {
        "x_codes": jnp.asarray(rng.integers(0, K, (B, N)), jnp.int32),
        "y_codes": jnp.asarray(rng.integers(0, K, (B, N)), jnp.int32),
        "action": jnp.asarray(rng.integers(0, A, B), jnp.int32),
    }


def test_positional_embedding_is_distinct_per_node():
    pe = sinusoidal_positions(64, 16)
    assert pe.shape == (64, 16)
    np.testing.assert_allclose(np.linalg.norm(pe, axis=-1), 1.0, rtol=1e-6)
    assert len({row.tobytes() for row in pe}) == 64


def test_shapes_and_null_action_has_no_mask(model_and_params):
    model, params = model_and_params
    batch = codes_batch()
    rngs = {"gumbel": jax.random.key(1)}
    out = model.apply({"params": params}, batch["x_codes"], jnp.full(B, A, jnp.int32), rngs=rngs)
    assert out["logits"].shape == (B, N, K)
    assert out["adjacency"].shape == out["edge_probs"].shape == (B, N, N)
    assert float(out["mask"].sum()) == 0.0
    every = model.apply({"params": params}, batch["x_codes"], rngs=rngs, method=model.all_actions)
    assert every["logits"].shape == (A, B, N, K) and every["mask"].shape == (A, B, N)


def test_action_changes_the_output(model_and_params):
    model, params = model_and_params
    codes = codes_batch()["x_codes"]
    rngs = {"gumbel": jax.random.key(1)}
    first = model.apply({"params": params}, codes, jnp.zeros(B, jnp.int32), rngs=rngs)["logits"]
    second = model.apply({"params": params}, codes, jnp.ones(B, jnp.int32), rngs=rngs)["logits"]
    assert float(jnp.abs(first - second).max()) > 1e-4


def test_all_actions_equals_one_action_at_a_time(model_and_params):
    """The causal mode's batching over actions computes each action's transition."""
    model, params = model_and_params
    codes = codes_batch()["x_codes"]
    every = model.apply({"params": params}, codes, rngs={"gumbel": jax.random.key(1)}, method=model.all_actions)
    for action in range(A):
        # The Gumbel draws differ between the two calls, so compare the deterministic
        # parts: mask logits and edge logits given the sampled mask.
        single = model.apply({"params": params}, codes, jnp.full(B, action, jnp.int32), rngs={"gumbel": jax.random.key(1)})
        np.testing.assert_allclose(every["mask_logits"][action], single["mask_logits"], rtol=1e-5, atol=1e-6)
        null = model.apply({"params": params}, codes, jnp.full(B, A, jnp.int32), rngs={"gumbel": jax.random.key(1)})
        both = every["mask"][action][:, :, None]
        # Rows outside the mask come from the ∅ network in both.
        np.testing.assert_allclose(
            (1 - both) * every["edge_logits"][action], (1 - both) * null["edge_logits"], rtol=1e-5, atol=1e-5
        )


def test_null_transition_equals_the_general_path(model_and_params):
    """Standard mode's ∅-only path (the ∅ pair MLP evaluated once) gives the outputs
    and the gradients of `__call__` with ∅ for every example, from the same streams."""
    model, params = model_and_params
    codes = codes_batch()["x_codes"]
    rngs = {"gumbel": jax.random.key(1), "dropout": jax.random.key(2)}
    null = jnp.full(B, A, jnp.int32)

    def general(p):
        return model.apply({"params": p}, codes, null, train=True, rngs=rngs)

    def once(p):
        return model.apply(
            {"params": p}, codes, train=True, rngs=rngs, method=model.null_transition
        )

    expected, outputs = general(params), once(params)
    assert set(outputs) == set(expected)
    for key, value in expected.items():
        np.testing.assert_array_equal(outputs[key], value, err_msg=key)

    def grad_of(forward):
        def loss(p):
            out = forward(p)
            likelihood = ct.code_cross_entropy(out["logits"], codes).mean()
            return likelihood + ct.identity_adjacency_loss(out["adjacency"])

        return jax.jit(jax.grad(loss))(params)

    expected_grads, grads = grad_of(general), grad_of(once)
    assert float(jnp.abs(grads["graph_sampler"]["child_kernel"]).max()) > 0
    jax.tree.map(lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-8), grads, expected_grads)


def test_identity_graph_learns_to_reproduce_the_codes():
    """With M = I (each node sees only itself and the ∅ action), the GNN can learn the
    identity map on codes: a short overfit reaches exact reproduction."""
    model = ct_layer(graph_hidden=8, gnn_hidden=16, position_dropout=0.0)
    codes = codes_batch(3)["x_codes"]
    params = model.init({"params": jax.random.key(0), "gumbel": jax.random.key(1)}, codes, jnp.zeros(B, jnp.int32))["params"]
    optimizer = optax.adam(3e-2)

    def loss(p):
        logits = model.apply({"params": p}, codes, method=model.identity_transition)
        return ct.code_cross_entropy(logits, codes).mean()

    @jax.jit
    def update(p, opt_state):
        grads = jax.grad(loss)(p)
        updates, opt_state = optimizer.update(grads, opt_state)
        return optax.apply_updates(p, updates), opt_state

    opt_state = optimizer.init(params)
    for _ in range(150):
        params, opt_state = update(params, opt_state)
    logits = model.apply({"params": params}, codes, method=model.identity_transition)
    np.testing.assert_array_equal(jnp.argmax(logits, -1), codes)


@pytest.mark.parametrize("mode", list(ct.MODES))
def test_one_train_step_per_mode_is_finite(model_and_params, mode):
    model, params = model_and_params
    state = TrainState.create(apply_fn=model.apply, params=params, tx=optax.adam(1e-3))
    loss_fn = functools.partial(ct.MODES[mode], model=model, weights=ct.default_weights())
    new_state, metrics = jax.jit(functools.partial(train_step, loss_fn=loss_fn))(state, codes_batch(), jax.random.key(2))
    assert all(bool(jnp.all(jnp.isfinite(v))) for v in jax.tree.leaves(metrics))
    assert all(bool(jnp.all(jnp.isfinite(v))) for v in jax.tree.leaves(new_state.params))
    changed = jax.tree.map(lambda a, b: bool(jnp.any(a != b)), params, new_state.params)
    assert any(jax.tree.leaves(changed))


def test_out_of_range_action_is_a_clear_error(model_and_params):
    model, params = model_and_params
    with pytest.raises(ValueError, match=r"action indices must be in \[0, 4\]"):
        model.apply({"params": params}, codes_batch()["x_codes"], jnp.full(B, 7, jnp.int32), rngs={"gumbel": jax.random.key(1)})


def test_most_likely_structure_thresholds_the_probabilities_and_draws_nothing(model_and_params):
    """The headline's structure: mask and graph are 1[probability > 0.5], the same
    under any key, while the sampling layer's draws follow the key."""
    model, params = model_and_params
    codes, action = codes_batch()["x_codes"], jnp.arange(B, dtype=jnp.int32) % A
    most_likely = model.with_structure("most_likely")

    def run(layer, seed):
        return layer.apply({"params": params}, codes, action,
                           rngs={"gumbel": jax.random.key(seed)})

    first, second = run(most_likely, 1), run(most_likely, 2)
    for key in ("mask", "adjacency", "logits"):
        np.testing.assert_array_equal(first[key], second[key])
    np.testing.assert_array_equal(first["mask"], (first["mask_probs"] > 0.5).astype(np.float32))
    np.testing.assert_array_equal(first["adjacency"],
                                  (first["edge_probs"] > 0.5).astype(np.float32))
    # Same parameters, same probabilities: only how the structure is taken differs.
    sampled = [run(model, seed) for seed in (1, 2)]
    np.testing.assert_allclose(sampled[0]["mask_probs"], first["mask_probs"], rtol=1e-6)
    assert not np.array_equal(sampled[0]["adjacency"], sampled[1]["adjacency"])


@pytest.mark.parametrize("ablation", ["shuffled", "full", "empty"])
def test_graph_ablations_replace_the_graph(model_and_params, ablation):
    model, params = model_and_params
    codes, action = codes_batch()["x_codes"], jnp.arange(B, dtype=jnp.int32) % A
    rngs = {"gumbel": jax.random.key(3)}
    learned = model.with_structure("most_likely").apply({"params": params}, codes, action,
                                                         rngs=rngs)
    ablated = model.with_structure("most_likely", ablation).apply({"params": params}, codes,
                                                                  action, rngs=rngs)
    np.testing.assert_array_equal(ablated["mask"], learned["mask"])  # only the graph moves
    adjacency = np.asarray(ablated["adjacency"])
    if ablation == "full":
        assert np.all(adjacency == 1.0)
    elif ablation == "empty":
        assert np.all(adjacency == 0.0)
    else:  # each example keeps its edge count, placed elsewhere
        np.testing.assert_array_equal(adjacency.sum(axis=(1, 2)),
                                      np.asarray(learned["adjacency"]).sum(axis=(1, 2)))
        assert not np.array_equal(adjacency, learned["adjacency"])
        assert set(np.unique(adjacency)) <= {0.0, 1.0}
    assert float(jnp.abs(ablated["logits"] - learned["logits"]).max()) > 1e-6


def test_unknown_structure_or_ablation_is_a_clear_error(model_and_params):
    model, _ = model_and_params
    with pytest.raises(ValueError, match=r"structure must be one of \('sample', 'most_likely'\)"):
        model.with_structure("mode")
    with pytest.raises(ValueError, match="graph_ablation must be one of"):
        model.with_structure("sample", "random")
