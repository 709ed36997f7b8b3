"""Consistency training ("On the interventional consistency of autoencoders", ICLR 2021
submission, §2.1 and Algorithms 1–2 of its appendix): penalties that make an
autoencoder's response map consistent under interventions on its own latents.

The response map is R = E ∘ D: decode latents N to an image (the decoder's mean
σ(logits)) and encode it back (the encoder's mean), N' = R(N). An intervention I on
noise unit m sets N_m to a value v; the values come from the aggregate posterior's
marginal of unit m (another image's encoding). With a model's causal units
Z = X(N) (its XBlock; X is the identity for a model without one) and d(a, b) the
distance of one unit (`ERRORS`: the L2 norm over the unit's dimensions, or its
square):

  invariance   L_INV = E (1/n) Σ_{i≠m} d(R(I N)_i, R(N)_i)
               intervening on unit m must leave the response's other units as they
               were (Algorithm 1)
  equivariance (`EQUIVARIANCES`)
      "commute"  L_EQV = E (1/n) Σ_i d(X(I R(N))_i, X(R(I N))_i)
               intervening and responding must commute: the response of the
               intervened sample, seen through X, is the intervened response
               (Algorithm 2 as the authors' code computes it)
      "self"     L_EQV = E (1/n) Σ_i d(X(I R(I N))_i, X(I N)_i)
               the response of an intervened sample, with the intervention imposed
               again, must give the causes of the intervened sample (this project's
               first reading of the paper)

E is over base samples N and one intervention per sample, unit m uniform over the n
units (a Monte Carlo estimate of the algorithms' mean over m, at the cost of two
responses per step whatever n). The base samples (`PRIORS`) are "hybrid" (Leeb et
al., "Structure by Architecture", 2020: each unit drawn from a different image's
encoding, so the units are independent), the batch's encodings as they are
("posterior"), or draws of a VAE's prior N(0, I) ("standard_normal", the paper's
"N_k a sample from the prior P(N)"). The intervention values (`INTERVENTION_VALUES`)
are the batch's encoder means ("means") or, for a VAE, samples z ~ q(z | x) of them
("posterior_samples"). Samples, intervention values and the base response R(N) are
held fixed (no gradient), as in the authors' code: the penalties train the response
map of intervened samples (the decoder, the encoder on generated images, and for
"commute" the XBlock).

The authors' code (GiuliaLanzillotta/CausalAE, models/CAE.py, metrics/
LatentInvariance.py `compute_absolute_errors`, experiments/utils.py) fixes what
the paper leaves open, and the configs follow it: d is the unsquared L2 norm (the
paper's "Euclidean distance"), the equivariance compares X(I R(N)) with X(R(I N)),
and each weight λ rises linearly from 0 over the first `warmup_steps` steps (10 000
there). Their VAE variant (XCVAE) trains on prior samples N(0, I) intervened with
posterior samples: prior="standard_normal", intervention_values="posterior_samples"
here; their invariance error for it, the absolute difference of the two responses'
means (configs/models/XCVAE/standard.yaml: do_KL False, ignore_variance True), is
the "l2" error of one-dimensional units. A key the section lacks means what a
config written before it meant: squared errors, "self", no warm-up, means.

`with_consistency` adds λ_INV(step)·L_INV + λ_EQV(step)·L_EQV to any loss of the VAE
family (config section `vae.consistency`); evaluation/consistency_scores.py turns
the same quantities into the paper's INV, EQV and SCN scores.
"""

import functools
from collections.abc import Callable, Mapping

import flax.linen as nn
import jax
import jax.numpy as jnp

from causal_disent.models.xblock import MASK_RNG
from causal_disent.objectives.vae import TRAIN_STEP
from causal_disent.utils.images import images_to_unit_range

PRIORS = ("hybrid", "posterior", "standard_normal")
INTERVENTION_VALUES = ("means", "posterior_samples")
# Settings that read a posterior variance, which only a variational loss trains.
VARIATIONAL_ONLY = {"prior": "standard_normal", "intervention_values": "posterior_samples"}
# The distance of one unit: "l2" ‖a − b‖ (the authors' code), "squared" ‖a − b‖².
ERRORS = ("l2", "squared")
EQUIVARIANCES = ("commute", "self")
# The weights' names in `vae.consistency` (the paper uses 4 for each).
WEIGHT_NAMES = ("invariance_weight", "equivariance_weight")
# What a section written before a key existed means by its absence.
DEFAULTS = {"prior": "hybrid", "error": "squared", "equivariance": "self",
            "warmup_steps": 0, "intervention_values": "means"}


