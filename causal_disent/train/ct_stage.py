"""Stage `ct`: trains the causal-transition layer on the frozen MCQ-VAE (stage 2).

Every step is one mode (standard, action or causal; CT-VAE paper §3.5), drawn from
`config.ct.objective.mode_proportions` by a seeded stream keyed on the step, and
every batch is a set of training-split transitions keyed on the step too, so a
resumed run repeats an uninterrupted one exactly. The frozen MCQ-VAE gives the
batch's codes outside the differentiated step (no gradient is ever computed for it
and its parameters are not in the optimiser), read from a code cache of the whole
dataset or encoded on the fly (`config.ct.train.code_source`; see code_cache.py).
"""

import functools
import math
from pathlib import Path

import jax
import jax.numpy as jnp
import ml_collections
import numpy as np
import optax
from absl import logging
from jax.sharding import Mesh

from causal_disent import models
from causal_disent.data import registry, splits, transitions
from causal_disent.data.pipeline import prefetched
from causal_disent.evaluation import ct_evaluation, ct_retrieval, curves
from causal_disent.models.ct_layer import NOISE_MODES, CausalTransition
from causal_disent.models.transition_gnn import BACKENDS
from causal_disent.objectives import ct as ct_objectives
from causal_disent.train import ct_codes, mcqvae_stage, reporting, resume
from causal_disent.train.checkpoint import CheckpointError, StageCheckpoints
from causal_disent.train.loop import fit
from causal_disent.train.sharding import (
    batch_sharded,
    check_batch_divisible,
    global_batch,
    process_slice,
    replicated,
)
from causal_disent.train.state import SCHEDULES, TrainState, stage_schedule, train_step

STAGE = "ct"
MODE_NAMES = tuple(ct_objectives.MODES)  # ("standard", "action", "causal")


def build_model(config: ml_collections.ConfigDict, dataset) -> CausalTransition:
    """The CT layer over the N = C·h·w codes of the config's MCQ-VAE, 2F actions (F
    factors or attributes that actions move)."""
    mcqvae = models.build_mcqvae(config.mcqvae.model, out_channels=dataset.image_shape[-1])
    return models.build_ct_layer(
        config.ct.model,
        num_nodes=math.prod(mcqvae.code_grid_shape(dataset.image_shape)),
        num_codes=config.mcqvae.model.num_codes,
        num_actions=transitions.num_dataset_actions(dataset),
    )


def signature(config: ml_collections.ConfigDict) -> dict:
    """A CT checkpoint depends on the data, the stage-1 architecture and its own."""
    return {
        "data": config.data.name,
        "mcqvae_model": config.mcqvae.model.to_dict(),
        "ct_model": config.ct.model.to_dict(),
    }


def mcqvae_workdir(config: ml_collections.ConfigDict, workdir: Path) -> Path:
    return Path(config.ct.mcqvae_workdir) if config.ct.mcqvae_workdir else workdir


