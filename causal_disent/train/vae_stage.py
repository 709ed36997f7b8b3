"""Stage `vae`: trains a model of the VAE family (models/vae.py with the loss
`vae.objective.name` of objectives/vae.py, e.g. β-VAE) on a dataset's training
images, then scores its reconstructions and its latents' KL on the test split.

Training: Adam at a constant learning rate on batches of training images, the
objective's randomness (the reparameterised sample) drawn from fold_in(key, step). A
loss that declares `step` (AnnealedVAE) gets the train state's step, one that declares
`dataset_size` (β-TCVAE) the training split's number of images. FactorVAE's loss also
trains its discriminator (`vae.discriminator`, its own Adam): the same step updates
both parameter groups (runs/vae.py), and only the VAE's are evaluated.
With the section `vae.consistency`, the loss also carries the consistency penalties
(objectives/consistency.py). A loss of pairs (Ada-GVAE, Ada-ML-VAE: objectives/
weak_vae.py) trains on pairs of images drawn as `vae.pairs` says (data/weak_pairs.py,
`pair_batches`); with the section `vae.retrieval`, the test results also hold the
action retrieval of CT-VAE's test pairs (evaluation/pair_retrieval.py). Results go
to WORKDIR/results.json under "vae", with the interventional-consistency scores
(evaluation/consistency_scores.py); the figure of test images and their
reconstructions to WORKDIR/figures/vae_reconstructions.png, the scores' heat maps to
WORKDIR/figures/vae_consistency.png.
"""

import functools
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import ml_collections
import numpy as np
from absl import logging
from jax.sharding import Mesh

from causal_disent.data import pipeline, registry, weak_pairs
from causal_disent.evaluation import (
    consistency_scores,
    curves,
    pair_retrieval,
    traversal,
    vae_evaluation,
)
from causal_disent.models.vae import check_discriminator_config
from causal_disent.objectives import consistency
from causal_disent.objectives.weak_vae import PAIR_IMAGE
from causal_disent.objectives.vae import (
    TRAIN_STEP,
    bind_loss,
    check_objective_config,
    is_variational,
    learns_from_pairs,
    needs_discriminator,
    takes_argument,
)
from causal_disent.runs import seeds as seeds_format
from causal_disent.runs import vae as vae_run
from causal_disent.runs.results import (
    ResultsError,
    append_curve_point,
    read_curve,
    read_results,
    update_results,
)
from causal_disent.train import image_stages, multi_step, runner, seed_stacking
from causal_disent.train.state import train_step
from causal_disent.utils import console, figure_workers, threads
from causal_disent.utils.sharding import check_batch_divisible

STAGE = vae_run.STAGE
# What a learning-curve point records (vae_evaluation.vae_evaluator's keys).
CURVE_KEYS = ("test_nll", "test_bce", "test_mse", "test_kl")
# The traversal figure: test images traversed, and those that give each latent's spread.
TRAVERSED_IMAGES, SPREAD_IMAGES = 3, 512
TRAINS_MANY_SEEDS = True  # config.num_seeds > 1 is supported (train/seed_stacking.py)


def vae_train_step(state, batch: dict, rng: jax.Array, *, loss_fn) -> tuple:
    """`train_step` on `loss_fn`, with `step=state.step` bound first if the loss
    declares it: a loss's schedule reads the step from the state. The step also rides
    in the batch (objectives/vae.TRAIN_STEP) for what every loss passes on without
    declaring it: an XBlock's temperature, the consistency weights' warm-up."""
    if takes_argument(loss_fn, "step"):
        loss_fn = functools.partial(loss_fn, step=state.step)
    return train_step(state, {**batch, TRAIN_STEP: state.step}, rng, loss_fn=loss_fn)


