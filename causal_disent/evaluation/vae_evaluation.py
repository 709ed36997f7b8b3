"""The VAE family (models/vae.py) on a split: how well it reconstructs and how much
each latent carries (the `vae` stage's evaluation)."""

import functools

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh

from causal_disent.evaluation.image_sums import image_summer
from causal_disent.objectives.vae_terms import (
    bernoulli_nll,
    gaussian_kl_to_standard_normal,
    pixel_nll,
)


def evaluate_vae(model, params, dataset, indices: np.ndarray, mesh: Mesh,
                 batch_size: int, variational: bool = True) -> dict:
    """Scores `model` on dataset images `indices` (`vae_evaluator`'s scores)."""
    evaluate = vae_evaluator(model, mesh, batch_size, variational=variational)
    return evaluate(params, dataset, indices)


# One scorer per model, mesh and batch size: a run's learning curve and test scores,
# and each seed of a stacked run, share its compiled program. `variational` is
# keyword-only because the cache keys a value passed by position apart from the same
# value passed by name (the curve's scorer and the test scores' compiled twice so).
@functools.lru_cache(maxsize=8)
def vae_evaluator(model, mesh: Mesh, batch_size: int, *, variational: bool = True):
    """fn(params, dataset, indices) -> scores, compiled once: scores `model` on dataset
    images `indices` in padded batches sharded over `mesh`, decoding the posterior
    mean (deterministic, so a function of the parameters).

    Returns num_images; test_bce, the Bernoulli NLL per image (nats, summed over
    pixels and channels), comparable across models whatever their likelihood;
    test_nll, the NLL under the model's own `likelihood` (test_bce for Bernoulli
    pixels); test_mse, per pixel of σ(logits); test_kl, KL(q(z | x) ‖
    N(0, I)) per image, and test_kl_per_latent [d], its share per latent (a latent
    near 0 is unused): all means over the images. A deterministic encoder
    (`variational` False: the AE) has no KL, and no test_kl keys.
    """

    def batch_sums(params, images, valid):
        outputs = model.apply({"params": params}, images)
        per_image = {
            "bce": bernoulli_nll(outputs["logits"], images),
            "nll": pixel_nll(model.likelihood, outputs["logits"], images),
            "mse": jnp.mean((outputs["reconstruction"] - images) ** 2, axis=(1, 2, 3)),
            "kl_per_latent": gaussian_kl_to_standard_normal(outputs["mean"],
                                                            outputs["log_variance"]),
        }
        return jax.tree.map(lambda x: jnp.einsum("b,b...->...", valid, x), per_image)

    summed = image_summer(batch_sums, mesh)

    def evaluate(params, dataset, indices: np.ndarray) -> dict:
        totals = summed(params, dataset, indices, batch_size)
        means = jax.tree.map(lambda total: np.asarray(total, np.float64) / len(indices),
                             totals)
        scores = {
            "num_images": int(len(indices)),
            "test_bce": float(means["bce"]),
            "test_nll": float(means["nll"]),
            "test_mse": float(means["mse"]),
        }
        if variational:
            scores["test_kl"] = float(means["kl_per_latent"].sum())
            scores["test_kl_per_latent"] = means["kl_per_latent"].round(4).tolist()
        return scores

    return evaluate
