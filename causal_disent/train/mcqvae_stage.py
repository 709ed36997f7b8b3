"""Stage `mcqvae`: trains the MCQ-VAE on reconstruction (CT-VAE stage 1)."""

import functools
from pathlib import Path

import jax
import ml_collections
import numpy as np
import optax
from absl import logging
from jax.sharding import Mesh

from causal_disent import models
from causal_disent.data import pipeline, registry, splits
from causal_disent.evaluation import curves, reconstruction
from causal_disent.objectives.mcqvae import images_to_unit_range, mcqvae_loss
from causal_disent.train import reporting, resume
from causal_disent.train.checkpoint import (
    CheckpointError,
    StageCheckpoints,
    check_workdir_compatible,
    checkpoint_dir,
)
from causal_disent.train.loop import fit
from causal_disent.train.sharding import (
    batch_sharded,
    check_batch_divisible,
    global_batch,
    replicated,
)
from causal_disent.train.state import TrainState, per_epoch_exponential_decay, train_step

STAGE = "mcqvae"
# What a learning-curve point records (reconstruction.evaluate_reconstruction's keys).
CURVE_KEYS = ("test_mse", "test_psnr", "codebook_perplexity")


def signature(config: ml_collections.ConfigDict) -> dict:
    """What a checkpoint of this stage depends on: the data and the architecture."""
    return {"data": config.data.name, "model": config.mcqvae.model.to_dict()}


def validate(config: ml_collections.ConfigDict, mesh: Mesh, workdir: Path) -> None:
    """Checks this stage's config before anything compiles."""
    del workdir  # stage 1 needs nothing in it
    model, optim, train = config.mcqvae.model, config.mcqvae.optim, config.mcqvae.train
    if model.latent_dim % model.num_codebooks:
        raise ValueError(
            f"mcqvae.model.latent_dim (D = {model.latent_dim}) must be divisible by "
            f"mcqvae.model.num_codebooks (C = {model.num_codebooks}): each codebook "
            f"quantises D/C channels"
        )
    for name in ("num_codebooks", "num_codes", "latent_dim", "hidden_width"):
        if model[name] < 1:
            raise ValueError(f"mcqvae.model.{name} must be positive, got {model[name]}")
    if not model.downsample_widths:
        raise ValueError("mcqvae.model.downsample_widths must name at least one width")
    if optim.learning_rate <= 0 or not 0 < optim.decay_rate_per_epoch <= 1:
        raise ValueError(
            "mcqvae.optim needs learning_rate > 0 and 0 < decay_rate_per_epoch <= 1"
        )
    if train.num_steps <= 0 and train.num_epochs <= 0:
        raise ValueError("set mcqvae.train.num_steps or mcqvae.train.num_epochs > 0")
    if train.eval_every_steps < 0 or (train.eval_every_steps and train.num_curve_images < 1):
        raise ValueError("mcqvae.train.eval_every_steps must be >= 0 (0 = no learning "
                         "curve) and, when > 0, num_curve_images >= 1")
    check_batch_divisible(optim.batch_size, mesh, "mcqvae.optim.batch_size")
    check_batch_divisible(train.eval_batch_size, mesh, "mcqvae.train.eval_batch_size")