def validate(config: ml_collections.ConfigDict, mesh: Mesh, workdir: Path) -> None:
    """Checks this stage's config before anything compiles; ValueError naming the
    field."""
    del workdir  # the stage needs nothing in it
    cfg = config.vae
    check_objective_config(cfg.objective)
    dataset = registry.dataset_from_config(config.data)
    if len(getattr(dataset, "image_shape", ())) != 3:
        raise ValueError(f"the vae stage trains on images [H, W, ch], but dataset "
                         f"{config.data.name!r} has none; choose an image dataset "
                         f"(data.name: {', '.join(registry.DATASETS)})")
    model = vae_run.build_model(config, dataset)  # checks vae.model
    if "auxiliary" in cfg and not hasattr(model, "auxiliary_size"):
        raise ValueError(f"vae.auxiliary is set but the {cfg.objective.name!r} loss's model "
                         "uses no auxiliary variable: remove it")
    vae_run.auxiliary_variable(config, dataset)  # checks vae.auxiliary.factor
    check_adam_config(cfg.optim, "vae.optim")
    check_discriminator_section(cfg)
    consistency_scores.check_results_fit(model.num_latents, seeds_format.num_seeds(config),
                                         "vae.model.num_latents")
    if "consistency" in cfg:
        consistency.check_consistency_config(
            cfg.consistency, variational=is_variational(cfg.objective.name))
    check_pair_sections(cfg, dataset)
    if cfg.train.num_steps < 1:
        raise ValueError(f"vae.train.num_steps must be positive, got {cfg.train.num_steps}")
    seed_stacking.check_num_seeds(config, mesh)
    if seeds_format.num_seeds(config) == 1:  # else the seeds, not the batch, are split
        check_batch_divisible(cfg.optim.batch_size, mesh, "vae.optim.batch_size")
    check_batch_divisible(cfg.train.eval_batch_size, mesh, "vae.train.eval_batch_size")


def check_pair_sections(cfg: ml_collections.ConfigDict, dataset) -> None:
    """`vae.pairs` is there exactly when the loss learns from pairs of images, and
    then valid, with nothing the pair losses do not take (an XBlock, an auxiliary
    variable, consistency penalties); `vae.retrieval`, when there, fits the dataset.
    ValueError naming the field."""
    name = cfg.objective.name
    if not learns_from_pairs(name):
        if "pairs" in cfg:
            raise ValueError(f"vae.pairs is set but the {name!r} loss learns from single "
                             "images: remove it")
    elif "pairs" not in cfg:
        raise ValueError(f"vae.pairs (source, k) is missing: the {name!r} loss learns "
                         "from pairs of images (data/weak_pairs.py)")
    else:
        weak_pairs.check_pairs_config(cfg.pairs, dataset)
        for field, present in (("vae.model.xblock", "xblock" in cfg.model),
                               ("vae.auxiliary", "auxiliary" in cfg),
                               ("vae.consistency weights > 0",
                                consistency.is_enabled(cfg.get("consistency")))):
            if present:
                raise ValueError(f"{field} is set, and the {name!r} loss of pairs takes "
                                 "none: remove it")
    if "retrieval" in cfg:
        pair_retrieval.check_retrieval_config(cfg.retrieval, dataset)


def check_adam_config(optim: ml_collections.ConfigDict, section: str) -> None:
    """ValueError naming `section` unless `optim` is a valid Adam: learning_rate > 0,
    eps > 0, decay rates b1 and b2 in [0, 1)."""
    if optim.learning_rate <= 0 or optim.eps <= 0:
        raise ValueError(f"{section} needs learning_rate > 0 and eps > 0")
    if not (0 <= optim.b1 < 1 and 0 <= optim.b2 < 1):
        raise ValueError(f"{section} needs 0 <= b1 < 1 and 0 <= b2 < 1 (Adam's decay rates)")


def check_discriminator_section(cfg: ml_collections.ConfigDict) -> None:
    """The section `vae.discriminator` (model, optim) is there exactly when the loss
    trains a discriminator, and then valid; ValueError naming the field."""
    name = cfg.objective.name
    if not needs_discriminator(name):
        if "discriminator" in cfg:
            raise ValueError(f"vae.discriminator is set but the {name!r} loss trains no "
                             "discriminator")
        return
    if "discriminator" not in cfg:
        raise ValueError(f"vae.discriminator (model, optim) is missing: the {name!r} loss "
                         "trains a discriminator")
    check_discriminator_config(cfg.discriminator.model)
    check_adam_config(cfg.discriminator.optim, "vae.discriminator.optim")


