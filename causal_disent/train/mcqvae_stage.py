"""Stage `mcqvae`: trains the MCQ-VAE on reconstruction (CT-VAE stage 1)."""

import functools
from pathlib import Path

import jax
import ml_collections
import numpy as np
from jax.sharding import Mesh

from causal_disent import models
from causal_disent.evaluation import curves, reconstruction
from causal_disent.objectives.mcqvae import mcqvae_loss
from causal_disent.runs import mcqvae as mcqvae_run
from causal_disent.runs.results import append_curve_point, read_curve
from causal_disent.train import image_stages, runner
from causal_disent.train.state import per_epoch_exponential_decay, train_step
from causal_disent.utils import console
from causal_disent.utils.sharding import check_batch_divisible

STAGE = mcqvae_run.STAGE
# What a learning-curve point records (reconstruction.evaluate_reconstruction's keys).
CURVE_KEYS = ("test_mse", "test_psnr", "codebook_perplexity")
# A final test PSNR this far below the curve's best point means training diverged (a
# codebook collapsing late in a long run, docs/measured_choices.md), and stage 2 would
# learn from damaged codes.
DIVERGED_BELOW_BEST_DB = 3.0


def validate(config: ml_collections.ConfigDict, mesh: Mesh, workdir: Path) -> None:
    """Checks this stage's config before anything compiles."""
    del workdir  # stage 1 needs nothing in it
    optim, train = config.mcqvae.optim, config.mcqvae.train
    models.check_mcqvae_config(config.mcqvae.model)
    if optim.learning_rate <= 0 or not 0 < optim.decay_rate_per_epoch <= 1:
        raise ValueError(
            "mcqvae.optim needs learning_rate > 0 and 0 < decay_rate_per_epoch <= 1"
        )
    if train.num_steps <= 0 and train.num_epochs <= 0:
        raise ValueError("set mcqvae.train.num_steps or mcqvae.train.num_epochs > 0")
    check_batch_divisible(optim.batch_size, mesh, "mcqvae.optim.batch_size")
    check_batch_divisible(train.eval_batch_size, mesh, "mcqvae.train.eval_batch_size")


def run(config: ml_collections.ConfigDict, workdir: Path, mesh: Mesh,
        mode: str = "train") -> dict:
    """Trains (or resumes) stage 1, evaluates on the test split, writes figures and
    results; returns the results dict. `mode`: runner.MODES."""
    cfg = config.mcqvae
    dataset, split, batcher = image_stages.training_data(config, cfg.optim.batch_size)
    model = mcqvae_run.build_model(config, dataset)
    total_steps = cfg.train.num_steps or cfg.train.num_epochs * batcher.steps_per_epoch
    schedule = per_epoch_exponential_decay(
        cfg.optim.learning_rate, cfg.optim.decay_rate_per_epoch, batcher.steps_per_epoch
    )
    init_rng, train_rng = jax.random.split(jax.random.key(config.seed))
    evaluate = reconstruction.reconstruction_evaluator(model, mesh, cfg.train.eval_batch_size)
    evaluate_curve = functools.partial(
        _evaluate_curve_point, workdir, evaluate, dataset,
        split["test"][: cfg.train.num_curve_images],
    )

    steps = {"reconstruction": functools.partial(
        train_step, loss_fn=functools.partial(mcqvae_loss, model=model))}

    def plan(first_step: int) -> runner.Plan:
        return runner.Plan(image_stages.image_training(
            steps, dataset, batcher, first_step, total_steps, cfg.train, train_rng,
            stage=STAGE), evaluate_curve)

    def finish(state) -> dict:
        results = image_stages.evaluate_on_test(
            STAGE, lambda indices: evaluate(state.params, dataset, indices),
            split["test"], cfg.train.num_eval_images)
        best = best_curve_point(read_curve(workdir, STAGE))
        if best is not None:
            results["best_curve_point"] = {"step": best["step"], "test_psnr": best["test_psnr"]}
            if diverged(results["test_psnr"], best):
                console.say(divergence_warning(results["test_psnr"], best))
        return results

    def draw_figures(state, results: dict) -> None:
        del results  # the figures need the model and the recorded curve only
        if cfg.train.eval_every_steps > 0:
            curves.save_learning_curve(
                read_curve(workdir, STAGE), ["test_psnr"],
                workdir / "figures" / "mcqvae_learning_curve.png",
                title="MCQ-VAE test PSNR (dB)",
            )
        image_stages.draw_reconstructions(STAGE, model, state.params, dataset,
                                          split["test"], workdir)

    return runner.run_stage(runner.Stage(
        name=STAGE, signature=mcqvae_run.signature(config), train_config=cfg.train,
        create_state=functools.partial(mcqvae_run.create_state, model, dataset.image_shape,
                                       init_rng, schedule),
        total_steps=total_steps, global_batch_size=cfg.optim.batch_size,
        plan=plan, finish=finish, learning_rate_fn=schedule, draw_figures=draw_figures,
    ), workdir, mesh, mode)


def _evaluate_curve_point(workdir: Path, evaluate, dataset, indices: np.ndarray,
                          state, step: int) -> None:
    """Appends the test reconstruction scores of `state` on images `indices` (a
    fixed set, so the point is a function of the parameters; `evaluate` is a
    `reconstruction_evaluator`) to the curve."""
    scores = evaluate(state.params, dataset, indices)
    append_curve_point(workdir, STAGE, step, {k: scores[k] for k in CURVE_KEYS})
    perplexity = ", ".join(f"{p:.1f}" for p in scores["codebook_perplexity"])
    console.say(f"[{STAGE}] step {step}: test PSNR {scores['test_psnr']:.2f} dB, "
                f"codebook perplexity {perplexity} ({len(indices)} images)")


def best_curve_point(curve: list[dict]) -> dict | None:
    """The learning-curve point of highest test PSNR; None without a curve."""
    return max(curve, key=lambda point: point["test_psnr"], default=None)


def diverged(final_psnr: float, best: dict) -> bool:
    """Whether the final test PSNR fell more than DIVERGED_BELOW_BEST_DB below the
    curve's best point (a curve point scores fewer images: a small gap is noise)."""
    return best["test_psnr"] - final_psnr > DIVERGED_BELOW_BEST_DB


def divergence_warning(final_psnr: float, best: dict) -> str:
    return (f"[{STAGE}] warning: the final test PSNR {final_psnr:.2f} dB is "
            f"{best['test_psnr'] - final_psnr:.1f} dB below the {best['test_psnr']:.2f} dB "
            f"of step {best['step']}: stage 1 diverged, and a stage 2 trained on these "
            f"codes learns from damaged ones. Fix: rerun stage 1 with "
            f"--config.mcqvae.train.num_steps={best['step']} or a lower "
            f"--config.mcqvae.optim.learning_rate")
