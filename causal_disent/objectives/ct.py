"""CT-VAE stage-2 objectives: the three modes and every regulariser (paper §3.5).

Each mode is a pure `loss(params, batch, rng, *, model, weights)` returning
(scalar loss, metrics); the training schedule picks one per step from `MODES`
(never a traced mode flag). A batch holds the frozen MCQ-VAE codes of X and Y,
{"x_codes": [B, N], "y_codes": [B, N], "action": [B]}.

Weights (the authors' released values; the paper gives none): every CT term is scaled by γ = 1.5;
identity losses 0.01, Bernoulli KL 0.4, L_|M| 0.01, L_dep 0.1, L_a 1.
"""

import flax.linen as nn
import jax
import jax.numpy as jnp
import ml_collections

from causal_disent.models import gumbel


# ---- terms (each a pure function of arrays) -------------------------------------


# Batch key of the mask and graph samplers' noise scale for this step (the stage
# puts it there when `objective.structure_noise_final` < 1; see structure_noise_scale).
STRUCTURE_NOISE = "structure_noise"


def structure_noise_scale(step, total_steps: int, final: float):
    """The samplers' noise scale at `step`: 1 (the paper's Gumbel-Bernoulli samples)
    falling linearly to `final` at the last step. At 0 a sample is the most likely
    structure, the one the headline evaluation takes, so a run that ends near 0 is
    trained on the masks and graphs it is scored with."""
    progress = jnp.minimum(jnp.asarray(step, jnp.float32) / max(total_steps, 1), 1.0)
    return 1.0 - (1.0 - final) * progress


def code_cross_entropy(logits: jax.Array, target_codes: jax.Array) -> jax.Array:
    """Per-example mean over nodes of CE(logits, target codes): [..., N, K], [..., N]
    -> [...]. Targets are data, never differentiated."""
    log_probs = jax.nn.log_softmax(logits)
    target_codes = jax.lax.stop_gradient(target_codes)
    picked = jnp.take_along_axis(log_probs, target_codes[..., None], axis=-1)[..., 0]
    return -picked.mean(axis=-1)


def identity_adjacency_loss(adjacency: jax.Array) -> jax.Array:
    """L_id_M = mean((M − I)²) over [B, N, N]: the ∅ graph of standard mode should
    leave every variable to itself."""
    identity = jnp.eye(adjacency.shape[-1])
    return jnp.mean((adjacency - identity) ** 2)


def graph_kl_to_uniform(edge_logits: jax.Array) -> jax.Array:
    """Mean over edges of KL(Bernoulli(σ(α_ij)) ‖ Bernoulli(0.5)) (Eq. 11–13)."""
    return jnp.mean(gumbel.bernoulli_kl_to_uniform(edge_logits))


def adjacency_sparsity_loss(adjacency: jax.Array) -> jax.Array:
    """L_|M| = mean(M²) (Eq. 14)."""
    return jnp.mean(adjacency**2)


def dependency_loss(edge_logits: jax.Array) -> jax.Array:
    """L_dep = Σ_i (Π_j (1 − σ_ij))² (Eq. 15), batch mean: penalises nodes likely to
    have no parent. The product is taken in log space (log(1 − σ(α)) = log σ(−α))."""
    log_no_parent = jnp.sum(jax.nn.log_sigmoid(-edge_logits), axis=-1)  # [B, N]
    return jnp.mean(jnp.sum(jnp.exp(2.0 * log_no_parent), axis=-1))


def action_scores(all_action_logits: jax.Array, y_codes: jax.Array) -> jax.Array:
    """s_â = −mean_nodes CE(GNN(L_x, â), L_y): [A, B, N, K], [B, N] -> [B, A] (Eq. 10)."""
    return -code_cross_entropy(all_action_logits, y_codes[None]).T


def fold_factor_probabilities(action_probs: jax.Array) -> jax.Array:
    """[..., 2F] action probabilities -> [..., F]: q[:F] + q[F:] (increase + decrease)."""
    num_factors = action_probs.shape[-1] // 2
    return action_probs[..., :num_factors] + action_probs[..., num_factors:]


# ---- modes ----------------------------------------------------------------------


def structure_noise(batch: dict) -> dict:
    """The keyword that passes the batch's STRUCTURE_NOISE (the samplers' noise scale
    of this step) to the CT layer; none when the batch has none (the paper's 1)."""
    return {} if STRUCTURE_NOISE not in batch else {"noise_scale": batch[STRUCTURE_NOISE]}


