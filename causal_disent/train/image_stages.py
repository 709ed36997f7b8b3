"""What the stages of image autoencoders (`mcqvae`, `vae`; `causalvae` takes its
data from here too) share: the data, a training on batches of training images, an
evaluation on the test split and a figure of test images over their reconstructions."""

import time
from collections.abc import Callable
from pathlib import Path

import jax
import ml_collections
import numpy as np
from absl import logging

from causal_disent.data import pipeline, registry, splits
from causal_disent.evaluation import reconstruction
from causal_disent.train import device_data, runner
from causal_disent.utils import console

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
                   first_step: int, total_steps: int, train_config: ml_collections.ConfigDict,
                   rng: jax.Array, auxiliary=None, stage: str = "") -> runner.Training:
    """`steps` trained on this host's batches {"image"} of `batcher`'s images, from
    `first_step` to `total_steps`, with "auxiliary" = `auxiliary(indices)` if given;
    the images kept on the devices when `train_config.device_data` asks for it."""
    return runner.Training(
        steps=steps,
        batches=pipeline.image_batches(dataset, batcher, first_step, total_steps,
                                       jax.process_index(), jax.process_count(),
                                       train_config.prefetch_batches, auxiliary),
        rng=rng,
        device_data=image_device_data(stage, dataset, [batcher], first_step, total_steps,
                                      train_config, auxiliary_values(auxiliary)),
    )


def auxiliary_values(auxiliary) -> dict:
    """The per-image values beside "image" in a batch: "auxiliary" when given."""
    return {} if auxiliary is None else {"auxiliary": auxiliary}


def image_device_data(stage: str, dataset, batchers: list[pipeline.EpochShuffledBatches],
                      first_step: int, total_steps: int, train_config,
                      per_image: dict | None = None,
                      stacked: bool = False) -> device_data.DeviceData | None:
    """The training images that steps [first_step, total_steps) draw
    (device_data.DrawnRows) as a device table, with `per_image` values beside them
    (name -> function of flat indices, e.g. "auxiliary" or "labels"), and batches of
    row indices in the order of `batchers` (one, or one per stacked seed: `stacked`
    gives [S_local, batch] rows as seed_stacked_image_batches gives images); None
    when the config or the table's size says the host pipeline."""
    # Nothing left to train, or the host pipeline whatever the size: no table to plan.
    if first_step >= total_steps or not device_data.enabled(train_config):
        return None
    per_image = per_image or {}
    rows = device_data.DrawnRows(batchers, first_step, total_steps)
    indices = batchers[0].indices[rows.positions]  # the images the run draws
    image_bytes = len(indices) * int(np.prod(dataset.image_shape))
    value_bytes = sum(len(indices) * np.asarray(values(indices[:1])).nbytes
                      for values in per_image.values())
    if not device_data.wanted(stage, train_config, image_bytes + value_bytes):
        return None
    if len(indices) < len(batchers[0].indices):
        console.say(f"[{stage}] the table holds the {len(indices):,} of "
                    f"{len(batchers[0].indices):,} training images that steps "
                    f"{first_step}-{total_steps} draw")
    started = time.perf_counter()
    table = {"image": pipeline.all_images(dataset, indices)}
    for name, values in per_image.items():
        table[name] = np.asarray(values(indices))
    # In log.txt only: with the placement's line it splits a run's setup time.
    logging.info("[%s] %d training images read or rendered in %.1f s", stage, len(indices),
                 time.perf_counter() - started)
    count, index = jax.process_count(), jax.process_index()
    local = range(index * len(batchers) // count, (index + 1) * len(batchers) // count)

    def batch(step: int) -> dict:
        if not stacked:
            return {"row": rows.local_rows(0, step, index, count)}
        return {"row": np.stack([rows.global_rows(seed, step) for seed in local])}

    def gather(table: dict, batch: dict) -> dict:
        return {name: values[batch["row"]] for name, values in table.items()}

    return device_data.DeviceData(
        table=table,
        batches=pipeline.batch_stream(batch, first_step, total_steps,
                                      train_config.prefetch_batches),
        gather=gather)


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
