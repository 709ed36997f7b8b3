"""The terms of CausalVAE's objective as pure functions of arrays (Yang et al.,
"CausalVAE", CVPR 2021, §4, Eq. 10–13):

    −ELBO = BCE(x, f(z)) + KL(q(ε|x,u) ‖ N(0, I)) + KL(q(z|x,u) ‖ p(z|u))   (Eq. 10)
    l_u (Eq. 11), l_m (Eq. 12), H(A) (Eq. 13)

The paper sums them as Eq. 14, L = −ELBO + α·H(A) + β·l_u + γ·l_m with (α, β, γ)
= (1, 1, 1) (§6); the training losses that combine them, with the augmented
Lagrangian below in place of α·H(A), are objectives/causalvae_variants.py's, one
per model variant.

Conventions (see models/scm.py): A[j, i] ≠ 0 means concept j causes concept i;
latents are [B, n, k]; labels u are [B, n]. Every term is a batch mean of a
per-example sum (over pixels, concepts and dims), so the terms are on the scale of
one example's log-likelihood, as in Eq. 10 (E over the data of a sum).

The paper also pre-trains A on l_u with the augmented Lagrangian method of DAG-GNN
(its ref. [32]; §6 "we design a pre-train process by optimizing augmented Lagrangian
method on Eq. 11"): `AugmentedLagrangian`, `augmented_lagrangian_penalty`,
`update_augmented_lagrangian` and `label_graph_objective` are that procedure's parts
(the first three also carry H(A) in the joint training, train/causalvae_stage.py).
(The authors' released code instead added fixed 3·H + 0.5·H² to the loss; we follow
the paper's method.)
"""

import flax.struct
import jax
import jax.numpy as jnp

from causal_disent.models import gumbel
from causal_disent.models.scm import check_adjacency

# c in H(A) = tr((I + (c/n)·A∘A)^n) − n. The paper leaves c "an arbitrary positive
# number" (its "c/m" is DAG-GNN's α = c/m with m the number of nodes, here n);
# DAG-GNN's and the CausalVAE authors' code use A∘A/n, i.e. c = 1.
DAG_CONSTRAINT_C = 1.0


# ---- the causal graph --------------------------------------------------------------


def dag_constraint(adjacency: jax.Array, c: float = DAG_CONSTRAINT_C) -> jax.Array:
    """H(A) = tr((I + (c/n)·A∘A)^n) − n (Eq. 13, DAG-GNN's polynomial constraint).

    (I + M)^n = Σ_k C(n, k) M^k with M = (c/n)·A∘A ≥ 0, so tr counts weighted
    closed walks of length 1..n: H = 0 iff A has no cycle (self-loops included),
    H > 0 otherwise. The power is by repeated squaring (jnp.linalg.matrix_power).

    Args:
      adjacency: [n, n] A.
      c: c > 0.
    Returns:
      scalar H(A) ≥ 0 (up to rounding); its gradient is 2c·((I + M)^{n−1})ᵀ ∘ A.
    """
    check_adjacency(adjacency)
    if isinstance(c, (int, float)) and c <= 0:
        raise ValueError(f"c must be positive; got {c}")
    num_concepts = adjacency.shape[0]
    walks = jnp.eye(num_concepts, dtype=adjacency.dtype) + (c / num_concepts) * (
        adjacency * adjacency
    )
    return jnp.trace(jnp.linalg.matrix_power(walks, num_concepts)) - num_concepts


def label_reconstruction_loss(adjacency: jax.Array, labels: jax.Array) -> jax.Array:
    """l_u = E ‖u − σ(Aᵀ u)‖₂² (Eq. 11): A should explain the labels from their parents.

    (Aᵀ u)_i = Σ_j A[j, i] u_j. σ is the logistic function, so u must lie in [0, 1]
    (the paper's labels are binary): pass binary labels as they are and continuous
    ones min–max scaled into [0, 1] (`labels_to_unit_interval`), not the prior's
    (u − mean)/scale, which leaves [0, 1].

    Args:
      adjacency: [n, n] A.
      labels: [B, n] u in [0, 1].
    Returns:
      scalar: mean over the batch of Σ_i (u_i − σ((Aᵀu)_i))².
    """
    check_adjacency(adjacency)
    _check_labels(labels, adjacency.shape[0])
    predicted = jax.nn.sigmoid(labels @ adjacency)  # row b: σ(Aᵀ u_b)
    return jnp.mean(jnp.sum((labels - predicted) ** 2, axis=-1))