def validate(config: ml_collections.ConfigDict, mesh: Mesh, workdir: Path) -> None:
    m, objective = config.ct.model, config.ct.objective
    if m.noise not in NOISE_MODES:
        raise ValueError(f"ct.model.noise must be one of {NOISE_MODES}, got {m.noise!r}")
    if m.gnn_backend not in BACKENDS:
        raise ValueError(f"ct.model.gnn_backend must be one of {BACKENDS}, got {m.gnn_backend!r}")
    for name in ("graph_hidden", "gnn_hidden", "gnn_layers"):
        if m[name] < 1:
            raise ValueError(f"ct.model.{name} must be positive, got {m[name]}")
    proportions = tuple(objective.mode_proportions)
    if len(proportions) != len(MODE_NAMES) or min(proportions) < 0 or sum(proportions) <= 0:
        raise ValueError(
            f"ct.objective.mode_proportions must be three non-negative weights for "
            f"{MODE_NAMES}; got {proportions}"
        )
    train = config.ct.train
    if train.num_steps <= 0 and train.num_epochs <= 0:
        raise ValueError("set ct.train.num_steps or ct.train.num_epochs > 0")
    check_batch_divisible(config.ct.optim.batch_size, mesh, "ct.optim.batch_size")
    check_batch_divisible(train.eval_batch_size, mesh, "ct.train.eval_batch_size")
    if config.ct.optim.schedule not in SCHEDULES:
        raise ValueError(
            f"ct.optim.schedule must be one of {SCHEDULES}, got {config.ct.optim.schedule!r}"
        )
    if not 0 <= config.ct.optim.final_learning_fraction <= 1:
        raise ValueError("ct.optim.final_learning_fraction must be in [0, 1]")
    if train.code_source not in ct_codes.SOURCES:
        raise ValueError(
            f"ct.train.code_source must be one of {ct_codes.SOURCES}, got {train.code_source!r}"
        )
    if train.code_source != "encode":
        check_batch_divisible(train.code_cache_batch_size, mesh, "ct.train.code_cache_batch_size")
    # Stage 1 must exist already unless this run trains it first.
    if "mcqvae" not in config.stages or config.ct.mcqvae_workdir:
        mcqvae_stage.check_trained(config, mcqvae_workdir(config, workdir))


def mode_of_step(seed: int, step: int, proportions) -> str:
    """The mode of a training step: a pure function of (seed, step)."""
    probabilities = np.asarray(proportions, np.float64) / np.sum(proportions)
    rng = np.random.default_rng([seed, 0x4D0DE, step])  # a stream of its own
    return MODE_NAMES[rng.choice(len(MODE_NAMES), p=probabilities)]


def transition_batches(dataset, sampler, split_name, batch_size, seed, proportions,
                       first_step, last_step, prefetch, codes=None):
    """Host batches of this host's slice: {x_codes, y_codes: [b, N] int32} read from
    `codes` (the code cache) when given, else {x, y: uint8 images} to encode; plus
    action [b] and the step's mode."""
    local = process_slice(batch_size)

    def render(step):
        pairs = sampler.batch(split_name, step, batch_size)
        x_index, y_index = pairs["x_index"][local], pairs["y_index"][local]
        if codes is None:
            batch = {"x": dataset.images(x_index), "y": dataset.images(y_index)}
        else:
            batch = {"x_codes": codes[x_index].astype(np.int32),
                     "y_codes": codes[y_index].astype(np.int32)}
        return {**batch, "action": pairs["action"][local],
                "mode": mode_of_step(seed, step, proportions)}

    batches = map(render, range(first_step, last_step))
    return prefetched(batches, prefetch) if prefetch > 0 else batches


