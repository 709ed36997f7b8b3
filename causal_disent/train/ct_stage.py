"""Stage `ct`: trains the causal-transition layer on the frozen MCQ-VAE (stage 2).

Every step is one mode (standard, action or causal; CT-VAE paper §3.5), drawn from
`config.ct.objective.mode_proportions` by a seeded stream keyed on the step, and
every batch is a set of training-split transitions keyed on the step too, so a
resumed run repeats an uninterrupted one exactly. The frozen MCQ-VAE gives the
batch's codes outside the differentiated step (no gradient is ever computed for it
and its parameters are not in the optimiser), read from a code cache of the whole
dataset or encoded on the fly (`config.ct.train.code_source`; see ct_codes.py).
"""

import functools
from pathlib import Path

import jax
import jax.numpy as jnp
import ml_collections
import numpy as np
from absl import logging
from jax.sharding import Mesh

from causal_disent import models
from causal_disent.data import registry, splits, transitions
from causal_disent.data.pipeline import batch_stream
from causal_disent.evaluation import ct_evaluation, ct_retrieval, curves
from causal_disent.evaluation.ct_retrieval import make_encoder
from causal_disent.objectives import ct as ct_objectives
from causal_disent.runs import checkpoint_paths
from causal_disent.runs import ct as ct_run
from causal_disent.runs import mcqvae as mcqvae_run
from causal_disent.runs import stage_one_record
from causal_disent.runs.results import append_curve_point, read_curve
from causal_disent.train import ct_codes, device_data, runner
from causal_disent.train.state import SCHEDULES, stage_schedule, train_step
from causal_disent.utils import console
from causal_disent.utils.sharding import check_batch_divisible, process_slice

STAGE = ct_run.STAGE
MODE_NAMES = tuple(ct_objectives.MODES)  # ("standard", "action", "causal")


def validate(config: ml_collections.ConfigDict, mesh: Mesh, workdir: Path) -> None:
    objective = config.ct.objective
    models.check_ct_config(config.ct.model)
    ct_evaluation.check_eval_config(config.ct.eval)
    proportions = tuple(objective.mode_proportions)
    if len(proportions) != len(MODE_NAMES) or min(proportions) < 0 or sum(proportions) <= 0:
        raise ValueError(
            f"ct.objective.mode_proportions must be three non-negative weights for "
            f"{MODE_NAMES}; got {proportions}"
        )
    action_mix = objective.get("action_mix", "balanced")
    if action_mix not in transitions.ACTION_MIXES:
        raise ValueError(f"ct.objective.action_mix must be one of {transitions.ACTION_MIXES}, "
                         f"got {action_mix!r}")
    dataset_entry = registry.DATASETS.get(config.data.name)
    if action_mix != "balanced" and dataset_entry and not dataset_entry.factor_grid:
        raise ValueError(f"ct.objective.action_mix={action_mix!r} weighs the factors of a "
                         f"factor grid, and {config.data.name} has attributes: use "
                         f"--config.ct.objective.action_mix=balanced")
    dataset = registry.dataset_from_config(config.data)
    if action_mix != "balanced" and not transitions.moves_along_grid(dataset):
        raise ValueError(f"ct.objective.action_mix={action_mix!r} weighs the factors of a "
                         f"factor grid, and {config.data.name}'s pairs are listed: use "
                         f"--config.ct.objective.action_mix=balanced")
    if reason := transitions.grid_transitions_missing(dataset):
        raise ValueError(reason)
    if not 0.0 <= objective.get("structure_noise_final", 1.0) <= 1.0:
        raise ValueError(
            f"ct.objective.structure_noise_final must be in [0, 1] (1: the paper's "
            f"constant noise; 0: the most likely structure by the last step); got "
            f"{objective.structure_noise_final}")
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
        raise ValueError("ct.optim.final_learning_fraction must be in [0, 1], got "
                         f"{config.ct.optim.final_learning_fraction!r}")
    if train.code_source not in ct_codes.SOURCES:
        raise ValueError(
            f"ct.train.code_source must be one of {ct_codes.SOURCES}, got {train.code_source!r}"
        )
    if train.code_source != "encode":
        check_batch_divisible(train.code_cache_batch_size, mesh, "ct.train.code_cache_batch_size")
    # Stage 1 must exist already unless this run trains it first.
    if "mcqvae" not in config.stages or config.ct.mcqvae_workdir:
        mcqvae_run.check_trained(config, ct_run.mcqvae_workdir(config, workdir))
    if transitions.moves_along_grid(dataset):  # attribute pairs: drawn from labels
        check_every_action_has_pairs(config, dataset)
    elif transitions.pair_list_of(dataset) is not None:
        check_listed_pairs_in_splits(config, dataset)


