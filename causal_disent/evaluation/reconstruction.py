"""Reconstruction quality of an autoencoder on a split: MSE, PSNR, code statistics."""

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh

from causal_disent.evaluation import model_calls
from causal_disent.evaluation.drawings import draw_reconstruction_figure
from causal_disent.evaluation.image_sums import image_summer
from causal_disent.objectives.mcqvae import psnr_from_mse
from causal_disent.utils import figures
from causal_disent.utils.images import images_to_unit_range


def evaluate_reconstruction(
    model, params, dataset, indices: np.ndarray, mesh: Mesh, batch_size: int
) -> dict:
    """Scores reconstructions of dataset images `indices` (`reconstruction_evaluator`'s
    scores)."""
    return reconstruction_evaluator(model, mesh, batch_size)(params, dataset, indices)


def reconstruction_evaluator(model, mesh: Mesh, batch_size: int):
    """fn(params, dataset, indices) -> scores, compiled once: scores the MCQ-VAE
    `model`'s reconstructions of dataset images `indices` in padded batches sharded
    over `mesh`.

    Returns:
      num_images; test_mse (mean over pixels and images); test_psnr, the PSNR of that
      mean MSE (dB, images in [0, 1]); test_psnr_per_image_mean, the mean of per-image
      PSNRs; codebook_perplexity and codebook_usage [C] over all evaluated codes.
    """
    num_codes = model.num_codes

    def batch_sums(params, images, valid):  # images in [0, 1]
        outputs = model.apply({"params": params}, images)
        mse = jnp.mean((outputs["reconstruction"] - images) ** 2, axis=(1, 2, 3))
        codes = jnp.moveaxis(outputs["codes"], 1, -1).reshape(len(images), -1, model.num_codebooks)
        counts = jnp.einsum("b,bnck->ck", valid, jax.nn.one_hot(codes, num_codes))
        return {
            "mse": jnp.sum(valid * mse),
            "psnr": jnp.sum(valid * psnr_from_mse(mse)),
            "code_counts": counts,
        }

    summed = image_summer(batch_sums, mesh)

    def evaluate(params, dataset, indices: np.ndarray) -> dict:
        totals = summed(params, dataset, indices, batch_size)
        probs = totals["code_counts"] / totals["code_counts"].sum(axis=-1, keepdims=True)
        entropy = -np.sum(np.where(probs > 0, probs * np.log(np.maximum(probs, 1e-30)), 0),
                          axis=-1)
        test_mse = float(totals["mse"] / len(indices))
        return {
            "num_images": int(len(indices)),
            "test_mse": test_mse,
            "test_psnr": float(-10 * np.log10(test_mse)),
            "test_psnr_per_image_mean": float(totals["psnr"] / len(indices)),
            "codebook_perplexity": np.exp(entropy).round(3).tolist(),
            "codebook_usage": (totals["code_counts"] > 0).mean(axis=-1).tolist(),
        }

    return evaluate


def save_reconstruction_figure(model, params, images: np.ndarray, path,
                               title: str | None = None) -> None:
    """Writes `draw_reconstruction_figure` of the uint8 `images` [n, H, W, ch] and
    the model's reconstructions (`model(images)["reconstruction"]`, in [0, 1]) to
    `path` (default title: the image count; not the model's class, which one VAE
    class shares with the plain autoencoder)."""
    outputs = model_calls.outputs(model, jax.device_get(params), images_to_unit_range(images))
    reconstructions = figures.to_uint8(np.asarray(outputs["reconstruction"]))
    title = title or (f"{len(images)} test images (top) and their reconstructions by the "
                      "trained autoencoder (bottom)")
    figures.save_drawn(path, draw_reconstruction_figure, images, reconstructions, title)