def run(config: ml_collections.ConfigDict, workdir: Path, mesh: Mesh) -> dict:
    """Trains (or resumes) stage 2, evaluates on the test split, writes figures and
    results; returns the results dict."""
    cfg = config.ct
    dataset = registry.dataset_from_config(config.data)
    split = splits.dataset_split(dataset, config.data.split_fractions, config.data.split_seed)
    sampler = transitions.sampler_for(dataset, split, seed=config.seed)
    mcqvae, mcqvae_params = mcqvae_stage.load_trained(
        config, mcqvae_workdir(config, workdir), mesh, dataset
    )
    encode = ct_codes.make_encoder(mcqvae, mesh)
    model = build_model(config, dataset)

    steps_per_epoch = max(1, len(split["train"]) // cfg.optim.batch_size)
    total_steps = cfg.train.num_steps or cfg.train.num_epochs * steps_per_epoch
    schedule = stage_schedule(cfg.optim, steps_per_epoch, total_steps)
    init_rng, train_rng, eval_rng = stage_rngs(config)
    create_state = functools.partial(_create_state, model, init_rng, schedule)

    checkpoints, state, first_step, finished = resume.open_stage(
        stage=STAGE, workdir=workdir, signature=signature(config), train_config=cfg.train,
        create_state=create_state, mesh=mesh, total_steps=total_steps,
    )
    if finished is not None:
        return finished

    codes = None
    if first_step < total_steps:
        codes = ct_codes.training_codes(config, dataset, mcqvae, mcqvae_params, encode, mesh,
                                        workdir, total_steps, mcqvae_workdir(config, workdir))
    evaluate_fn = None
    if cfg.train.eval_every_steps > 0:
        evaluate_fn = curve_evaluator(config, model, dataset, sampler, encode, mcqvae_params,
                                      codes, mesh, workdir, eval_rng)
    if first_step < total_steps:
        state = _train(
            config, model, state, mcqvae_params, encode, dataset, sampler, codes, mesh,
            workdir, checkpoints, schedule, train_rng, first_step, total_steps, evaluate_fn,
        )
    checkpoints.close()

    results = evaluate_on_test(config, model, state.params, mcqvae, mcqvae_params, encode,
                               dataset, sampler, mesh)
    results["steps"] = int(jax.device_get(state.step))
    if evaluate_fn is not None:
        evaluate_fn(state, results["steps"])
        results["curve"] = reporting.read_curve(workdir, STAGE)
    if jax.process_index() == 0:
        save_stage_figures(config, model, state.params, mcqvae, mcqvae_params, dataset, split,
                           results, workdir / "figures", eval_rng)
    reporting.update_results(workdir, STAGE, results)
    logging.info("[%s] results: %s", STAGE, {k: v for k, v in results.items()
                                              if k not in ("confusion", "action_confusion", "curve")})
    return results


def _train(config, model, state, mcqvae_params, encode, dataset, sampler, codes, mesh,
           workdir, checkpoints, schedule, train_rng, first_step, total_steps, evaluate_fn):
    """Stage 2's training steps from `first_step`; returns the final state."""
    cfg = config.ct
    mode_steps = {
        mode: jax.jit(
            functools.partial(
                train_step,
                loss_fn=functools.partial(loss, model=model, weights=cfg.objective.weights),
            ),
            in_shardings=(replicated(mesh), batch_sharded(mesh), replicated(mesh)),
            out_shardings=(replicated(mesh), replicated(mesh)),
            donate_argnums=0,
        )
        for mode, loss in ct_objectives.MODES.items()
    }

    def step_fn(state, local_batch):
        mode = local_batch.pop("mode")
        batch = ct_codes.batch_codes(global_batch(local_batch, mesh), encode, mcqvae_params)
        state, metrics = mode_steps[mode](state, batch, train_rng)
        return state, {**metrics, "mode": mode}

    return fit(
        stage=STAGE, state=state, step_fn=step_fn,
        local_batches=transition_batches(
            dataset, sampler, "train", cfg.optim.batch_size, config.seed,
            tuple(cfg.objective.mode_proportions), first_step, total_steps,
            cfg.train.prefetch_batches, codes=codes,
        ),
        first_step=first_step, last_step=total_steps,
        global_batch_size=cfg.optim.batch_size, checkpoints=checkpoints,
        writer=reporting.MetricsWriter(workdir),
        log_every_steps=cfg.train.log_every_steps,
        learning_rate_fn=schedule,
        evaluate_every_steps=cfg.train.eval_every_steps, evaluate_fn=evaluate_fn,
    )


def save_stage_figures(config, model, params, mcqvae, mcqvae_params, dataset, split,
                       results: dict, figures_dir: Path, rng) -> None:
    """The paper's figures, the action confusion and, when recorded, the learning curve."""
    ct_evaluation.save_figures(
        model=model, params=params, mcqvae=mcqvae, mcqvae_params=mcqvae_params,
        dataset=dataset, split=split, rng=rng, figures_dir=figures_dir,
    )
    action_names = list(transitions.dataset_action_names(dataset))
    ct_evaluation.save_confusion_figure(results, action_names, figures_dir / "ct_confusion.png")
    if results.get("curve"):
        curves.save_learning_curve(
            results["curve"], ["action_accuracy", "factor_accuracy"],
            figures_dir / "ct_learning_curve.png",
            chance={"action_accuracy": results["action_chance"],
                    "factor_accuracy": results["factor_chance"]},
            title=f"CT-VAE stage 2 on {config.data.name}: test transitions",
        )


def curve_evaluator(config, model, dataset, sampler, encode, mcqvae_params, codes, mesh,
                    workdir: Path, rng):
    """fn(state, step) that scores action retrieval on a fixed set of
    `num_curve_pairs` test transitions and appends the point to the stage's learning
    curve. The pairs' codes are taken once (cache or encoder); each point runs only
    the causal-mode forward pass, with a key that depends on the step alone, so a
    resumed run records the same curve."""
    cfg = config.ct.train
    pairs = sampler.fixed_set("test", cfg.num_curve_pairs)
    pair_codes = {}
    for name in ("x", "y"):
        index = pairs[f"{name}_index"]
        if codes is not None:
            pair_codes[name] = codes[index].astype(np.int32)
        else:
            pair_codes[name] = ct_retrieval.encode_images(
                encode, mcqvae_params, dataset, index, mesh, cfg.eval_batch_size)

    def evaluate(state, step: int) -> None:
        probs = ct_retrieval.action_probabilities(
            model, state.params, pair_codes["x"], pair_codes["y"], mesh,
            cfg.eval_batch_size, jax.random.fold_in(rng, step),
        )
        scores = ct_evaluation.action_retrieval_scores(probs, pairs["action"])
        point = {key: scores[key] for key in ("action_accuracy", "factor_accuracy")}
        reporting.append_curve_point(workdir, STAGE, step, point)
        logging.info("[%s] step %d: test action accuracy %.3f, factor accuracy %.3f "
                     "(%d pairs)", STAGE, step, point["action_accuracy"],
                     point["factor_accuracy"], cfg.num_curve_pairs)

    return evaluate


def stage_rngs(config: ml_collections.ConfigDict) -> tuple[jax.Array, jax.Array, jax.Array]:
    """(init, train, eval) keys of stage 2."""
    return tuple(jax.random.split(jax.random.key(config.seed + 1), 3))


def evaluate_on_test(config, model, params, mcqvae, mcqvae_params, encode, dataset, sampler,
                     mesh: Mesh) -> dict:
    """`ct_evaluation.evaluate` on the stage's fixed set of test transitions."""
    cfg = config.ct
    return ct_evaluation.evaluate(
        model=model, params=params, mcqvae=mcqvae, mcqvae_params=mcqvae_params,
        encode=encode, dataset=dataset, pairs=sampler.fixed_set("test", cfg.train.num_eval_pairs),
        mesh=mesh, batch_size=cfg.train.eval_batch_size, rng=stage_rngs(config)[2],
    )


def _create_state(model: CausalTransition, init_rng, schedule) -> TrainState:
    param_rng, gumbel_rng = jax.random.split(init_rng)
    codes = jnp.zeros((1, model.num_nodes), jnp.int32)
    params = model.init(
        {"params": param_rng, "gumbel": gumbel_rng, "noise": gumbel_rng},
        codes, jnp.zeros((1,), jnp.int32),
    )["params"]
    return TrainState.create(apply_fn=model.apply, params=params, tx=optax.adam(schedule))


def load_trained(config: ml_collections.ConfigDict, workdir: Path, mesh: Mesh, dataset):
    """The CT layer and its trained parameters from `workdir`'s latest checkpoint."""
    model = build_model(config, dataset)
    checkpoints = StageCheckpoints(workdir, STAGE, signature(config), 1, 1)
    if checkpoints.latest_step() is None:
        checkpoints.close()
        raise CheckpointError(
            f"no stage-2 (ct) checkpoint in {checkpoints.directory}: train the CT "
            f"layer first (config.stages includes 'ct')"
        )
    create_state = functools.partial(
        _create_state, model, jax.random.key(0), optax.constant_schedule(0.0)
    )
    return model, resume.restore_params(checkpoints, create_state, mesh)
