"""The losses of the VAE family (models/vae.py), one function per model (`LOSSES`),
chosen by `config.vae.objective.name`; the section's other keys are the chosen
loss's keyword weights (`bind_loss`).

Every loss is built from the same pieces (objectives/vae_terms.py), for a Gaussian
posterior q(z | x) = N(μ, diag σ²), a N(0, I) prior (but iVAE's and LadderVAE's, in
their own modules) and the model's pixel likelihood (Bernoulli unless
`vae.model.likelihood` says "gaussian"): the reparameterised sample, the pixels'
−log p(x | z) and the analytic KL per latent.

β-VAE (Higgins et al., "β-VAE: Learning Basic Visual Concepts with a Constrained
Variational Framework", ICLR 2017, Eq. 4) minimises reconstruction + β·KL; β = 1 is
the VAE. Terms are batch means of per-image sums, so they are in nats per image.
AnnealedVAE, β-TCVAE and DIP-VAE-I/-II follow disentanglement_lib, the code of the
study of Locatello et al., "Challenging Common Assumptions in the Unsupervised
Learning of Disentangled Representations", ICML 2019, which trained them all on
models/vae.py's network.

Ada-GVAE and Ada-ML-VAE (objectives/weak_vae.py) learn from pairs of images
(`PAIR_LOSSES`): their batches hold both images of each pair.

A model of the family is a loss `loss(params, batch, rng, *, model, **weights)` plus
one line in `LOSSES`. Its keyword-only arguments are the config's weights, but for
`CONTEXT_ARGUMENTS`: `model`, and what the stage supplies to a loss that declares it,
`step` (the train state's step, bound at every step by train/vae_stage.py),
`dataset_size` (the training split's size, bound by `bind_loss`) and `discriminator`
(FactorVAE's second network, bound by `bind_loss`; such a loss's params are
{"vae", "discriminator"}, `needs_discriminator`).
"""

import functools
import inspect
import math
from collections.abc import Callable, Mapping

import flax.linen as nn
import jax
import jax.numpy as jnp

from causal_disent.models.xblock import MASK_RNG
from causal_disent.objectives.factor_vae import (
    density_ratio_total_correlation,
    discriminator_cross_entropy,
    permute_dims,
)
from causal_disent.objectives.ivae import ivae_loss
from causal_disent.objectives.ladder_vae import ladder_vae_loss
from causal_disent.objectives.vae_terms import (
    batch_elbo_metrics,
    gaussian_kl_to_standard_normal,
    minibatch_weighted_kl_decomposition,
    pixel_nll,
    reparameterise,
)
from causal_disent.objectives.weak_vae import ada_gvae_loss, ada_ml_vae_loss
from causal_disent.utils.images import images_to_unit_range


# The batch key under which the training step hands a loss the train state's step
# (train/vae_stage.vae_train_step): an XBlock's mask temperature follows it. A batch
# without it (evaluation, tests) decodes at the schedule's last temperature.
TRAIN_STEP = "train_step"


def sampled_terms(params: dict, batch: dict, rng: jax.Array, model: nn.Module) -> dict:
    """One pass with a reparameterised sample: {mean, log_variance, z [B, d],
    reconstruction [B] (−log p(x | z)), kl [B, d] (per latent)}."""
    images = images_to_unit_range(batch["image"])
    variables = {"params": params}
    mean, log_variance = model.apply(variables, images, method=model.encode)
    latents = reparameterise(rng, mean, log_variance)
    # An XBlock's mask is sampled from its own stream (models without one ignore it).
    logits = model.apply(variables, latents, batch.get(TRAIN_STEP), method=model.decode,
                         rngs={MASK_RNG: jax.random.fold_in(rng, 1)})
    return {
        "mean": mean, "log_variance": log_variance, "z": latents,
        "reconstruction": pixel_nll(model.likelihood, logits, images),
        "kl": gaussian_kl_to_standard_normal(mean, log_variance),
    }


def elbo_metrics(terms: dict) -> dict:
    """`batch_elbo_metrics` of `sampled_terms`' reconstruction and kl."""
    return batch_elbo_metrics(terms["reconstruction"], terms["kl"])


