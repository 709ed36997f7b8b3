"""The training losses of CausalVAE and its two baselines, one function per variant
(`LOSSES`), each `(params, batch, rng, *, model, scaling, weights, lagrangian) ->
(scalar loss, metrics)` as the generic train step expects once bound.

CausalVAE (Eq. 14 with the augmented Lagrangian in place of α·H(A)):

    L = −ELBO_w + λ·H(A) + (ρ/2)·H(A)² + β·l_u + γ·l_m + w·δ·KL(z̃ ‖ p(z|u))

  −ELBO_w = BCE(x, f(z̃)) + KL(ε ‖ N(0, I)) + w·KL(z ‖ N(λ₁(u), I))   (Eq. 10 at w = 1)

  with z the causal layer's output and z̃ the mask layer's output (what the decoder
  reads). λ (multiplier) and ρ (penalty) are the augmented-Lagrangian state, held
  constant within a step and updated on a schedule by the train stage; they
  replace the paper's fixed α. The last term (δ = `mask_prior_weight`, 0 to drop
  it) is not in Eq. 14: the authors' released code puts the label prior on the
  mask layer's output too, which keeps what the decoder reads in the label's units,
  so that intervention values v = λ₁(u) mean the same to the decoder as to z.
  w (`label_prior_weight`, 1 = the paper) scales both label-prior KLs: at w = 1
  they are a few nats against a pixel BCE of hundreds, so the concept codes follow
  the labels only loosely in a short run (the configs say what they use and why).

ConditionVAE: BCE(x, f(z)) + w·KL(z ‖ N(λ₁(u), I)), z = ε (no causal layer).
CausalVAE-unsup: BCE(x, f(z)) + KL(ε ‖ N(0, I)) + λ·H(A) + (ρ/2)·H(A)²: no labels.

Labels arrive raw (`batch["labels"]`, [B, n]); `LabelScaling` maps them to the
prior mean λ₁(u) = (u − mean)/scale and to [0, 1] for l_u (σ's range).
"""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np

from causal_disent.objectives import causalvae as cv
from causal_disent.utils.images import images_to_unit_range


@dataclasses.dataclass(frozen=True)
class LabelScaling:
    """Per-concept label constants, [n] float arrays each.

    prior_offset, prior_scale: λ₁(u) = (u − prior_offset) / prior_scale.
    low, high: the label range mapped to [0, 1] for l_u.
    """

    prior_offset: np.ndarray
    prior_scale: np.ndarray
    low: np.ndarray
    high: np.ndarray

    @property
    def num_concepts(self) -> int:
        return len(self.prior_offset)

    def prior_mean(self, labels: jax.Array) -> jax.Array:
        """[B, n] raw labels -> [B, n] λ₁(u)."""
        check_labels(labels, self.num_concepts)
        table = np.stack([self.prior_offset, self.prior_scale], axis=1)
        return cv.normalise_labels(labels, table)

    def unit_interval(self, labels: jax.Array) -> jax.Array:
        """[B, n] raw labels -> [B, n] in [0, 1] over [low, high]."""
        check_labels(labels, self.num_concepts)
        return cv.labels_to_unit_interval(labels, self.low, self.high)


def check_labels(labels, num_concepts: int) -> None:
    """ValueError unless `labels` is [B, num_concepts]."""
    shape = jnp.shape(labels)
    if len(shape) != 2 or shape[1] != num_concepts:
        raise ValueError(
            f"labels must be [B, {num_concepts}] (one label per concept, "
            f"num_concepts = {num_concepts}); got shape {tuple(shape)}"
        )


@dataclasses.dataclass(frozen=True)
class LossWeights:
    """β (l_u), γ (l_m), δ (label prior on the mask layer's output), c of H(A), and
    w (label_prior_weight), the weight of the label-prior KLs (1 = Eq. 10)."""

    beta: float = 1.0
    gamma: float = 1.0
    mask_prior_weight: float = 1.0
    dag_c: float = cv.DAG_CONSTRAINT_C
    label_prior_weight: float = 1.0