def check_listed_pairs_in_splits(config: ml_collections.ConfigDict, dataset) -> None:
    """ValueError when the train or test split holds none of a dataset's listed pairs."""
    split = splits.configured_split(dataset, config.data)
    sampler = transitions.sampler_for(dataset, split, config.seed)
    for split_name in ("train", "test"):
        if sampler.pair_counts(split_name).sum() == 0:
            raise ValueError(
                f"none of {config.data.name}'s {len(dataset.transition_pairs.action)} listed "
                f"pairs falls in its {split_name} split (a pair without a `split` belongs "
                f"to the split that holds both its images): give the pairs a split column, "
                f"or more pairs")


def check_every_action_has_pairs(config: ml_collections.ConfigDict, dataset) -> None:
    """ValueError when an action relates no two images of the train or test split (a
    dataset whose split is not a full factor grid, e.g. Pendulum's published one, or
    a split too small): found before stage 1 trains, not after."""
    split = splits.configured_split(dataset, config.data)
    sampler = transitions.TransitionSampler(dataset, split, config.seed)
    names = transitions.dataset_action_names(dataset)
    for split_name in ("train", "test"):
        counts = sampler.pair_counts(split_name)
        if len(split[split_name]) and counts.min() == 0:  # empty: split_sizes says so
            missing = [names[action] for action in np.flatnonzero(counts == 0)]
            raise ValueError(
                f"for {len(missing)} of its {len(names)} actions ({', '.join(missing[:4])}"
                f"{', ...' if len(missing) > 4 else ''}) no two images of "
                f"{config.data.name}'s {split_name} split are one step apart: CT-VAE "
                f"learns transitions along a factor grid; choose a dataset whose splits "
                f"hold one (shapes3d_synth, dsprites_synth, the real factor grids) or give "
                f"the {split_name} split a larger fraction")


def ct_train_step(state, batch: dict, rng, *, loss_fn, total_steps: int, noise_final: float):
    """`train_step`, with the step's structure-noise scale in the batch when the
    config anneals it (`objective.structure_noise_final` < 1); at 1 the batch and the
    compiled step are the paper's."""
    if noise_final < 1.0:
        scale = ct_objectives.structure_noise_scale(state.step, total_steps, noise_final)
        batch = {**batch, ct_objectives.STRUCTURE_NOISE: scale}
    return train_step(state, batch, rng, loss_fn=loss_fn)


def mode_of_step(seed: int, step: int, proportions) -> str:
    """The mode of a training step: a pure function of (seed, step)."""
    probabilities = np.asarray(proportions, np.float64) / np.sum(proportions)
    rng = np.random.default_rng([seed, 0x4D0DE, step])  # a stream of its own
    return MODE_NAMES[rng.choice(len(MODE_NAMES), p=probabilities)]


def transition_batches(dataset, sampler, split_name, batch_size, first_step, last_step,
                       prefetch, codes=None):
    """Host batches of this host's slice: {x_codes, y_codes: [b, N] int32} read from
    `codes` (the code cache) when given, else {x, y: uint8 images} to encode; plus
    action [b]."""
    local = process_slice(batch_size)

    def render(step):
        pairs = sampler.batch(split_name, step, batch_size)
        x_index, y_index = pairs["x_index"][local], pairs["y_index"][local]
        if codes is None:
            batch = {"x": dataset.images(x_index), "y": dataset.images(y_index)}
        else:
            batch = {"x_codes": codes[x_index].astype(np.int32),
                     "y_codes": codes[y_index].astype(np.int32)}
        return {**batch, "action": pairs["action"][local]}

    return batch_stream(render, first_step, last_step, prefetch)