def autoencoder_loss(params: dict, batch: dict, rng: jax.Array, *,
                     model: nn.Module) -> tuple[jax.Array, dict]:
    """The deterministic autoencoder (AE; with an XBlock the XAE of "Interventional
    consistency in autoencoders", ICLR 2021 submission, §4.1): −log p(x | D(μ(x))),
    the encoder's mean decoded, no sampling and no KL. The encoder's log-variance head
    is unused (and untrained). `rng` only samples an XBlock's mask."""
    images = images_to_unit_range(batch["image"])
    variables = {"params": params}
    mean, _ = model.apply(variables, images, method=model.encode)
    logits = model.apply(variables, mean, batch.get(TRAIN_STEP), method=model.decode,
                         rngs={MASK_RNG: rng})
    reconstruction = jnp.mean(pixel_nll(model.likelihood, logits, images))
    return reconstruction, {"reconstruction": reconstruction}


def beta_vae_loss(params: dict, batch: dict, rng: jax.Array, *, model: nn.Module,
                  beta: float) -> tuple[jax.Array, dict]:
    """β-VAE: reconstruction + β·KL(q(z | x) ‖ N(0, I)), batch means of per-image sums."""
    metrics = elbo_metrics(sampled_terms(params, batch, rng, model))
    return metrics["reconstruction"] + beta * metrics["kl"], metrics


def annealed_capacity(step: jax.Array, c_max: float, iteration_threshold: int) -> jax.Array:
    """The AnnealedVAE's capacity C = c_max·min(1, step / iteration_threshold), rising
    linearly from 0 to c_max (at once when iteration_threshold is 0)."""
    if iteration_threshold == 0:
        return jnp.asarray(c_max, jnp.float32)
    return jnp.minimum(c_max, c_max * step / iteration_threshold)


def annealed_vae_loss(params: dict, batch: dict, rng: jax.Array, *, model: nn.Module,
                      gamma: float, c_max: float, iteration_threshold: int,
                      step: jax.Array) -> tuple[jax.Array, dict]:
    """AnnealedVAE (Burgess et al., "Understanding disentangling in β-VAE", 2018, the
    section "Improving disentangling in β-VAE with controlled capacity increase"):
    reconstruction + γ·|KL − C|, the batch-mean KL pulled to a capacity C that grows
    with the training step (`annealed_capacity`). Also reports `capacity`."""
    metrics = elbo_metrics(sampled_terms(params, batch, rng, model))
    capacity = annealed_capacity(step, c_max, iteration_threshold)
    loss = metrics["reconstruction"] + gamma * jnp.abs(metrics["kl"] - capacity)
    return loss, {**metrics, "capacity": capacity}


def beta_tc_vae_loss(params: dict, batch: dict, rng: jax.Array, *, model: nn.Module,
                     beta: float, dataset_size: int) -> tuple[jax.Array, dict]:
    """β-TCVAE (Chen et al., NeurIPS 2018, §3.2) as disentanglement_lib writes it: the
    VAE loss (reconstruction + analytic KL) + (β − 1)·TC, which weighs the TC inside
    the KL by β and leaves its MI and dimension-wise KL at 1; TC by minibatch-weighted
    sampling over the (global) batch and the training split's `dataset_size` images
    (`minibatch_weighted_kl_decomposition`). β = 1 is the VAE.

    Reports the batch means of mi, tc and dimension_wise_kl of the batch's own mixture
    (N = 1), under which a factorised posterior has tc ≈ 0: the dataset's N only adds
    constants (tc + (d − 1)·log N is the objective's TC), which would make the logged
    tc about 120 nats for independent latents on dSprites' N."""
    terms = sampled_terms(params, batch, rng, model)
    metrics = elbo_metrics(terms)
    decomposition = {name: jnp.mean(value) for name, value in
                     minibatch_weighted_kl_decomposition(terms, dataset_size=1).items()}
    num_latents = terms["z"].shape[1]
    dataset_tc = decomposition["tc"] + (num_latents - 1) * math.log(dataset_size)
    loss = metrics["reconstruction"] + metrics["kl"] + (beta - 1.0) * dataset_tc
    return loss, {**metrics, **decomposition}


def encoder_mean_covariance(mean: jax.Array) -> jax.Array:
    """Cov_p(x)[μ(x)] over the batch, [B, d] -> [d, d] (divided by B)."""
    centred = mean - jnp.mean(mean, axis=0)
    return centred.T @ centred / mean.shape[0]


def aggregate_posterior_covariance(mean: jax.Array, log_variance: jax.Array) -> jax.Array:
    """Cov_q(z)[z] = Cov_p(x)[μ(x)] + E_p(x)[diag σ²(x)] over the batch, [d, d]."""
    return encoder_mean_covariance(mean) + jnp.diag(jnp.mean(jnp.exp(log_variance), axis=0))


