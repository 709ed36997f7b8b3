"""What the stages of image autoencoders (`mcqvae`, `vae`; `causalvae` takes its
data from here too) share: the data, a training on batches of training images, an
evaluation on the test split and a figure of test images over their reconstructions."""

from collections.abc import Callable
from pathlib import Path

import jax
import ml_collections
import numpy as np
from absl import logging

from causal_disent.data import pipeline, registry, splits
from causal_disent.evaluation import reconstruction
from causal_disent.train import runner

# Test images in the reconstruction figure.
FIGURE_IMAGES = 8


def training_data(config: ml_collections.ConfigDict, batch_size: int):
    """(dataset, split, batcher): the dataset of `config.data`, its split {"train",
    "validation", "test": flat indices} and the training images' epoch-shuffled
    global batches of `batch_size`, seeded by `config.seed`."""
    dataset = registry.dataset_from_config(config.data)
    split = splits.configured_split(dataset, config.data)
    batcher = pipeline.EpochShuffledBatches(split["train"], batch_size, seed=config.seed)
    return dataset, split, batcher


def image_training(steps: dict, dataset, batcher: pipeline.EpochShuffledBatches,
                   first_step: int, total_steps: int, prefetch: int,
                   rng: jax.Array, auxiliary=None) -> runner.Training:
    """`steps` trained on this host's batches {"image"} of `batcher`'s images, from
    `first_step` to `total_steps`, with "auxiliary" = `auxiliary(indices)` if given."""
    return runner.Training(
        steps=steps,
        batches=pipeline.image_batches(dataset, batcher, first_step, total_steps,
                                       jax.process_index(), jax.process_count(), prefetch,
                                       auxiliary),
        rng=rng,
    )


def evaluate_on_test(stage: str, evaluate: Callable[[np.ndarray], dict],
                     test_indices: np.ndarray, num_eval_images: int) -> dict:
    """`evaluate(indices)` on the first `num_eval_images` test images (0 = all)."""
    scored = test_indices[: num_eval_images or None]
    logging.info("[%s] evaluating on %d test images", stage, len(scored))
    results = evaluate(scored)
    logging.info("[%s] results: %s", stage, results)
    return results


def draw_reconstructions(stage: str, model, params, dataset, test_indices: np.ndarray,
                         workdir: Path) -> None:
    """WORKDIR/figures/<stage>_reconstructions.png: the first test images over the
    model's reconstructions (`model(images)["reconstruction"]`, in [0, 1])."""
    reconstruction.save_reconstruction_figure(
        model, params, dataset.images(test_indices[:FIGURE_IMAGES]),
        workdir / "figures" / f"{stage}_reconstructions.png",
    )
