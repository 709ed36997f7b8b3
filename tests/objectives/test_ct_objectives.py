"""Every CT-VAE loss term on hand-made inputs with known values, and each mode's
total rebuilt by hand from its terms on a tiny CT layer."""

import jax
import jax.numpy as jnp
import ml_collections
import numpy as np
import pytest

from causal_disent import models
from causal_disent.objectives import ct
from configs import ctvae_shapes3d


def test_code_cross_entropy_against_hand_values():
    # Two nodes; node 0 puts all mass on its target, node 1 is uniform over 4 codes.
    logits = jnp.array([[[100.0, 0, 0, 0], [0.0, 0, 0, 0]]])
    targets = jnp.array([[0, 3]])
    np.testing.assert_allclose(ct.code_cross_entropy(logits, targets), [np.log(4) / 2], rtol=1e-6)


def test_identity_adjacency_loss():
    np.testing.assert_allclose(ct.identity_adjacency_loss(jnp.eye(3)[None]), 0.0)
    full = jnp.ones((1, 3, 3))
    np.testing.assert_allclose(ct.identity_adjacency_loss(full), 6 / 9)


def test_graph_kl_to_uniform():
    np.testing.assert_allclose(ct.graph_kl_to_uniform(jnp.zeros((2, 3, 3))), 0.0, atol=1e-7)
    p = 0.9
    logit = np.log(p / (1 - p))
    expected = p * np.log(2 * p) + (1 - p) * np.log(2 * (1 - p))
    np.testing.assert_allclose(ct.graph_kl_to_uniform(jnp.full((1, 2, 2), logit)), expected, rtol=1e-5)


def test_adjacency_sparsity_loss():
    adjacency = jnp.array([[[1.0, 0.0], [1.0, 1.0]]])
    np.testing.assert_allclose(ct.adjacency_sparsity_loss(adjacency), 0.75)


def test_dependency_loss_counts_nodes_without_parents():
    # σ = 0 everywhere in row 0 (no parent for sure), σ = 1 somewhere in row 1.
    logits = jnp.array([[[-50.0, -50.0], [50.0, -50.0]]])
    np.testing.assert_allclose(ct.dependency_loss(logits), 1.0, atol=1e-6)
    # σ = 0.5 on both edges of both rows: Σ_i (0.5 · 0.5)² = 2 · 1/16.
    np.testing.assert_allclose(ct.dependency_loss(jnp.zeros((1, 2, 2))), 2 / 16, rtol=1e-6)


def test_action_scores_and_factor_folding():
    # Action 1's transition predicts Y exactly, action 0's is uniform.
    y_codes = jnp.array([[0, 1]])
    exact = jnp.array([[[30.0, 0], [0, 30.0]]])
    uniform = jnp.zeros((1, 2, 2))
    scores = ct.action_scores(jnp.stack([uniform, exact]), y_codes)  # [B=1, A=2]
    assert scores.shape == (1, 2)
    np.testing.assert_allclose(scores[0, 0], -np.log(2), rtol=1e-5)
    assert scores[0, 1] > -1e-6
    probs = jnp.array([[0.1, 0.2, 0.3, 0.4]])  # F = 2: (f0+, f1+, f0-, f1-)
    np.testing.assert_allclose(ct.fold_factor_probabilities(probs), [[0.4, 0.6]])


# ---- the three modes on a tiny CT layer -------------------------------------------

NODES, CODES, ACTIONS, BATCH = 4, 3, 2, 3
# Distinct values, so a weight moved onto another term changes the total.
WEIGHTS = {"gamma": 1.5, "identity": 0.3, "graph_kl": 0.7, "graph_sparsity": 1.9,
           "graph_dependency": 2.3, "action": 1.7}
CHANGED = {"gamma": 0.6, "identity": 5.0, "graph_kl": 3.1, "graph_sparsity": 0.2,
           "graph_dependency": 7.0, "action": 0.45}


def standard_total(w, m):
    return w["gamma"] * (m["ce_x"] + w["identity"] * (m["ce_identity"] + m["identity_graph"]))


def action_total(w, m):
    return w["gamma"] * (
        m["ce_y"] + w["graph_kl"] * m["graph_kl"] + w["graph_sparsity"] * m["graph_sparsity"]
        + w["graph_dependency"] * m["graph_dependency"]
    )


def causal_total(w, m):
    return w["action"] * m["action_ce"]


# mode -> (hand formula, its terms, the weights it uses)
HAND = {
    "standard": (standard_total, ("ce_x", "ce_identity", "identity_graph"), {"gamma", "identity"}),
    "action": (action_total, ("ce_y", "graph_kl", "graph_sparsity", "graph_dependency"),
               {"gamma", "graph_kl", "graph_sparsity", "graph_dependency"}),
    "causal": (causal_total, ("action_ce",), {"action"}),
}