def code_device_data(codes: np.ndarray, sampler, batch_size: int, first_step: int,
                     last_step: int, prefetch: int) -> device_data.DeviceData:
    """The code cache as a device table; each step's batch sends the pairs' image
    indices and actions, and the step gathers their codes (as transition_batches
    reads them from the cache on the host)."""
    local = process_slice(batch_size)

    def batch(step):
        pairs = sampler.batch("train", step, batch_size)
        return {name: pairs[name][local] for name in ("x_index", "y_index", "action")}

    def gather(table: dict, batch: dict) -> dict:
        return {"x_codes": table["codes"][batch["x_index"]].astype(jnp.int32),
                "y_codes": table["codes"][batch["y_index"]].astype(jnp.int32),
                "action": batch["action"]}

    return device_data.DeviceData(table={"codes": codes},
                                  batches=batch_stream(batch, first_step, last_step, prefetch),
                                  gather=gather)


def run(config: ml_collections.ConfigDict, workdir: Path, mesh: Mesh,
        mode: str = "train") -> dict:
    """Trains (or resumes) stage 2, evaluates on the test split, writes figures and
    results; returns the results dict. `mode`: runner.MODES."""
    cfg = config.ct
    dataset = registry.dataset_from_config(config.data)
    split = splits.configured_split(dataset, config.data)
    sampler = transitions.sampler_for(dataset, split, seed=config.seed,
                                      action_mix=cfg.objective.get("action_mix", "balanced"))
    stage1_workdir = ct_run.mcqvae_workdir(config, workdir)
    mcqvae, mcqvae_params = mcqvae_run.load_trained(config, stage1_workdir, mesh, dataset)
    if mode == "train" and checkpoint_paths.latest_saved_step(workdir, STAGE) is None:
        stage_one_record.record(workdir, stage1_workdir, mcqvae_params)  # starting afresh
    else:
        stage_one_record.check(workdir, stage1_workdir, mcqvae_params)
    encode = make_encoder(mcqvae, mesh)
    model = ct_run.build_model(config, dataset)

    steps_per_epoch = max(1, len(split["train"]) // cfg.optim.batch_size)
    total_steps = cfg.train.num_steps or cfg.train.num_epochs * steps_per_epoch
    schedule = stage_schedule(cfg.optim, steps_per_epoch, total_steps)
    init_rng, train_rng, eval_rng = ct_run.stage_rngs(config)
    proportions = tuple(cfg.objective.mode_proportions)

    def plan(first_step: int) -> runner.Plan:
        codes = None
        if first_step < total_steps:
            codes = ct_codes.training_codes(config, dataset, mcqvae, mcqvae_params, encode,
                                            mesh, workdir, total_steps, stage1_workdir)
        curve_point = None
        if cfg.train.eval_every_steps > 0:
            curve_point = curve_evaluator(config, model, dataset, sampler, encode,
                                          mcqvae_params, codes, mesh, workdir, eval_rng)
        if codes is None and cfg.train.get("steps_per_call", 1) > 1:
            raise ValueError(
                "ct.train.steps_per_call > 1 needs the code cache, but this run encodes "
                "each batch's images: set --config.ct.train.code_source=cache, or "
                "--config.ct.train.steps_per_call=1")
        on_devices = codes is not None and device_data.wanted(STAGE, cfg.train, codes.nbytes)
        noise_final = cfg.objective.get("structure_noise_final", 1.0)
        training = runner.Training(
            steps={mode: functools.partial(
                       ct_train_step, total_steps=total_steps, noise_final=noise_final,
                       loss_fn=functools.partial(
                           loss, model=model, weights=cfg.objective.weights))
                   for mode, loss in ct_objectives.MODES.items()},
            batches=transition_batches(dataset, sampler, "train", cfg.optim.batch_size,
                                       first_step, total_steps, cfg.train.prefetch_batches,
                                       codes=codes),
            rng=train_rng,
            mode_of_step=functools.partial(mode_of_step, config.seed, proportions=proportions),
            prepare_batch=None if on_devices else functools.partial(
                ct_codes.batch_codes, encode=encode, mcqvae_params=mcqvae_params),
            device_data=code_device_data(codes, sampler, cfg.optim.batch_size, first_step,
                                         total_steps, cfg.train.prefetch_batches)
            if on_devices else None,
            several_steps_per_call=codes is not None,  # the encode path: one a call
        )
        return runner.Plan(training, curve_point)

    def finish(state) -> dict:
        results = ct_evaluation.evaluate_test_pairs(
            model=model, params=state.params, mcqvae=mcqvae, mcqvae_params=mcqvae_params,
            encode=encode, dataset=dataset, sampler=sampler, mesh=mesh,
            batch_size=cfg.train.eval_batch_size, rng=eval_rng, **cfg.eval)
        # What the per-action lists and the confusions' rows and columns are.
        action_names = transitions.dataset_action_names(dataset)
        results["action_names"] = action_names
        results["factor_names"] = [name[:-1] for name in action_names[:len(action_names) // 2]]
        if cfg.train.eval_every_steps > 0:
            results["curve"] = read_curve(workdir, STAGE)
        logging.info("[%s] results: %s", STAGE, {
            k: v for k, v in results.items()
            if k not in ("confusion", "action_confusion", "curve")})
        return results

    def draw_figures(state, results: dict) -> None:
        save_stage_figures(config, model, state.params, mcqvae, mcqvae_params, dataset,
                           split, results, workdir / "figures", eval_rng)

    return runner.run_stage(runner.Stage(
        name=STAGE, signature=ct_run.signature(config), train_config=cfg.train,
        create_state=functools.partial(ct_run.create_state, model, init_rng, schedule),
        total_steps=total_steps, global_batch_size=cfg.optim.batch_size,
        plan=plan, finish=finish, learning_rate_fn=schedule, draw_figures=draw_figures,
        batch_unit="pairs",
    ), workdir, mesh, mode)


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
        keys = ["action_accuracy", "factor_accuracy"]
        title = f"CT-VAE stage 2 on {config.data.name}: test transitions"
        if "action_accuracy_draws_mean" in results["curve"][-1]:
            keys += [f"{key}_draws_mean" for key in keys]
            title += (f"\n{results.get('headline', 'headline').replace('_', ' ')} "
                      "structure; *_draws_mean: mean over Gumbel draws")
        curves.save_learning_curve(
            results["curve"], keys, figures_dir / "ct_learning_curve.png",
            chance={"action_accuracy": results["action_chance"],
                    "factor_accuracy": results["factor_chance"]},
            title=title, ylabel="accuracy",
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

    headline, num_draws = config.ct.eval.headline, config.ct.eval.num_draws
    action_names = transitions.dataset_action_names(dataset)

    def evaluate(state, step: int) -> None:
        scores = ct_evaluation.retrieval_scores(
            model, state.params, pair_codes["x"], pair_codes["y"], pairs["action"], mesh,
            cfg.eval_batch_size, jax.random.fold_in(rng, step), headline=headline,
            num_draws=num_draws)
        point = curve_point(scores, action_names)
        append_curve_point(workdir, STAGE, step, point)
        console.say(f"[{STAGE}] step {step}: test {accuracy_text(scores)} "
                    f"({cfg.num_curve_pairs} pairs)")

    return evaluate


def curve_point(scores: dict, action_names) -> dict:
    """A learning-curve point from `ct_evaluation.retrieval_scores`: the headline's
    action and factor accuracy and, when drawn, the draws' mean and std; and per
    action its structure's densities, "mask_density/<action>" and
    "edge_density/<action>" (the headline's structure; "..._draws_mean/<action>"
    over the draws), scalars that TensorBoard plots one curve each."""
    point = {key: scores[key] for key in ("action_accuracy", "factor_accuracy")}
    for key, summary in _draw_summaries(scores):
        point[f"{key}_draws_mean"] = summary["mean"]
        point[f"{key}_draws_std"] = summary["std"]
    kinds = [("", scores["densities"])]
    if "draws" in scores:
        kinds.append(("_draws_mean", scores["draws"]["densities"]))
    for suffix, densities in kinds:
        for name, values in densities.items():
            point.update({f"{name}{suffix}/{action}": value
                          for action, value in zip(action_names, values)})
    return point


def accuracy_text(scores: dict) -> str:
    """'action accuracy 0.812, factor accuracy 0.901 (most likely structure; 8 draws:
    0.800 ± 0.010, 0.890 ± 0.008)' from `retrieval_scores` or a stage's results."""
    text = (f"action accuracy {scores['action_accuracy']:.3f}, factor accuracy "
            f"{scores['factor_accuracy']:.3f} ({scores['headline'].replace('_', ' ')} structure")
    draws = _draw_summaries(scores)
    if draws:
        text += f"; {scores['draws']['num_draws']} draws: " + ", ".join(
            f"{summary['mean']:.3f} ± {summary['std']:.3f}" for _, summary in draws)
    return text + ")"


def _draw_summaries(scores: dict) -> list[tuple[str, dict]]:
    draws = scores.get("draws") or {}
    return [(key, draws[key]) for key in ("action_accuracy", "factor_accuracy") if key in draws]