def _forward(model, params, batch):
    images = images_to_unit_range(batch["image"])
    return images, model.apply({"params": params}, images)


def _graph_terms(outputs, lagrangian: cv.AugmentedLagrangian, weights: LossWeights):
    constraint = cv.dag_constraint(outputs["adjacency"], weights.dag_c)
    penalty = cv.augmented_lagrangian_penalty(constraint, jax.lax.stop_gradient(lagrangian))
    return constraint, penalty


def causalvae_loss(params, batch, rng, *, model, scaling: LabelScaling,
                   weights: LossWeights, lagrangian: cv.AugmentedLagrangian):
    """The full CausalVAE loss (module docstring)."""
    del rng  # deterministic model
    check_labels(batch["labels"], model.num_concepts)
    images, outputs = _forward(model, params, batch)
    prior_mean = scaling.prior_mean(batch["labels"])
    elbo = cv.negative_elbo(
        outputs["reconstruction_logits"], images, outputs["exogenous"], outputs["z"], prior_mean
    )
    constraint, penalty = _graph_terms(outputs, lagrangian, weights)
    label_loss = cv.label_reconstruction_loss(
        outputs["adjacency"], scaling.unit_interval(batch["labels"])
    )
    mask_loss = cv.mask_loss(outputs["z"], outputs["parent_prediction"])
    mask_prior_kl = cv.label_prior_kl(outputs["decoded_z"], None, prior_mean)
    prior_weight = weights.label_prior_weight
    loss = (
        elbo["reconstruction"] + elbo["kl_exogenous"] + prior_weight * elbo["kl_label_prior"]
        + penalty + weights.beta * label_loss + weights.gamma * mask_loss
        + prior_weight * weights.mask_prior_weight * mask_prior_kl
    )
    return loss, {
        **elbo, "dag_constraint": constraint, "dag_penalty": penalty,
        "label_loss": label_loss, "mask_loss": mask_loss, "mask_prior_kl": mask_prior_kl,
    }


def condition_vae_loss(params, batch, rng, *, model, scaling: LabelScaling,
                       weights: LossWeights, lagrangian: cv.AugmentedLagrangian):
    """ConditionVAE: reconstruction + w·KL(z ‖ N(λ₁(u), I)), z = ε."""
    del rng, lagrangian
    check_labels(batch["labels"], model.num_concepts)
    images, outputs = _forward(model, params, batch)
    prior_mean = scaling.prior_mean(batch["labels"])
    reconstruction = cv.bernoulli_reconstruction_loss(outputs["reconstruction_logits"], images)
    kl = cv.label_prior_kl(outputs["z"], None, prior_mean)
    negative_elbo = reconstruction + kl
    loss = reconstruction + weights.label_prior_weight * kl
    return loss, {"reconstruction": reconstruction, "kl_label_prior": kl,
                  "negative_elbo": negative_elbo}


def causalvae_unsup_loss(params, batch, rng, *, model, scaling: LabelScaling,
                         weights: LossWeights, lagrangian: cv.AugmentedLagrangian):
    """CausalVAE-unsup: reconstruction + KL(ε ‖ N(0, I)) + the DAG penalty; no labels."""
    del rng, scaling
    images, outputs = _forward(model, params, batch)
    reconstruction = cv.bernoulli_reconstruction_loss(outputs["reconstruction_logits"], images)
    kl = cv.exogenous_kl(outputs["exogenous"])
    constraint, penalty = _graph_terms(outputs, lagrangian, weights)
    negative_elbo = reconstruction + kl
    return negative_elbo + penalty, {
        "reconstruction": reconstruction, "kl_exogenous": kl, "negative_elbo": negative_elbo,
        "dag_constraint": constraint, "dag_penalty": penalty,
    }


LOSSES = {
    "causalvae": causalvae_loss,
    "condition_vae": condition_vae_loss,
    "causalvae_unsup": causalvae_unsup_loss,
}