def mask_loss(latents: jax.Array, parent_prediction: jax.Array) -> jax.Array:
    """l_m = E Σ_i ‖z_i − g_i(A_i ∘ z)‖² (Eq. 12).

    Args:
      latents: [B, n, k] z (the causal layer's output, the mask layer's input).
      parent_prediction: [B, n, k] g_i(A_i ∘ z), the mask layer's
        "parent_prediction".
    Returns:
      scalar: mean over the batch of the sum over concepts and dims.
    """
    if latents.shape != parent_prediction.shape or latents.ndim != 3:
        raise ValueError(
            "latents and parent_prediction must both be [B, n, k]; got "
            f"{latents.shape} and {parent_prediction.shape}"
        )
    return jnp.mean(jnp.sum((latents - parent_prediction) ** 2, axis=(-2, -1)))


# ---- labels ---------------------------------------------------------------------


def normalise_labels(labels: jax.Array, label_scale) -> jax.Array:
    """(u − mean) / scale per concept: the conditional prior's mean λ₁(u) (paper Eq. 7).

    Args:
      labels: [B, n] raw labels.
      label_scale: [n, 2] rows (mean, scale), e.g. `data.pendulum.LABEL_SCALE`.
    Returns:
      [B, n] normalised labels.
    """
    label_scale = jnp.asarray(label_scale, jnp.float32)
    if label_scale.ndim != 2 or label_scale.shape[1] != 2:
        raise ValueError(f"label_scale must be [n, 2] (mean, scale); got {label_scale.shape}")
    _check_labels(labels, label_scale.shape[0])
    return (labels - label_scale[:, 0]) / label_scale[:, 1]


def labels_to_unit_interval(labels: jax.Array, low, high) -> jax.Array:
    """(u − low) / (high − low) per concept: continuous labels into [0, 1] for l_u.

    Args:
      labels: [B, n].
      low, high: [n] (or scalars) the label range, e.g. the training split's
        per-label min and max.
    Returns:
      [B, n], in [0, 1] for labels within [low, high].
    """
    low = jnp.asarray(low, jnp.float32)
    high = jnp.asarray(high, jnp.float32)
    if labels.ndim != 2 or any(
        bound.ndim > 1 or (bound.ndim == 1 and bound.shape[0] != labels.shape[1])
        for bound in (low, high)
    ):
        raise ValueError(
            f"labels must be [B, n] and low, high [n] or scalars; got {labels.shape}, "
            f"{low.shape}, {high.shape}"
        )
    return (labels - low) / (high - low)


# ---- ELBO (Eq. 10) ----------------------------------------------------------------


def bernoulli_reconstruction_loss(logits: jax.Array, images: jax.Array) -> jax.Array:
    """−log p(x | z) under independent Bernoulli pixels: per-example BCE summed over
    all pixels and channels, averaged over the batch.

    Args:
      logits: [B, ...] decoder logits.
      images: [B, ...] targets in [0, 1] (e.g. uint8 / 255).
    Returns:
      scalar.
    """
    if logits.shape != images.shape:
        raise ValueError(f"logits {logits.shape} and images {images.shape} differ in shape")
    log_likelihood = gumbel.bernoulli_log_prob(logits, images)
    return -jnp.mean(jnp.sum(log_likelihood.reshape(logits.shape[0], -1), axis=-1))