def standard_loss(params, batch, rng, *, model: nn.Module, weights) -> tuple[jax.Array, dict]:
    """No action: reproduce X from X over the ∅ graph, and over the identity graph."""
    codes = batch["x_codes"]
    null_rngs, identity_rngs = standard_rngs(rng)
    out = model.apply(
        {"params": params}, codes, train=True, rngs=null_rngs, method=model.null_transition,
        **structure_noise(batch),
    )
    identity_logits = model.apply(
        {"params": params}, codes, train=True, rngs=identity_rngs,
        method=model.identity_transition,
    )
    terms = {
        "ce_x": code_cross_entropy(out["logits"], codes).mean(),
        "ce_identity": code_cross_entropy(identity_logits, codes).mean(),
        "identity_graph": identity_adjacency_loss(out["adjacency"]),
    }
    loss = weights.gamma * (
        terms["ce_x"] + weights.identity * (terms["ce_identity"] + terms["identity_graph"])
    )
    return loss, {**terms, **_structure_metrics(out), **_code_accuracy(out["logits"], codes)}


def action_loss(params, batch, rng, *, model: nn.Module, weights) -> tuple[jax.Array, dict]:
    """Apply the true action: predict Y's codes, with the graph regularisers."""
    out = model.apply(
        {"params": params}, batch["x_codes"], batch["action"], train=True, rngs=_rngs(rng),
        **structure_noise(batch),
    )
    terms = {
        "ce_y": code_cross_entropy(out["logits"], batch["y_codes"]).mean(),
        "graph_kl": graph_kl_to_uniform(out["edge_logits"]),
        "graph_sparsity": adjacency_sparsity_loss(out["adjacency"]),
        "graph_dependency": dependency_loss(out["edge_logits"]),
    }
    loss = weights.gamma * (
        terms["ce_y"]
        + weights.graph_kl * terms["graph_kl"]
        + weights.graph_sparsity * terms["graph_sparsity"]
        + weights.graph_dependency * terms["graph_dependency"]
    )
    return loss, {**terms, **_structure_metrics(out), **_code_accuracy(out["logits"], batch["y_codes"])}


def causal_loss(params, batch, rng, *, model: nn.Module, weights) -> tuple[jax.Array, dict]:
    """Score every action's transition X -> Y and classify the true action (Eq. 10)."""
    out = model.apply(
        {"params": params}, batch["x_codes"], train=True, rngs=_rngs(rng),
        method=model.all_actions, **structure_noise(batch),
    )
    scores = action_scores(out["logits"], batch["y_codes"])  # [B, A]
    log_q = jax.nn.log_softmax(scores)
    action_ce = -jnp.take_along_axis(log_q, batch["action"][:, None], axis=-1).mean()
    accuracy = jnp.mean(jnp.argmax(scores, axis=-1) == batch["action"])
    return weights.action * action_ce, {"action_ce": action_ce, "action_accuracy": accuracy}


MODES = {"standard": standard_loss, "action": action_loss, "causal": causal_loss}


def default_weights() -> ml_collections.ConfigDict:
    return ml_collections.ConfigDict(
        {"gamma": 1.5, "identity": 0.01, "graph_kl": 0.4, "graph_sparsity": 0.01,
         "graph_dependency": 0.1, "action": 1.0}
    )


def _rngs(rng: jax.Array) -> dict[str, jax.Array]:
    gumbel_rng, dropout_rng, noise_rng = jax.random.split(rng, 3)
    return {"gumbel": gumbel_rng, "dropout": dropout_rng, "noise": noise_rng}


def standard_rngs(rng: jax.Array) -> tuple[dict[str, jax.Array], dict[str, jax.Array]]:
    """The RNG streams of standard mode's two passes: (∅ transition, identity graph).

    Each pass gets its own keys; shared keys would give the identity pass the same
    positional-dropout mask and exogenous noise as the ∅ pass, so its loss would not
    be an independent draw (and XLA would fold the two dropout draws into one).
    """
    null_rng, identity_rng = jax.random.split(rng)
    return _rngs(null_rng), _rngs(identity_rng)


def _structure_metrics(out: dict) -> dict:
    return {
        "mask_mean": out["mask"].mean(),
        "edge_density": out["adjacency"].mean(),
    }


def _code_accuracy(logits: jax.Array, target_codes: jax.Array) -> dict:
    return {"code_accuracy": jnp.mean(jnp.argmax(logits, axis=-1) == target_codes)}