def run(config: ml_collections.ConfigDict, workdir: Path, mesh: Mesh,
        mode: str = "train") -> dict:
    """Trains (or resumes), evaluates on the test split, writes the figures and the
    results; returns the results dict. With `num_seeds` > 1, trains that many models
    at once (train/seed_stacking.py) and writes each as a run of its own. `mode`:
    runner.MODES."""
    cfg = config.vae
    dataset, split, batcher = image_stages.training_data(config, cfg.optim.batch_size)
    model = vae_run.build_model(config, dataset)
    loss_fn = bind_loss(cfg.objective, model, dataset_size=len(split["train"]),
                        discriminator=vae_run.build_discriminator(config))
    if consistency.is_enabled(cfg.get("consistency")):  # "+ consistency" (weights > 0)
        loss_fn = consistency.with_consistency(
            loss_fn, model, cfg.consistency,
            params_of=functools.partial(vae_run.vae_params, config))
    step_fn = functools.partial(vae_train_step, loss_fn=loss_fn)
    auxiliary = vae_run.auxiliary_variable(config, dataset)

    def evaluate_trained(params, seed: int = config.seed) -> dict:
        """The test-split scores of the VAE `params`, trained with `seed`, which also
        seeds the draws of its consistency scores (so that a stacked seed's scores are
        those of its run alone)."""

        def evaluate(indices):
            results = {"objective": cfg.objective.to_dict(),
                       **vae_evaluation.evaluate_vae(
                           model, params, dataset, indices, mesh, cfg.train.eval_batch_size,
                           variational=is_variational(cfg.objective.name)),
                       "consistency": consistency_scores.score_test_images(
                           model, params, dataset, indices, seed,
                           cfg.train.eval_batch_size)}
            structure = consistency_scores.xblock_structure(model, params)
            if structure is not None:
                results["xblock"] = structure
            if "retrieval" in cfg:
                results["action_retrieval"] = pair_retrieval.evaluate(
                    model, params, dataset, split, seed, **cfg.retrieval,
                    batch_size=cfg.train.eval_batch_size)
            return results

        return image_stages.evaluate_on_test(STAGE, evaluate, split["test"],
                                             cfg.train.num_eval_images)

    def draw_trained(params, results: dict, run_workdir: Path) -> None:
        """The reconstruction and consistency figures of the VAE `params`."""
        consistency_scores.save_consistency_figure(
            results["consistency"], run_workdir / "figures" / f"{STAGE}_consistency.png",
            results.get("xblock"))
        image_stages.draw_reconstructions(STAGE, model, params, dataset, split["test"],
                                          run_workdir)
        test = split["test"]
        traversal.save_traversal_figure(
            model, params, dataset.images(test[:TRAVERSED_IMAGES]),
            dataset.images(test[:SPREAD_IMAGES]),
            run_workdir / "figures" / f"{STAGE}_traversals.png")

    if seeds_format.num_seeds(config) > 1:
        return _run_stacked(config, workdir, mesh, mode, dataset, split, model, step_fn,
                            auxiliary, evaluate_trained, draw_trained)
    init_rng, train_rng = jax.random.split(jax.random.key(config.seed))

    curve_point = None
    if cfg.train.get("eval_every_steps", 0) > 0:
        curve_point = curve_evaluator(model, dataset, split["test"][:cfg.train.num_curve_images],
                                      mesh, cfg, workdir, config)

    def plan(first_step: int) -> runner.Plan:
        if learns_from_pairs(cfg.objective.name):
            sources = [weak_pairs.pair_source(cfg.pairs, dataset, split, config.seed)]
            return runner.Plan(runner.Training(
                steps={cfg.objective.name: step_fn},
                batches=pair_batches(dataset, sources, cfg.optim.batch_size, first_step,
                                     cfg.train.num_steps, cfg.train.prefetch_batches),
                rng=train_rng), curve_point)
        return runner.Plan(image_stages.image_training(
            {cfg.objective.name: step_fn}, dataset, batcher, first_step, cfg.train.num_steps,
            cfg.train, train_rng, auxiliary, stage=STAGE), curve_point)

    def finish(state) -> dict:
        results = evaluate_trained(vae_run.vae_params(config, state.params))
        if curve_point is not None:
            results["curve"] = read_curve(workdir, STAGE)
        return results

    def draw_figures(state, results: dict) -> None:
        draw_trained(vae_run.vae_params(config, state.params), results, workdir)
        if results.get("curve"):
            curves.save_learning_curve(
                results["curve"], ["test_nll"],
                workdir / "figures" / f"{STAGE}_learning_curve.png",
                title=f"{cfg.objective.name} on {config.data.name}: test NLL (nats per image)")

    return runner.run_stage(runner.Stage(
        name=STAGE, signature=vae_run.signature(config), train_config=cfg.train,
        create_state=vae_run.state_factory(config, model, dataset.image_shape, init_rng),
        total_steps=cfg.train.num_steps, global_batch_size=cfg.optim.batch_size,
        plan=plan, finish=finish,  # constant learning rate: cfg.optim.learning_rate
        draw_figures=draw_figures,
    ), workdir, mesh, mode)