def run(config: ml_collections.ConfigDict, workdir: Path, mesh: Mesh) -> dict:
    """Trains (or resumes) stage 1, evaluates on the test split, writes figures and
    results; returns the results dict."""
    cfg = config.mcqvae
    dataset = registry.dataset_from_config(config.data)
    split = splits.dataset_split(dataset, config.data.split_fractions, config.data.split_seed)
    model = models.build_mcqvae(cfg.model, out_channels=dataset.image_shape[-1])
    batcher = pipeline.EpochShuffledBatches(
        split["train"], cfg.optim.batch_size, seed=config.seed
    )
    total_steps = cfg.train.num_steps or cfg.train.num_epochs * batcher.steps_per_epoch
    schedule = per_epoch_exponential_decay(
        cfg.optim.learning_rate, cfg.optim.decay_rate_per_epoch, batcher.steps_per_epoch
    )
    init_rng, train_rng = jax.random.split(jax.random.key(config.seed))
    create_state = functools.partial(_create_state, model, dataset.image_shape, init_rng, schedule)

    checkpoints, state, first_step, finished = resume.open_stage(
        stage=STAGE, workdir=workdir, signature=signature(config), train_config=cfg.train,
        create_state=create_state, mesh=mesh, total_steps=total_steps,
    )
    if finished is not None:
        return finished

    evaluate_curve = functools.partial(
        _evaluate_curve_point, workdir, model, dataset,
        split["test"][: cfg.train.num_curve_images], mesh, cfg.train.eval_batch_size,
    )
    if first_step < total_steps:
        jitted_step = jax.jit(
            functools.partial(train_step, loss_fn=functools.partial(mcqvae_loss, model=model)),
            in_shardings=(replicated(mesh), batch_sharded(mesh), replicated(mesh)),
            out_shardings=(replicated(mesh), replicated(mesh)),
            donate_argnums=0,
        )
        state = fit(
            stage=STAGE, state=state,
            step_fn=lambda state, batch: jitted_step(state, global_batch(batch, mesh), train_rng),
            local_batches=pipeline.image_batches(
                dataset, batcher, first_step, total_steps,
                jax.process_index(), jax.process_count(), cfg.train.prefetch_batches,
            ),
            first_step=first_step, last_step=total_steps,
            global_batch_size=cfg.optim.batch_size, checkpoints=checkpoints,
            writer=reporting.MetricsWriter(workdir),
            log_every_steps=cfg.train.log_every_steps,
            learning_rate_fn=schedule,
            evaluate_every_steps=cfg.train.eval_every_steps, evaluate_fn=evaluate_curve,
        )
    checkpoints.close()
    if cfg.train.eval_every_steps > 0:
        _finish_curve(workdir, evaluate_curve, state, total_steps)

    test_indices = split["test"][: cfg.train.num_eval_images or None]
    logging.info("[%s] evaluating on %d test images", STAGE, len(test_indices))
    results = reconstruction.evaluate_reconstruction(
        model, state.params, dataset, test_indices, mesh, cfg.train.eval_batch_size
    )
    results["steps"] = int(jax.device_get(state.step))
    if jax.process_index() == 0:
        reconstruction.save_reconstruction_figure(
            model, state.params, dataset.images(split["test"][:8]),
            workdir / "figures" / "mcqvae_reconstructions.png",
        )
    reporting.update_results(workdir, STAGE, results)
    logging.info("[%s] results: %s", STAGE, results)
    return results


def _evaluate_curve_point(workdir: Path, model, dataset, indices: np.ndarray, mesh: Mesh,
                          batch_size: int, state, step: int) -> None:
    """Appends the test reconstruction scores of `state` on images `indices` (a
    fixed set, so the point is a function of the parameters) to the curve."""
    scores = reconstruction.evaluate_reconstruction(
        model, state.params, dataset, indices, mesh, batch_size
    )
    reporting.append_curve_point(workdir, STAGE, step, {k: scores[k] for k in CURVE_KEYS})


def _finish_curve(workdir: Path, evaluate_curve, state, total_steps: int) -> None:
    """The curve's final point (`fit` leaves the last step to the stage), on the
    same images as the others, and its figure."""
    evaluate_curve(state, total_steps)
    if jax.process_index() == 0:
        curves.save_learning_curve(
            reporting.read_curve(workdir, STAGE), ["test_psnr"],
            workdir / "figures" / "mcqvae_learning_curve.png",
            title="MCQ-VAE test PSNR (dB)",
        )


def _create_state(model, image_shape, init_rng, schedule) -> TrainState:
    sample = images_to_unit_range(np.zeros((1, *image_shape), np.uint8))
    params = model.init(init_rng, sample)["params"]
    return TrainState.create(apply_fn=model.apply, params=params, tx=optax.adam(schedule))


def load_trained(config: ml_collections.ConfigDict, workdir: Path, mesh: Mesh, dataset):
    """The MCQ-VAE module and its trained parameters (replicated over `mesh`) from
    the latest stage-1 checkpoint in `workdir`; CheckpointError if there is none or
    it was made with another architecture."""
    model = models.build_mcqvae(config.mcqvae.model, out_channels=dataset.image_shape[-1])
    check_trained(config, workdir)
    create_state = functools.partial(
        _create_state, model, dataset.image_shape, jax.random.key(0),
        optax.constant_schedule(0.0),
    )
    checkpoints = StageCheckpoints(workdir, STAGE, signature(config), 1, 1)
    return model, resume.restore_params(checkpoints, create_state, mesh)


def check_trained(config: ml_collections.ConfigDict, workdir: Path) -> None:
    """CheckpointError unless `workdir` holds a stage-1 checkpoint of this config's
    architecture (reads only its small JSON signature)."""
    directory = checkpoint_dir(workdir, STAGE)
    if not directory.exists() or not any(p.name.isdigit() for p in directory.iterdir()):
        raise CheckpointError(
            f"no stage-1 (mcqvae) checkpoint in {directory}: run stage 'mcqvae' first "
            f"(list it in config.stages) or point config.ct.mcqvae_workdir at a "
            f"finished stage-1 run"
        )
    check_workdir_compatible(workdir, STAGE, signature(config))