def dip_regularised_loss(terms: dict, covariance: jax.Array, lambda_od: float,
                         lambda_d_factor: float) -> tuple[jax.Array, dict]:
    """DIP-VAE (Kumar et al., "Variational Inference of Disentangled Latent Concepts
    from Unlabeled Observations", ICLR 2018, §3): the VAE loss + λ_od·Σ_{i≠j} Cov_ij²
    + λ_d·Σ_i (Cov_ii − 1)², λ_d = lambda_d_factor·λ_od, pulling `covariance` to the
    identity. Also reports the two unweighted sums, off_diagonal_penalty and
    diagonal_penalty."""
    metrics = elbo_metrics(terms)
    diagonal = jnp.diagonal(covariance)
    off_diagonal_penalty = jnp.sum((covariance - jnp.diag(diagonal)) ** 2)
    diagonal_penalty = jnp.sum((diagonal - 1.0) ** 2)
    loss = (metrics["reconstruction"] + metrics["kl"] + lambda_od * off_diagonal_penalty
            + lambda_d_factor * lambda_od * diagonal_penalty)
    return loss, {**metrics, "off_diagonal_penalty": off_diagonal_penalty,
                  "diagonal_penalty": diagonal_penalty}


def dip_vae_i_loss(params: dict, batch: dict, rng: jax.Array, *, model: nn.Module,
                   lambda_od: float, lambda_d_factor: float) -> tuple[jax.Array, dict]:
    """DIP-VAE-I: `dip_regularised_loss` on the encoder means' covariance."""
    terms = sampled_terms(params, batch, rng, model)
    return dip_regularised_loss(terms, encoder_mean_covariance(terms["mean"]), lambda_od,
                                lambda_d_factor)


def dip_vae_ii_loss(params: dict, batch: dict, rng: jax.Array, *, model: nn.Module,
                    lambda_od: float, lambda_d_factor: float) -> tuple[jax.Array, dict]:
    """DIP-VAE-II: `dip_regularised_loss` on the aggregate posterior's covariance."""
    terms = sampled_terms(params, batch, rng, model)
    covariance = aggregate_posterior_covariance(terms["mean"], terms["log_variance"])
    return dip_regularised_loss(terms, covariance, lambda_od, lambda_d_factor)


def factor_vae_loss(params: dict, batch: dict, rng: jax.Array, *, model: nn.Module,
                    discriminator: nn.Module, gamma: float) -> tuple[jax.Array, dict]:
    """FactorVAE (Kim & Mnih, "Disentangling by Factorising", ICML 2018, §3) as
    disentanglement_lib trains it, over params {"vae", "discriminator"}: the sum of

      the VAE's loss            reconstruction + KL + γ·TC, TC by the discriminator
                                on the sample z (objectives/factor_vae.py), its
                                parameters held fixed (stop_gradient);
      the discriminator's loss  the cross-entropy of z (label "joint") against
                                permute_dims(z) (label "product"), z held fixed.

    Each term depends on its own parameter group only, so the gradient of the sum is
    each group's gradient of its own loss: one `train_step` updates both networks,
    each by its own optimiser (runs/vae.stage_optimizer). The sample and the
    permutation draw from split(rng). Also reports the batch means tc, vae_loss and
    discriminator_loss."""
    sample_rng, permute_rng = jax.random.split(rng)
    terms = sampled_terms(params["vae"], batch, sample_rng, model)
    metrics = elbo_metrics(terms)

    def discriminate(discriminator_params, latents):
        return discriminator.apply({"params": discriminator_params}, latents)

    tc = density_ratio_total_correlation(
        discriminate(jax.lax.stop_gradient(params["discriminator"]), terms["z"]))
    vae_loss = metrics["reconstruction"] + metrics["kl"] + gamma * tc
    latents = jax.lax.stop_gradient(terms["z"])
    discriminator_loss = discriminator_cross_entropy(
        discriminate(params["discriminator"], latents),
        discriminate(params["discriminator"], permute_dims(permute_rng, latents)))
    return vae_loss + discriminator_loss, {**metrics, "tc": tc, "vae_loss": vae_loss,
                                           "discriminator_loss": discriminator_loss}