def diagonal_gaussian_kl(
    mean_q: jax.Array,
    var_q: jax.Array | None,
    mean_p: jax.Array,
    var_p: jax.Array | None,
) -> jax.Array:
    """KL(N(mean_q, var_q) ‖ N(mean_p, var_p)) for diagonal Gaussians, elementwise.

    = ½ [log(var_p / var_q) + (var_q + (mean_q − mean_p)²) / var_p − 1]. A variance
    of None means 1 (the authors' code fixed the encoder variance to 1).
    """
    var_q = jnp.ones_like(mean_q) if var_q is None else var_q
    var_p = jnp.ones_like(mean_p) if var_p is None else var_p
    return 0.5 * (
        jnp.log(var_p) - jnp.log(var_q) + (var_q + (mean_q - mean_p) ** 2) / var_p - 1.0
    )


def exogenous_kl(mean: jax.Array, var: jax.Array | None = None) -> jax.Array:
    """KL(q(ε|x,u) ‖ N(0, I)) (Eq. 10, second term): [B, n, k] -> scalar batch mean of
    the per-example sum."""
    kl = diagonal_gaussian_kl(mean, var, jnp.zeros_like(mean), None)
    return jnp.mean(jnp.sum(kl.reshape(kl.shape[0], -1), axis=-1))


def label_prior_kl(
    latent_mean: jax.Array, latent_var: jax.Array | None, prior_mean: jax.Array
) -> jax.Array:
    """KL(q(z|x,u) ‖ p(z|u)) with p(z_i|u_i) = N(λ₁(u_i), 1) (Eq. 7, 10; λ₁(u) = u).

    Each of concept i's k dims has prior mean λ₁(u_i) and variance 1.

    Args:
      latent_mean: [B, n, k] mean of q(z|x,u).
      latent_var: [B, n, k] its variance, or None for 1 (the authors' choice).
      prior_mean: [B, n] λ₁(u), i.e. the labels scaled per concept
        (`normalise_labels(u, LABEL_SCALE)` for Pendulum).
    Returns:
      scalar: mean over the batch of the sum over concepts and dims.
    """
    if latent_mean.ndim != 3:
        raise ValueError(f"latent_mean must be [B, n, k]; got {latent_mean.shape}")
    _check_labels(prior_mean, latent_mean.shape[1], what="prior_mean (scaled labels)")
    if prior_mean.shape[0] != latent_mean.shape[0]:
        raise ValueError(
            f"prior_mean batch {prior_mean.shape[0]} != latent batch {latent_mean.shape[0]}"
        )
    kl = diagonal_gaussian_kl(
        latent_mean, latent_var, jnp.broadcast_to(prior_mean[..., None], latent_mean.shape), None
    )
    return jnp.mean(jnp.sum(kl, axis=(-2, -1)))


def negative_elbo(
    reconstruction_logits: jax.Array,
    images: jax.Array,
    exogenous_mean: jax.Array,
    latent_mean: jax.Array,
    prior_mean: jax.Array,
    exogenous_var: jax.Array | None = None,
    latent_var: jax.Array | None = None,
) -> dict[str, jax.Array]:
    """−ELBO of Eq. 10 and its three terms (batch means).

    Args:
      reconstruction_logits: [B, ...] Bernoulli logits of f(z).
      images: [B, ...] targets in [0, 1].
      exogenous_mean, exogenous_var: [B, n, k] q(ε|x,u) (var None = 1).
      latent_mean, latent_var: [B, n, k] q(z|x,u) (var None = 1).
      prior_mean: [B, n] λ₁(u) (scaled labels).
    Returns:
      dict with reconstruction (BCE), kl_exogenous, kl_label_prior and
      negative_elbo = their sum.
    """
    terms = {
        "reconstruction": bernoulli_reconstruction_loss(reconstruction_logits, images),
        "kl_exogenous": exogenous_kl(exogenous_mean, exogenous_var),
        "kl_label_prior": label_prior_kl(latent_mean, latent_var, prior_mean),
    }
    return {**terms, "negative_elbo": sum(terms.values())}


# ---- augmented Lagrangian (pre-training of A on l_u, §6 / DAG-GNN, NOTEARS) ---------


