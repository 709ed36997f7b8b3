"""Consistency training ("On the interventional consistency of autoencoders", ICLR 2021
submission, §2.1 and Algorithms 1–2 of its appendix): penalties that make an
autoencoder's response map consistent under interventions on its own latents.

The response map is R = E ∘ D: decode latents N to an image (the decoder's mean
σ(logits)) and encode it back (the encoder's mean), N' = R(N). An intervention I on
noise unit m sets N_m to a value v; the values come from the aggregate posterior's
marginal of unit m (another image's encoding). With a model's causal units
Z = X(N) (its XBlock; X is the identity for a model without one):

  invariance   L_INV = E (1/n) Σ_{i≠m} (R(I N)_i − R(N)_i)²
               intervening on unit m must leave the response's other units as they
               were (Algorithm 1)
  equivariance L_EQV = E (1/n) Σ_i ‖X(I R(I N))_i − X(I N)_i‖²
               the response of an intervened sample, with the intervention imposed
               again (I' = I), must give the causes of the intervened sample
               (Algorithm 2, measured on the causal units)

E is over base samples N from the prior and one intervention per sample, unit m
uniform over the n units (a Monte Carlo estimate of the algorithms' mean over m,
at the cost of two responses per step whatever n). The base samples are "hybrid"
(Leeb et al., "Structure by Architecture", 2020: each unit drawn from a different
image's encoding, so the units are independent) or the batch's encodings as they
are ("posterior"). Samples and values are held fixed (no gradient): the penalties
train the response map, i.e. the decoder and the encoder on generated images. The
paper weighs both penalties by 4.

`with_consistency` adds λ_INV·L_INV + λ_EQV·L_EQV to any loss of the VAE family
(config section `vae.consistency`); evaluation/consistency_scores.py turns the same
quantities into the paper's INV, EQV and SCN scores.
"""

import functools
from collections.abc import Callable, Mapping

import flax.linen as nn
import jax
import jax.numpy as jnp

from causal_disent.models.xblock import MASK_RNG
from causal_disent.utils.images import images_to_unit_range

PRIORS = ("hybrid", "posterior")
# The weights' names in `vae.consistency` (the paper uses 4 for each).
WEIGHT_NAMES = ("invariance_weight", "equivariance_weight")


def check_consistency_config(consistency: Mapping) -> None:
    """Raises ValueError naming the field of `consistency` (the section
    `vae.consistency`) at fault."""
    known = (*WEIGHT_NAMES, "prior")
    for key in consistency.keys():
        if key not in known:
            raise ValueError(f"vae.consistency.{key} is unknown; its fields: "
                             f"{', '.join(known)}")
    for key in WEIGHT_NAMES:
        value = consistency.get(key, 0.0)
        if not value >= 0:
            raise ValueError(f"vae.consistency.{key} must be >= 0, got {value}")
    if consistency.get("prior", "hybrid") not in PRIORS:
        raise ValueError(f"vae.consistency.prior must be one of {PRIORS}, got "
                         f"{consistency.get('prior')!r}")


def is_enabled(consistency: Mapping | None) -> bool:
    """Whether the section asks for a penalty (a weight > 0); all zero is plain training."""
    return consistency is not None and any(
        float(consistency.get(name, 0.0)) > 0 for name in WEIGHT_NAMES)


def hybrid_samples(rng: jax.Array, encodings: jax.Array) -> jax.Array:
    """[B, n] -> [B, n]: column i of row k is column i of a random row, the rows drawn
    independently per column (the units' product of marginals)."""
    rows = jax.random.randint(rng, encodings.shape, 0, encodings.shape[0])
    return jnp.take_along_axis(encodings, rows, axis=0)


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
             mask_rng: jax.Array | None = None) -> jax.Array:
    """R(N) = encoder mean of the decoder's mean image σ(D(N)): [B, n] -> [B, n]. With
    `mask_rng`, an XBlock's mask is a training sample; without, its mean-field value."""
    rngs = {MASK_RNG: mask_rng} if mask_rng is not None else {}
    logits = model.apply({"params": params}, noise, method=model.decode, rngs=rngs)
    return model.apply({"params": params}, jax.nn.sigmoid(logits), method=model.encode)[0]


def causes(params: dict, model: nn.Module, noise: jax.Array,
           mask_rng: jax.Array | None = None) -> jax.Array:
    """Z = X(N) [B, n, unit size] by the model's XBlock, or N itself [B, n, 1]."""
    if getattr(model, "xblock", None) is None:
        return noise[..., None]
    rngs = {MASK_RNG: mask_rng} if mask_rng is not None else {}
    flat = model.apply({"params": params}, noise, method=model.causes, rngs=rngs)
    return flat.reshape(noise.shape[0], noise.shape[1], -1)


def consistency_penalties(params: dict, model: nn.Module, images: jax.Array, rng: jax.Array,
                          prior: str = "hybrid", mask_rng: jax.Array | None = None) -> dict:
    """{"invariance": L_INV, "equivariance": L_EQV} on a batch of images [B, H, W, ch]
    in [0, 1] (the module docstring's estimates)."""
    prior_rng, intervention_rng = jax.random.split(rng)
    encodings = jax.lax.stop_gradient(
        model.apply({"params": params}, images, method=model.encode)[0])
    noise = hybrid_samples(prior_rng, encodings) if prior == "hybrid" else encodings
    intervened_noise, intervened = single_unit_interventions(intervention_rng, noise,
                                                             encodings)
    units = noise.shape[-1]
    # One pass for both responses (the same mask sample on each).
    both = response(params, model, jnp.concatenate([noise, intervened_noise]), mask_rng)
    plain, after = jnp.split(both, 2)
    invariance = jnp.sum((1 - intervened) * (after - plain) ** 2, axis=-1) / units
    reimposed = impose(after, intervened, intervened_noise)
    both_causes = causes(params, model, jnp.concatenate([reimposed, intervened_noise]),
                         mask_rng)
    response_causes, intervened_causes = jnp.split(both_causes, 2)
    equivariance = jnp.sum((response_causes - intervened_causes) ** 2, axis=(1, 2)) / units
    return {"invariance": jnp.mean(invariance), "equivariance": jnp.mean(equivariance)}


def with_consistency(loss_fn: Callable, model: nn.Module, consistency: Mapping,
                     params_of: Callable = lambda params: params) -> Callable:
    """`loss_fn(params, batch, rng, ...)` plus λ_INV·L_INV + λ_EQV·L_EQV of the
    section `consistency` (its weights, default 0, and prior), the penalties' rng
    folded from the loss's so that the loss's own draws are unchanged. `params_of`
    picks the autoencoder's params (FactorVAE's are params["vae"]). Adds the metrics
    invariance_penalty and equivariance_penalty; the signature stays the loss's."""
    check_consistency_config(consistency)
    weights = [float(consistency.get(name, 0.0)) for name in WEIGHT_NAMES]
    prior = consistency.get("prior", "hybrid")

    @functools.wraps(loss_fn)
    def loss_with_consistency(params, batch, rng, **context):
        loss, metrics = loss_fn(params, batch, rng, **context)
        penalty_rng, mask_rng = jax.random.split(jax.random.fold_in(rng, 0x1C))
        penalties = consistency_penalties(params_of(params), model,
                                          images_to_unit_range(batch["image"]),
                                          penalty_rng, prior, mask_rng)
        total = loss + weights[0] * penalties["invariance"] + weights[1] * penalties[
            "equivariance"]
        return total, {**metrics, "invariance_penalty": penalties["invariance"],
                       "equivariance_penalty": penalties["equivariance"]}

    return loss_with_consistency