@pytest.fixture(scope="module")
def tiny():
    """(model, params, batch, rng, run): `run(mode, weights)` is the mode's loss,
    jitted once per mode with the weights as traced values."""
    # High dropout so that the positional-dropout draws visibly matter.
    model_config = ctvae_shapes3d.get_config().ct.model
    model_config.update(graph_hidden=4, gnn_hidden=2, gnn_layers=1, position_dropout=0.5)
    model = models.build_ct_layer(model_config, NODES, CODES, ACTIONS)
    data = np.random.default_rng(0)
    batch = {
        "x_codes": jnp.asarray(data.integers(0, CODES, (BATCH, NODES)), jnp.int32),
        "y_codes": jnp.asarray(data.integers(0, CODES, (BATCH, NODES)), jnp.int32),
        "action": jnp.asarray([0, 1, 1], jnp.int32),
    }
    keys = jax.random.split(jax.random.key(0), 2)
    params = model.init(
        {"params": keys[0], "gumbel": keys[1]}, batch["x_codes"], batch["action"]
    )["params"]
    rng = jax.random.key(7)
    compiled = {}

    def run(mode, weights):
        if mode not in compiled:
            compiled[mode] = jax.jit(lambda w: ct.MODES[mode](
                params, batch, rng, model=model, weights=ml_collections.ConfigDict(w)))
        loss, metrics = compiled[mode]({k: jnp.float32(v) for k, v in weights.items()})
        return float(loss), {k: np.float64(v) for k, v in metrics.items()}

    return model, params, batch, rng, run


def test_the_modes_are_exactly_the_hand_formulas():
    assert set(ct.MODES) == set(HAND)
    assert set(WEIGHTS) == set(CHANGED) == set(ct.default_weights())


@pytest.mark.parametrize("mode", list(HAND))
def test_total_is_the_hand_formula_of_its_terms(tiny, mode):
    *_, run = tiny
    formula, terms, _ = HAND[mode]
    loss, metrics = run(mode, WEIGHTS)
    values = [metrics[t] for t in terms]
    # Non-zero and pairwise distinct, or a dropped or misplaced weight could hide.
    assert all(np.isfinite(v) and v > 0 for v in values), values
    assert len(set(np.round(values, 6))) == len(values), values
    np.testing.assert_allclose(loss, formula(WEIGHTS, metrics), rtol=2e-6)


@pytest.mark.parametrize("mode", list(HAND))
@pytest.mark.parametrize("name", list(WEIGHTS))
def test_each_weight_changes_the_total_as_the_formula_says(tiny, mode, name):
    *_, run = tiny
    formula, _, used = HAND[mode]
    base_loss, base_metrics = run(mode, WEIGHTS)
    changed = {**WEIGHTS, name: CHANGED[name]}
    loss, metrics = run(mode, changed)
    assert metrics == base_metrics  # the terms do not depend on the weights
    np.testing.assert_allclose(loss, formula(changed, base_metrics), rtol=2e-6)
    if name in used:
        assert abs(loss - base_loss) > 1e-4 * abs(base_loss)
    else:
        assert loss == base_loss


def _logits_ce(logits, codes) -> np.ndarray:
    """Mean over nodes of −log softmax(logits)[code], in numpy: [..., N, K] -> [...]."""
    logits = np.asarray(logits, np.float64)
    log_probs = logits - logits.max(-1, keepdims=True)
    log_probs -= np.log(np.exp(log_probs).sum(-1, keepdims=True))
    return -np.take_along_axis(log_probs, np.asarray(codes)[..., None], -1)[..., 0].mean(-1)


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-np.asarray(x, np.float64)))


def test_standard_terms_are_what_they_claim(tiny):
    model, params, batch, rng, run = tiny
    _, metrics = run("standard", WEIGHTS)
    codes = batch["x_codes"]
    null_rngs, identity_rngs = ct.standard_rngs(rng)
    # Through the general path (__call__ with ∅), not the loss's null_transition.
    null = jnp.full((BATCH,), ACTIONS, jnp.int32)
    out = model.apply({"params": params}, codes, null, train=True, rngs=null_rngs)

    def identity_ce(rngs):
        logits = model.apply({"params": params}, codes, train=True, rngs=rngs,
                             method=model.identity_transition)
        return float(ct.code_cross_entropy(logits, codes).mean())

    adjacency = np.asarray(out["adjacency"])
    np.testing.assert_allclose(metrics["ce_x"], _logits_ce(out["logits"], codes).mean(), rtol=1e-5)
    np.testing.assert_allclose(metrics["ce_identity"], identity_ce(identity_rngs), rtol=1e-5)
    # The identity pass has its own streams: the ∅ pass's give another value.
    assert abs(identity_ce(null_rngs) - metrics["ce_identity"]) > 1e-4
    np.testing.assert_allclose(
        metrics["identity_graph"], np.mean((adjacency - np.eye(NODES)) ** 2), rtol=1e-6)
    assert metrics["mask_mean"] == 0.0
    np.testing.assert_allclose(metrics["edge_density"], adjacency.mean(), rtol=1e-6)
    np.testing.assert_allclose(
        metrics["code_accuracy"], np.mean(np.argmax(out["logits"], -1) == codes), rtol=1e-6)


