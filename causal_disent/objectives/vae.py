"""The losses of the VAE family (models/vae.py), one function per model (`LOSSES`),
chosen by `config.vae.objective.name`; the section's other keys are the chosen
loss's keyword weights (`bind_loss`).

Every loss is built from the same pieces, for a Gaussian posterior q(z | x) =
N(μ, diag σ²), a N(0, I) prior and Bernoulli pixels:

  reparameterised sample  z = μ + σ·ε, ε ~ N(0, I) (Kingma & Welling,
                          "Auto-Encoding Variational Bayes", ICLR 2014, §2.4)
  reconstruction          −log p(x | z) = Σ_pixels BCE(logits, x)
  KL per latent           KL(q(z_j | x) ‖ N(0, 1)) = ½ (μ_j² + σ_j² − log σ_j² − 1)
                          (ibid., Appendix B)

β-VAE (Higgins et al., "β-VAE: Learning Basic Visual Concepts with a Constrained
Variational Framework", ICLR 2017, Eq. 4) minimises reconstruction + β·KL; β = 1 is
the VAE. Terms are batch means of per-image sums, so they are in nats per image.

A later model of the family (AnnealedVAE, β-TCVAE, DIP-VAE, ...) is a loss with the
signature below plus one line in `LOSSES`.
"""

import functools
import inspect
from collections.abc import Callable, Mapping

import flax.linen as nn
import jax
import jax.numpy as jnp
import optax

from causal_disent.utils.images import images_to_unit_range


def reparameterise(rng: jax.Array, mean: jax.Array, log_variance: jax.Array) -> jax.Array:
    """A sample z = μ + σ·ε of N(μ, diag σ²), differentiable in μ and log σ²."""
    return mean + jnp.exp(0.5 * log_variance) * jax.random.normal(rng, mean.shape, mean.dtype)


def gaussian_kl_to_standard_normal(mean: jax.Array, log_variance: jax.Array) -> jax.Array:
    """KL(N(μ, σ²) ‖ N(0, 1)) elementwise: [B, d] -> [B, d] (nats per latent)."""
    return 0.5 * (mean**2 + jnp.exp(log_variance) - log_variance - 1.0)


def bernoulli_nll(logits: jax.Array, images: jax.Array) -> jax.Array:
    """−log p(x | z) per image under independent Bernoulli pixels: [B, H, W, ch] logits
    and targets in [0, 1] -> [B], summed over pixels and channels."""
    if logits.shape != images.shape:
        raise ValueError(f"logits {logits.shape} and images {images.shape} differ in shape")
    return jnp.sum(optax.sigmoid_binary_cross_entropy(logits, images), axis=(1, 2, 3))


def sampled_terms(params: dict, batch: dict, rng: jax.Array, model: nn.Module) -> dict:
    """One pass with a reparameterised sample: {mean, log_variance, z [B, d],
    reconstruction [B] (−log p(x | z)), kl [B, d] (per latent)}."""
    images = images_to_unit_range(batch["image"])
    variables = {"params": params}
    mean, log_variance = model.apply(variables, images, method=model.encode)
    latents = reparameterise(rng, mean, log_variance)
    logits = model.apply(variables, latents, method=model.decode)
    return {
        "mean": mean, "log_variance": log_variance, "z": latents,
        "reconstruction": bernoulli_nll(logits, images),
        "kl": gaussian_kl_to_standard_normal(mean, log_variance),
    }


def elbo_metrics(terms: dict) -> dict:
    """The batch means every loss of the family reports: reconstruction, kl,
    kl_per_latent [d] and elbo = −(reconstruction + kl)."""
    reconstruction = jnp.mean(terms["reconstruction"])
    kl_per_latent = jnp.mean(terms["kl"], axis=0)
    kl = jnp.sum(kl_per_latent)
    return {"reconstruction": reconstruction, "kl": kl, "kl_per_latent": kl_per_latent,
            "elbo": -(reconstruction + kl)}


def beta_vae_loss(params: dict, batch: dict, rng: jax.Array, *, model: nn.Module,
                  beta: float) -> tuple[jax.Array, dict]:
    """β-VAE: reconstruction + β·KL(q(z | x) ‖ N(0, I)), batch means of per-image sums."""
    metrics = elbo_metrics(sampled_terms(params, batch, rng, model))
    return metrics["reconstruction"] + beta * metrics["kl"], metrics


# name (config.vae.objective.name) -> loss(params, batch, rng, *, model, **weights)
LOSSES: dict[str, Callable] = {"beta_vae": beta_vae_loss}


def loss_weight_names(name: str) -> tuple[str, ...]:
    """The keyword weights of loss `name` (its keyword-only arguments but `model`)."""
    parameters = inspect.signature(LOSSES[name]).parameters.values()
    return tuple(p.name for p in parameters
                 if p.kind is inspect.Parameter.KEYWORD_ONLY and p.name != "model")


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


def bind_loss(objective: Mapping, model: nn.Module) -> Callable:
    """loss(params, batch, rng) -> (scalar, metrics) of `objective` (the section
    `vae.objective`) for `model`, as `train.state.train_step` takes it."""
    check_objective_config(objective)
    weights = {key: objective[key] for key in loss_weight_names(objective["name"])}
    return functools.partial(LOSSES[objective["name"]], model=model, **weights)