def check_consistency_config(consistency: Mapping, variational: bool = True) -> None:
    """Raises ValueError naming the field of `consistency` (the section
    `vae.consistency`) at fault; `variational`: whether the loss trains q(z | x) as a
    distribution (a deterministic autoencoder has no prior to draw from and no
    posterior variance to sample with)."""
    known = (*WEIGHT_NAMES, *DEFAULTS)
    for key in consistency.keys():
        if key not in known:
            raise ValueError(f"vae.consistency.{key} is unknown; its fields: "
                             f"{', '.join(known)}")
    for key in WEIGHT_NAMES:
        value = consistency.get(key, 0.0)
        if not value >= 0:
            raise ValueError(f"vae.consistency.{key} must be >= 0, got {value}")
    for key, allowed in (("prior", PRIORS), ("error", ERRORS),
                         ("equivariance", EQUIVARIANCES),
                         ("intervention_values", INTERVENTION_VALUES)):
        if setting(consistency, key) not in allowed:
            raise ValueError(f"vae.consistency.{key} must be one of {allowed}, got "
                             f"{consistency.get(key)!r}")
    for key, value in VARIATIONAL_ONLY.items():
        if not variational and setting(consistency, key) == value:
            raise ValueError(f"vae.consistency.{key}={value!r} needs a variational loss, "
                             f"but the autoencoder's has no prior or posterior variance; use "
                             f"{key}={DEFAULTS[key]!r}")
    warmup = setting(consistency, "warmup_steps")
    if isinstance(warmup, bool) or not isinstance(warmup, int) or warmup < 0:
        raise ValueError(f"vae.consistency.warmup_steps must be a whole number >= 0, got "
                         f"{warmup!r}")


def setting(consistency: Mapping, key: str):
    """The section's `key`, or what its absence means (`DEFAULTS`)."""
    return consistency.get(key, DEFAULTS[key])


def warmup_factor(step: jax.Array | None, warmup_steps: int) -> jax.Array:
    """min(step / warmup_steps, 1): the weights' linear warm-up from 0 (1 without a
    warm-up, or without a step: a batch from outside training)."""
    if warmup_steps == 0 or step is None:
        return jnp.float32(1.0)
    return jnp.minimum(jnp.asarray(step, jnp.float32) / warmup_steps, 1.0)


def unit_distance(a: jax.Array, b: jax.Array, error: str) -> jax.Array:
    """d(a_i, b_i) per unit: [B, n, size] twice -> [B, n], the L2 norm over each unit's
    dimensions ("l2") or its square ("squared"). The norm's gradient at 0 is taken as
    0 (the square root's is infinite there)."""
    squared = jnp.sum((a - b) ** 2, axis=-1)
    if error == "squared":
        return squared
    positive = squared > 0
    return jnp.where(positive, jnp.sqrt(jnp.where(positive, squared, 1.0)), 0.0)


def is_enabled(consistency: Mapping | None) -> bool:
    """Whether the section asks for a penalty (a weight > 0); all zero is plain training."""
    return consistency is not None and any(
        float(consistency.get(name, 0.0)) > 0 for name in WEIGHT_NAMES)


def hybrid_samples(rng: jax.Array, encodings: jax.Array) -> jax.Array:
    """[B, n] -> [B, n]: column i of row k is column i of a random row, the rows drawn
    independently per column (the units' product of marginals)."""
    rows = jax.random.randint(rng, encodings.shape, 0, encodings.shape[0])
    return jnp.take_along_axis(encodings, rows, axis=0)


def base_samples(rng: jax.Array, encodings: jax.Array, prior: str) -> jax.Array:
    """The base samples N [B, n] of `prior` (`PRIORS`) for a batch of encodings [B, n]."""
    if prior == "hybrid":
        return hybrid_samples(rng, encodings)
    if prior == "standard_normal":
        return jax.random.normal(rng, encodings.shape, encodings.dtype)
    return encodings


def posterior_samples(rng: jax.Array, mean: jax.Array, log_variance: jax.Array) -> jax.Array:
    """One z ~ q(z | x) = N(mean, exp(log_variance)) per row, [B, n]."""
    return mean + jnp.exp(0.5 * log_variance) * jax.random.normal(rng, mean.shape, mean.dtype)


def single_unit_interventions(rng: jax.Array, noise: jax.Array,
                              encodings: jax.Array) -> tuple[jax.Array, jax.Array]:
    """One hard intervention per sample: unit m_k uniform, set to unit m_k of a random
    row of `encodings` (the aggregate posterior's marginal). Returns the intervened
    noise [B, n] and the one-hot of the intervened units [B, n]."""
    unit_rng, row_rng = jax.random.split(rng)
    batch, units = noise.shape
    intervened = jax.nn.one_hot(jax.random.randint(unit_rng, (batch,), 0, units), units,
                                dtype=noise.dtype)
    source_rows = jax.random.randint(row_rng, (batch,), 0, encodings.shape[0])
    return impose(noise, intervened, encodings[source_rows]), intervened


def impose(noise: jax.Array, intervened: jax.Array, values: jax.Array) -> jax.Array:
    """`noise` with the intervened units (one-hot [B, n]) set as in `values`."""
    return noise * (1 - intervened) + values * intervened


def response(params: dict, model: nn.Module, noise: jax.Array,
             mask_rng: jax.Array | None = None, step: jax.Array | None = None) -> jax.Array:
    """R(N) = encoder mean of the decoder's mean image σ(D(N)): [B, n] -> [B, n]. With
    `mask_rng`, an XBlock's mask is a training sample (at training step `step`);
    without, its mean-field value."""
    rngs = {MASK_RNG: mask_rng} if mask_rng is not None else {}
    logits = model.apply({"params": params}, noise, step, method=model.decode, rngs=rngs)
    return model.apply({"params": params}, jax.nn.sigmoid(logits), method=model.encode)[0]