@flax.struct.dataclass
class AugmentedLagrangian:
    """State of the augmented Lagrangian for the constraint H(A) = 0.

    Attributes:
      multiplier: λ, the Lagrange multiplier (starts at 0).
      penalty: ρ, the quadratic penalty weight (starts at 1).
      previous_constraint: H at the last accepted outer step (starts at +inf, so the
        first update is always accepted).
    """

    multiplier: jax.Array
    penalty: jax.Array
    previous_constraint: jax.Array

    @classmethod
    def create(cls, multiplier: float = 0.0, penalty: float = 1.0) -> "AugmentedLagrangian":
        """DAG-GNN's and NOTEARS' starting point: λ = 0, ρ = 1, H_prev = inf."""
        return cls(
            multiplier=jnp.asarray(multiplier, jnp.float32),
            penalty=jnp.asarray(penalty, jnp.float32),
            previous_constraint=jnp.asarray(jnp.inf, jnp.float32),
        )


def augmented_lagrangian_penalty(
    constraint: jax.Array, state: AugmentedLagrangian
) -> jax.Array:
    """λ·h + (ρ/2)·h², the constraint's term in the augmented Lagrangian (h = H(A))."""
    return state.multiplier * constraint + 0.5 * state.penalty * constraint**2


def update_augmented_lagrangian(
    state: AugmentedLagrangian,
    constraint: jax.Array,
    *,
    progress_rate: float = 0.25,
    penalty_growth: float = 10.0,
    max_penalty: float = 1e20,
) -> AugmentedLagrangian:
    """One outer step of the augmented Lagrangian schedule (NOTEARS Alg. 1, DAG-GNN).

    Call it after each inner solve of min_A l_u(A) + λ·h + (ρ/2)·h² (in practice,
    after a fixed number of epochs or steps of the inner optimiser), with h = H(A) at
    its end:
      * h > progress_rate·h_prev (not enough progress) and ρ < max_penalty:
          ρ ← penalty_growth·ρ, λ and h_prev unchanged (the inner problem is solved
          again with the larger penalty);
      * otherwise (accepted): λ ← λ + ρ·h, h_prev ← h.
    Defaults are DAG-GNN's and NOTEARS' (0.25, 10, 1e20). Stop the outer loop once
    h ≤ a tolerance (theirs: 1e-8). Pure and jit-able (no Python branching on h).

    Args:
      state: the current state.
      constraint: scalar h = H(A) after the inner solve.
    Returns:
      the new state.
    """
    constraint = jnp.asarray(constraint, jnp.float32)
    grow = (constraint > progress_rate * state.previous_constraint) & (
        state.penalty < max_penalty
    )
    grown_penalty = jnp.minimum(state.penalty * penalty_growth, max_penalty)
    return AugmentedLagrangian(
        multiplier=jnp.where(
            grow, state.multiplier, state.multiplier + state.penalty * constraint
        ),
        penalty=jnp.where(grow, grown_penalty, state.penalty),
        previous_constraint=jnp.where(grow, state.previous_constraint, constraint),
    )


def label_graph_objective(
    adjacency: jax.Array,
    labels: jax.Array,
    state: AugmentedLagrangian,
    c: float = DAG_CONSTRAINT_C,
) -> tuple[jax.Array, dict[str, jax.Array]]:
    """Pre-training loss of A: l_u(A) + λ·H(A) + (ρ/2)·H(A)² (§6, App. C.3).

    Args:
      adjacency: [n, n] A.
      labels: [B, n] u in [0, 1] (see `label_reconstruction_loss`).
      state: λ and ρ (treated as constants: no gradient flows into them).
      c: c of H(A).
    Returns:
      (scalar loss, {"label_loss", "dag_constraint", "dag_penalty"}).
    """
    state = jax.lax.stop_gradient(state)
    label_loss = label_reconstruction_loss(adjacency, labels)
    constraint = dag_constraint(adjacency, c)
    penalty = augmented_lagrangian_penalty(constraint, state)
    return label_loss + penalty, {
        "label_loss": label_loss,
        "dag_constraint": constraint,
        "dag_penalty": penalty,
    }


def _check_labels(labels: jax.Array, num_concepts: int, what: str = "labels") -> None:
    if labels.ndim != 2 or labels.shape[-1] != num_concepts:
        raise ValueError(
            f"{what} must be [B, {num_concepts}] (one per concept); got shape {labels.shape}"
        )