def test_standard_passes_draw_independent_dropout(tiny):
    """The ∅ pass and the identity pass get different positional-dropout masks."""
    model, params, batch, rng, _ = tiny
    null_rngs, identity_rngs = ct.standard_rngs(rng)
    for stream in null_rngs:
        assert not np.array_equal(jax.random.key_data(null_rngs[stream]),
                                  jax.random.key_data(identity_rngs[stream]))

    def features(rngs):
        return np.asarray(model.apply({"params": params}, batch["x_codes"], True, rngs=rngs,
                                      method=model.node_features))

    assert not np.array_equal(features(null_rngs), features(identity_rngs))


def test_action_terms_are_what_they_claim(tiny):
    model, params, batch, rng, run = tiny
    _, metrics = run("action", WEIGHTS)
    out = model.apply({"params": params}, batch["x_codes"], batch["action"], train=True,
                      rngs=ct._rngs(rng))
    probs, adjacency = _sigmoid(out["edge_logits"]), np.asarray(out["adjacency"])
    kl = probs * np.log(2 * probs) + (1 - probs) * np.log(2 * (1 - probs))
    np.testing.assert_allclose(
        metrics["ce_y"], _logits_ce(out["logits"], batch["y_codes"]).mean(), rtol=1e-5)
    np.testing.assert_allclose(metrics["graph_kl"], kl.mean(), rtol=1e-4)
    np.testing.assert_allclose(metrics["graph_sparsity"], np.mean(adjacency**2), rtol=1e-6)
    no_parent = np.prod(1 - probs, axis=-1)  # [B, N]
    np.testing.assert_allclose(
        metrics["graph_dependency"], np.mean(np.sum(no_parent**2, -1)), rtol=1e-5)
    np.testing.assert_allclose(metrics["mask_mean"], np.asarray(out["mask"]).mean(), rtol=1e-6)


def test_causal_terms_are_what_they_claim(tiny):
    model, params, batch, rng, run = tiny
    _, metrics = run("causal", WEIGHTS)
    every = model.apply({"params": params}, batch["x_codes"], train=True, rngs=ct._rngs(rng),
                        method=model.all_actions)
    scores = -_logits_ce(every["logits"], batch["y_codes"][None]).T  # [B, A]
    log_q = scores - np.log(np.exp(scores).sum(-1, keepdims=True))
    true = np.asarray(batch["action"])
    np.testing.assert_allclose(
        metrics["action_ce"], -log_q[np.arange(BATCH), true].mean(), rtol=1e-5)
    np.testing.assert_allclose(
        metrics["action_accuracy"], np.mean(scores.argmax(-1) == true), rtol=1e-6)


def test_structure_noise_falls_linearly_from_one_to_its_final_value():
    values = [float(ct.structure_noise_scale(step, 100, 0.2)) for step in (0, 25, 100, 150)]
    assert values == pytest.approx([1.0, 0.8, 0.2, 0.2])
    assert float(ct.structure_noise_scale(40, 100, 1.0)) == 1.0


@pytest.mark.parametrize("mode", ["standard", "action", "causal"])
def test_the_batchs_structure_noise_reaches_every_sampler(tiny, mode):
    """Scale 1 in the batch is the paper's loss exactly; scale 0 is the loss of the
    most likely masks and graphs (the same loss with the samplers' noise gone)."""
    model, params, batch, rng, _ = tiny
    weights = ml_collections.ConfigDict(WEIGHTS)
    loss = ct.MODES[mode]

    def total(batch, model=model):
        return float(loss(params, batch, rng, model=model, weights=weights)[0])

    assert total({**batch, ct.STRUCTURE_NOISE: jnp.float32(1.0)}) == pytest.approx(
        total(batch), rel=1e-6)
    noiseless = total({**batch, ct.STRUCTURE_NOISE: jnp.float32(0.0)})
    assert noiseless == pytest.approx(total(batch, model.with_structure("most_likely")),
                                      rel=1e-5)
    assert noiseless != pytest.approx(total(batch), rel=1e-4)