# name (config.vae.objective.name) -> loss(params, batch, rng, *, model, **weights)
LOSSES: dict[str, Callable] = {
    "ae": autoencoder_loss,
    "beta_vae": beta_vae_loss,
    "annealed_vae": annealed_vae_loss,
    "beta_tc_vae": beta_tc_vae_loss,
    "dip_vae_i": dip_vae_i_loss,
    "dip_vae_ii": dip_vae_ii_loss,
    "factor_vae": factor_vae_loss,
    "ladder_vae": ladder_vae_loss,
    "ivae": ivae_loss,
    "ada_gvae": ada_gvae_loss,
    "ada_ml_vae": ada_ml_vae_loss,
}

# A loss's keyword-only arguments that are not config weights: the model, and what
# the stage knows (the training step, the training split's number of images, the
# discriminator of a loss that trains one).
CONTEXT_ARGUMENTS = ("model", "step", "dataset_size", "discriminator")


# Losses of a deterministic encoder: no posterior variance, so no KL to report.
DETERMINISTIC_LOSSES = ("ae",)


# Losses of pairs of images (objectives/weak_vae.py): their batches hold both images
# of each pair, drawn as `vae.pairs` says (data/weak_pairs.py).
PAIR_LOSSES = ("ada_gvae", "ada_ml_vae")


def learns_from_pairs(name: str) -> bool:
    """Whether loss `name` trains on pairs of images rather than on single images."""
    return name in PAIR_LOSSES


def is_variational(name: str) -> bool:
    """Whether loss `name` trains q(z | x) as a distribution (all but the AE's)."""
    return name not in DETERMINISTIC_LOSSES


def takes_argument(loss: Callable, name: str) -> bool:
    """Whether `loss` (a `LOSSES` entry or a bound loss) declares the argument `name`."""
    return name in inspect.signature(loss).parameters


def needs_discriminator(name: str) -> bool:
    """Whether loss `name` trains a discriminator beside the VAE (FactorVAE): its
    params are then {"vae", "discriminator"}, and the config has `vae.discriminator`."""
    return takes_argument(LOSSES[name], "discriminator")


def loss_weight_names(name: str) -> tuple[str, ...]:
    """The keyword weights of loss `name` (its keyword-only arguments but
    `CONTEXT_ARGUMENTS`)."""
    parameters = inspect.signature(LOSSES[name]).parameters.values()
    return tuple(p.name for p in parameters
                 if p.kind is inspect.Parameter.KEYWORD_ONLY
                 and p.name not in CONTEXT_ARGUMENTS)


def check_objective_config(objective: Mapping) -> None:
    """Raises ValueError naming the field of `objective` (the section `vae.objective`)
    at fault: an unknown name, a missing or unknown weight, or a negative one (every
    weight of the family's losses is >= 0)."""
    name = objective["name"]
    if name not in LOSSES:
        raise ValueError(f"vae.objective.name {name!r} is unknown; known: {', '.join(LOSSES)}")
    expected = loss_weight_names(name)
    given = [key for key in objective.keys() if key != "name"]
    for key in given:
        if key not in expected:
            raise ValueError(f"vae.objective.{key} is not a weight of the {name!r} loss "
                             f"(its weights: {', '.join(expected)})")
    for key in expected:
        if key not in given:
            raise ValueError(f"vae.objective.{key} is missing: the {name!r} loss needs it")
        if not objective[key] >= 0:
            raise ValueError(f"vae.objective.{key} must be >= 0, got {objective[key]}")


def bind_loss(objective: Mapping, model: nn.Module, *, dataset_size: int | None = None,
              discriminator: nn.Module | None = None) -> Callable:
    """loss(params, batch, rng) -> (scalar, metrics) of `objective` (the section
    `vae.objective`) for `model`, as `train.state.train_step` takes it, with
    `dataset_size` (the training split's number of images) and `discriminator` bound
    if the loss declares them. A loss that declares `step` still needs it at each
    call (train/vae_stage.py)."""
    check_objective_config(objective)
    name = objective["name"]
    weights = {key: objective[key] for key in loss_weight_names(name)}
    if takes_argument(LOSSES[name], "dataset_size"):
        if dataset_size is None or dataset_size < 1:
            raise ValueError(f"the {name!r} loss needs the training split's size "
                             f"(dataset_size >= 1), got {dataset_size}")
        weights["dataset_size"] = dataset_size
    if needs_discriminator(name):
        if discriminator is None:
            raise ValueError(f"the {name!r} loss needs a discriminator")
        weights["discriminator"] = discriminator
    return functools.partial(LOSSES[name], model=model, **weights)