def causes(params: dict, model: nn.Module, noise: jax.Array,
           mask_rng: jax.Array | None = None, step: jax.Array | None = None) -> jax.Array:
    """Z = X(N) [B, n, unit size] by the model's XBlock, or N itself [B, n, 1]."""
    if getattr(model, "xblock", None) is None:
        return noise[..., None]
    rngs = {MASK_RNG: mask_rng} if mask_rng is not None else {}
    flat = model.apply({"params": params}, noise, step, method=model.causes, rngs=rngs)
    return flat.reshape(noise.shape[0], noise.shape[1], -1)


def consistency_penalties(params: dict, model: nn.Module, images: jax.Array, rng: jax.Array,
                          prior: str = "hybrid", mask_rng: jax.Array | None = None, *,
                          error: str = "l2", equivariance: str = "commute",
                          intervention_values: str = "means",
                          step: jax.Array | None = None) -> dict:
    """{"invariance": L_INV, "equivariance": L_EQV} on a batch of images [B, H, W, ch]
    in [0, 1] (the module docstring's estimates; `prior`, `error`, `equivariance` and
    `intervention_values` of `PRIORS`, `ERRORS`, `EQUIVARIANCES` and
    `INTERVENTION_VALUES`; an XBlock at training step `step`)."""
    prior_rng, intervention_rng = jax.random.split(rng)
    mean, log_variance = jax.lax.stop_gradient(
        model.apply({"params": params}, images, method=model.encode))
    noise = base_samples(prior_rng, mean, prior)
    if intervention_values == "posterior_samples":  # its own key: the other draws stay
        values = posterior_samples(jax.random.fold_in(rng, 1), mean, log_variance)
    else:
        values = mean
    intervened_noise, intervened = single_unit_interventions(intervention_rng, noise,
                                                             values)
    units = noise.shape[-1]
    # One pass for both responses (the same mask sample on each); the base response
    # is a fixed target.
    both = response(params, model, jnp.concatenate([noise, intervened_noise]), mask_rng,
                    step)
    plain, after = jnp.split(both, 2)
    plain = jax.lax.stop_gradient(plain)
    moved = unit_distance(after[..., None], plain[..., None], error)
    invariance = jnp.sum((1 - intervened) * moved, axis=-1) / units
    if equivariance == "commute":  # X(I R(N)) against X(R(I N))
        pairs = (impose(plain, intervened, intervened_noise), after)
    else:  # X(I R(I N)) against X(I N)
        pairs = (impose(after, intervened, intervened_noise), intervened_noise)
    both_causes = causes(params, model, jnp.concatenate(pairs), mask_rng, step)
    first, second = jnp.split(both_causes, 2)
    equivariance_error = jnp.sum(unit_distance(first, second, error), axis=-1) / units
    return {"invariance": jnp.mean(invariance), "equivariance": jnp.mean(equivariance_error)}


def with_consistency(loss_fn: Callable, model: nn.Module, consistency: Mapping,
                     params_of: Callable = lambda params: params) -> Callable:
    """`loss_fn(params, batch, rng, ...)` plus λ_INV(t)·L_INV + λ_EQV(t)·L_EQV of the
    section `consistency` (its weights, default 0, warmed up over `warmup_steps` of
    the batch's training step t, its prior, error, equivariance and intervention
    values), the
    penalties' rng folded from the loss's so that the loss's own draws are unchanged.
    `params_of` picks the autoencoder's params (FactorVAE's are params["vae"]). Adds
    the metrics invariance_penalty, equivariance_penalty and consistency_warmup (the
    weights' current fraction); the signature stays the loss's."""
    check_consistency_config(consistency)
    weights = [float(consistency.get(name, 0.0)) for name in WEIGHT_NAMES]
    options = {key: setting(consistency, key)
               for key in ("error", "equivariance", "intervention_values")}
    prior = setting(consistency, "prior")
    warmup_steps = setting(consistency, "warmup_steps")

    @functools.wraps(loss_fn)
    def loss_with_consistency(params, batch, rng, **context):
        loss, metrics = loss_fn(params, batch, rng, **context)
        penalty_rng, mask_rng = jax.random.split(jax.random.fold_in(rng, 0x1C))
        step = batch.get(TRAIN_STEP)
        penalties = consistency_penalties(params_of(params), model,
                                          images_to_unit_range(batch["image"]),
                                          penalty_rng, prior, mask_rng, step=step, **options)
        warmup = warmup_factor(step, warmup_steps)
        total = loss + warmup * (weights[0] * penalties["invariance"]
                                 + weights[1] * penalties["equivariance"])
        return total, {**metrics, "invariance_penalty": penalties["invariance"],
                       "equivariance_penalty": penalties["equivariance"],
                       "consistency_warmup": warmup}

    return loss_with_consistency