def pair_batches(dataset, sources: list, batch_size: int, first_step: int, last_step: int,
                 prefetch: int, stacked: bool = False):
    """The training batches of a loss of pairs for steps [first_step, last_step):
    {"image": the pairs' first images, PAIR_IMAGE: their second}, uint8 [b, H, W, ch],
    this host's contiguous share of each step's `batch_size` pairs from the one source
    in `sources` (data/weak_pairs.py); `stacked`: one source per stacked seed, each
    seed's whole batch, [S_local, batch_size, H, W, ch], this host's share of the
    seeds (as pipeline.seed_stacked_image_batches)."""
    count, index = jax.process_count(), jax.process_index()

    def images_of(source, step: int, rows: slice) -> dict:
        pairs = source.batch("train", step, batch_size)
        return {"image": dataset.images(pairs["x_index"][rows]),
                PAIR_IMAGE: dataset.images(pairs["y_index"][rows])}

    def batch(step: int) -> dict:
        if not stacked:
            local = batch_size // count
            return images_of(sources[0], step, slice(index * local, (index + 1) * local))
        local_sources = sources[index * len(sources) // count:
                                (index + 1) * len(sources) // count]
        per_seed = [images_of(source, step, slice(None)) for source in local_sources]
        return {key: np.stack([part[key] for part in per_seed]) for key in per_seed[0]}

    return pipeline.batch_stream(batch, first_step, last_step, prefetch)


def curve_evaluator(model, dataset, indices, mesh: Mesh, cfg: ml_collections.ConfigDict,
                    workdir: Path, config: ml_collections.ConfigDict):
    """fn(state, step) that scores the VAE on the fixed test images `indices` and
    appends the point (test NLL, BCE, MSE and KL) to the stage's learning curve; the
    scorer compiles once."""
    evaluate = vae_evaluation.vae_evaluator(model, mesh, cfg.train.eval_batch_size,
                                            variational=is_variational(cfg.objective.name))

    def point(state, step: int) -> None:
        scores = evaluate(vae_run.vae_params(config, state.params), dataset, indices)
        kept = {key: scores[key] for key in CURVE_KEYS if key in scores}
        append_curve_point(workdir, STAGE, step, kept)
        console.say(f"[{STAGE}] step {step}: test NLL {kept['test_nll']:.2f} "
                    f"({len(indices)} images)")

    return point


def seed_stage_results(workdir: Path, seed: int) -> dict:
    """The results one seed's folder of a many-seed run holds (its figures' titles
    quote them); ResultsError naming the rerun that writes the folder again when they
    are gone."""
    seed_dir = seeds_format.seed_workdir(workdir, seed)
    found = read_results(seed_dir).get(STAGE)
    if found is None:
        raise ResultsError(
            f"{seed_dir} holds no {STAGE} results (moved or deleted?); `python -m "
            f"causal_disent.main --workdir={workdir} --mode=eval` writes every seed's folder "
            f"again from the run's checkpoints")
    return found


def _run_stacked(config, workdir: Path, mesh: Mesh, mode: str, dataset, split, model,
                 step_fn, auxiliary, evaluate_trained, draw_trained) -> dict:
    """`run` for num_seeds = S > 1: the S models of seeds config.seed + k as one stacked
    state and one step (vmapped or unrolled, `seed_execution`), each seed its own
    batches; at the end each model is written, scored and figured in
    WORKDIR/seeds/seed_<seed> as the run of that seed alone would be. Results: the
    seeds, their workdirs, and the mean and standard deviation over seeds of every
    scalar score."""
    cfg = config.vae
    seeds = seeds_format.run_seeds(config)
    init_rngs, train_rngs = jnp.stack(
        [jax.random.split(jax.random.key(seed)) for seed in seeds], axis=1)
    batchers = [pipeline.EpochShuffledBatches(split["train"], cfg.optim.batch_size, seed)
                for seed in seeds]
    platform = runner.platform_of(mesh)
    execution = seed_stacking.resolve_execution(config.get("seed_execution", "auto"), platform)

    def create_for_rng(init_rng):
        return vae_run.state_factory(config, model, dataset.image_shape, init_rng)()

    def plan(first_step: int) -> runner.Plan:
        note = seed_stacking.unrolled_copies_note(
            len(seeds), execution,
            multi_step.steps_per_call(cfg.train, platform, cfg.train.num_steps, first_step),
            multi_step.unrolled(cfg.train.get("unroll_call", "auto"), platform))
        if note is not None and first_step < cfg.train.num_steps:  # it will compile
            console.say(f"[{STAGE}] {note}")
        steps = {cfg.objective.name: seed_stacking.stacked_step(step_fn, execution)}
        if learns_from_pairs(cfg.objective.name):
            sources = [weak_pairs.pair_source(cfg.pairs, dataset, split, seed)
                       for seed in seeds]
            return runner.Plan(runner.Training(
                steps=steps, rng=train_rngs,
                batches=pair_batches(dataset, sources, cfg.optim.batch_size, first_step,
                                     cfg.train.num_steps, cfg.train.prefetch_batches,
                                     stacked=True)))
        return runner.Plan(runner.Training(
            steps=steps,
            batches=pipeline.seed_stacked_image_batches(
                dataset, batchers, first_step, cfg.train.num_steps, jax.process_index(),
                jax.process_count(), cfg.train.prefetch_batches, auxiliary),
            rng=train_rngs,
            device_data=image_stages.image_device_data(
                STAGE, dataset, batchers, first_step, cfg.train.num_steps, cfg.train,
                image_stages.auxiliary_values(auxiliary), stacked=True)))

    def finish(state) -> dict:
        per_seed, saving = [], []
        steps = int(jax.device_get(state.step))  # the seeds share the step counter
        try:
            for index, seed in enumerate(seeds):
                single_config = seeds_format.seed_config(config, seed)
                seed_dir = seeds_format.seed_workdir(workdir, seed)
                single = seed_stacking.seed_state(state, index)
                # Its checkpoint is written while the seeds are evaluated.
                saving.append(seed_stacking.write_seed_run(
                    single, single_config, STAGE, vae_run.signature(single_config), seed_dir))
                results = {**evaluate_trained(vae_run.vae_params(config, single.params),
                                              seed),
                           "steps": steps}
                update_results(seed_dir, STAGE, results)
                per_seed.append(results)
        finally:
            seed_stacking.close_all(saving)
        return {"num_seeds": len(seeds), "seeds": seeds,
                "seed_workdirs": [str(seeds_format.seed_workdir(Path("."), seed))
                                  for seed in seeds],
                "over_seeds": seed_stacking.summarise_over_seeds(per_seed)}

    def draw_figures(state, results: dict) -> None:
        del results  # each seed's own are in its workdir
        seed_results = [seed_stage_results(workdir, seed) for seed in seeds]
        # Other processes draw and write each seed's figures while this one computes
        # the next seed's (utils/figure_workers.py).
        with figure_workers.saved_in_parallel(min(len(seeds), threads.worker_count())):
            for index, seed in enumerate(seeds):
                started = time.perf_counter()
                seed_dir = seeds_format.seed_workdir(workdir, seed)
                params = vae_run.vae_params(config,
                                            seed_stacking.seed_state(state, index).params)
                draw_trained(params, seed_results[index], seed_dir)
                # log.txt only: this process's share of each seed's figures.
                logging.info("[%s] seed %d's figures: %.2f s here", STAGE, seed,
                             time.perf_counter() - started)

    return runner.run_stage(runner.Stage(
        name=STAGE, signature=vae_run.signature(config), train_config=cfg.train,
        create_state=seed_stacking.stacked_state_factory(create_for_rng, init_rngs),
        total_steps=cfg.train.num_steps, global_batch_size=len(seeds) * cfg.optim.batch_size,
        plan=plan, finish=finish, draw_figures=draw_figures,
    ), workdir, mesh, mode)
