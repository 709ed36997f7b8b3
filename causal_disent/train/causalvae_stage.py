"""Stage `causalvae`: trains CausalVAE (or a baseline, `causalvae.model.variant`) on a
dataset with concept labels (Pendulum, Flow), then scores it on the test split.

Training: Adam (constant learning rate, the authors' 1e-3) on the published train
split, batches of images with their raw labels. The loss is the variant's
(objectives/causalvae_variants.py); for models with a learned A the DAG constraint
enters as the augmented Lagrangian λ·H(A) + (ρ/2)·H(A)², jointly with every other
term. λ and ρ live in the train state (so they are checkpointed) and follow the
NOTEARS / DAG-GNN outer update (`update_augmented_lagrangian`) every
`objective.lagrangian_update_every_steps` steps, the steps in between being the
inner solve.

How A starts, and which of its entries training may move, is
train/causalvae_graph.py's: by default the PC algorithm learns the graph from the
training labels (seconds, no images) and A starts at that DAG; the paper's
pre-training on l_u and a hand-set A are options.

The training images are rendered once and kept in memory when
`train.cache_images` (data/pipeline.CachedImages). Evaluation on the test split, its
results (WORKDIR/results.json, "causalvae") and its figure are
evaluation/causalvae_evaluation.py's; the checkpoint format, the train state and
loading a trained run are runs/causalvae.py's.
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
from causal_disent.data import pipeline, registry
from causal_disent.evaluation import causalvae_evaluation
from causal_disent.evaluation.metrics import mic
from causal_disent.objectives import causalvae as cv
from causal_disent.objectives.causalvae_variants import LOSSES, LabelScaling, LossWeights
from causal_disent.runs import causalvae as causalvae_run
from causal_disent.runs.causalvae import CausalVAEState
from causal_disent.runs.results import append_curve_point, read_curve
from causal_disent.train import image_stages, runner
from causal_disent.train.causalvae_graph import (
    GRAPH_LEARNING,
    check_hand_set_adjacency,
    initial_graph,
)
from causal_disent.train.state import train_step
from causal_disent.utils import console
from causal_disent.utils.sharding import check_batch_divisible

STAGE = causalvae_run.STAGE


def validate(config: ml_collections.ConfigDict, mesh: Mesh, workdir: Path) -> None:
    """Checks this stage's config (and that the dataset has matching labels) before
    anything compiles. Raises ValueError naming the field."""
    del workdir
    cfg = config.causalvae
    model, objective, optim, train = cfg.model, cfg.objective, cfg.optim, cfg.train
    dataset = registry.dataset_from_config(config.data)
    models.check_causalvae_config(model, dataset.image_shape)
    if getattr(dataset, "label_names", None) is None:
        raise ValueError(
            f"dataset {config.data.name!r} has no concept labels; CausalVAE needs a "
            f"labelled dataset such as 'pendulum' or 'flow', or one's own with concept "
            f"labels (docs/own_data.md)"
        )
    if len(dataset.label_names) != model.num_concepts:
        raise ValueError(
            f"causalvae.model.num_concepts = {model.num_concepts} but dataset "
            f"{config.data.name!r} has {len(dataset.label_names)} labels "
            f"{tuple(dataset.label_names)}: one concept per label "
            f"(--config.causalvae.model.num_concepts={len(dataset.label_names)})"
        )
    if optim.learning_rate <= 0:
        raise ValueError("causalvae.optim.learning_rate must be positive, got "
                         f"{optim.learning_rate!r}")
    if optim.max_grad_norm < 0:
        raise ValueError("causalvae.optim.max_grad_norm must be >= 0 (0 = no clipping), got "
                         f"{optim.max_grad_norm!r}")
    if train.num_steps <= 0 and train.num_epochs <= 0:
        raise ValueError("set causalvae.train.num_steps or causalvae.train.num_epochs > 0")
    if objective.lagrangian_update_every_steps < 1 or objective.penalty_growth <= 1:
        raise ValueError(
            "causalvae.objective needs lagrangian_update_every_steps >= 1 and "
            "penalty_growth > 1"
        )
    if objective.graph_learning == "label_loss" and objective.graph_pretrain_steps < 1:
        raise ValueError("causalvae.objective.graph_learning='label_loss' needs "
                         "graph_pretrain_steps >= 1")
    if objective.graph_pretrain_steps > 0 and (
        objective.graph_pretrain_update_every < 1 or objective.graph_pretrain_learning_rate <= 0
    ):
        raise ValueError(
            "causalvae.objective.graph_pretrain_steps > 0 needs graph_pretrain_update_every "
            ">= 1 and graph_pretrain_learning_rate > 0"
        )
    if len(objective.initial_adjacency):
        check_hand_set_adjacency(objective.initial_adjacency, model.num_concepts)
    if objective.graph_learning not in GRAPH_LEARNING:
        raise ValueError(
            f"causalvae.objective.graph_learning {objective.graph_learning!r} is unknown; "
            f"known: {', '.join(GRAPH_LEARNING)}"
        )
    if not 0 < objective.ci_alpha < 1 or min(objective.ci_neighbours, objective.ci_subsample,
                                             objective.ci_permutations) < 1:
        raise ValueError(
            "causalvae.objective needs 0 < ci_alpha < 1 and ci_neighbours, ci_subsample, "
            f"ci_permutations >= 1, got ci_alpha={objective.ci_alpha!r}, "
            f"ci_neighbours={objective.ci_neighbours!r}, ci_subsample={objective.ci_subsample!r}, "
            f"ci_permutations={objective.ci_permutations!r}"
        )
    if objective.learned_edge_init == 0:
        raise ValueError("causalvae.objective.learned_edge_init must be nonzero (an edge's "
                         "starting strength)")
    if train.num_counterfactual_images < 0:
        raise ValueError("causalvae.train.num_counterfactual_images must be >= 0 (0 = skip), "
                         f"got {train.num_counterfactual_images!r}")
    for directory in train.compare_workdirs:  # checked now, not after training
        causalvae_run.compared_config(Path(directory), config.data.name)
    if objective.label_prior_weight <= 0:
        raise ValueError("causalvae.objective.label_prior_weight must be positive, got "
                         f"{objective.label_prior_weight!r}")
    if train.graph_threshold < 0 or train.figure_values < 1:
        raise ValueError("causalvae.train needs graph_threshold >= 0 and figure_values >= 1, "
                         f"got graph_threshold={train.graph_threshold!r}, "
                         f"figure_values={train.figure_values!r}")
    check_batch_divisible(optim.batch_size, mesh, "causalvae.optim.batch_size")
    check_batch_divisible(train.eval_batch_size, mesh, "causalvae.train.eval_batch_size")


def loss_weights(objective: ml_collections.ConfigDict) -> LossWeights:
    return LossWeights(
        beta=objective.beta, gamma=objective.gamma,
        mask_prior_weight=objective.mask_prior_weight, dag_c=objective.dag_c,
        label_prior_weight=objective.label_prior_weight,
    )


def causalvae_train_step(state: CausalVAEState, batch: dict, rng: jax.Array, *, model,
                         loss_fn, objective: dict) -> tuple[CausalVAEState, dict]:
    """The generic train step with the state's λ, ρ bound into the loss, then (for
    models with a learned A) the augmented-Lagrangian outer update when it is due:
    after every `lagrangian_update_every_steps` optimiser steps, unless H(A) is
    already below `dag_tolerance`."""
    bound_loss = functools.partial(loss_fn, lagrangian=state.lagrangian)
    state, metrics = train_step(state, batch, rng, loss_fn=bound_loss)
    if not model.has_causal_layer:
        return state, metrics
    constraint = cv.dag_constraint(state.params["scm"]["adjacency"], objective["dag_c"])
    updated = cv.update_augmented_lagrangian(
        state.lagrangian, constraint,
        progress_rate=objective["progress_rate"],
        penalty_growth=objective["penalty_growth"],
        max_penalty=objective["max_penalty"],
    )
    due = (state.step % objective["lagrangian_update_every_steps"] == 0) & (
        constraint > objective["dag_tolerance"]
    )
    lagrangian = jax.tree.map(lambda new, old: jnp.where(due, new, old), updated,
                              state.lagrangian)
    metrics = {**metrics, "multiplier": lagrangian.multiplier, "penalty": lagrangian.penalty}
    return state.replace(lagrangian=lagrangian), metrics


def make_train_step(model, scaling: LabelScaling, objective: ml_collections.ConfigDict):
    """The unjitted (state, batch, rng) -> (state, metrics) of `model`'s variant."""
    loss_fn = functools.partial(
        LOSSES[model.variant], model=model, scaling=scaling, weights=loss_weights(objective)
    )
    schedule_fields = ("dag_c", "progress_rate", "penalty_growth", "max_penalty",
                       "lagrangian_update_every_steps", "dag_tolerance")
    return functools.partial(
        causalvae_train_step, model=model, loss_fn=loss_fn,
        objective={name: objective[name] for name in schedule_fields},
    )


def check_finite_labels(labels: np.ndarray, dataset_name: str) -> None:
    """ValueError naming the first non-finite training label."""
    if not np.isfinite(labels).all():
        example, concept = np.argwhere(~np.isfinite(labels))[0]
        raise ValueError(
            f"dataset {dataset_name!r}: training label {concept} of example {example} is "
            f"{labels[example, concept]}; CausalVAE needs finite labels: fix or drop "
            "those examples"
        )


def curve_evaluator(model, dataset, indices: np.ndarray, labels: np.ndarray, mesh: Mesh,
                    batch_size: int, workdir: Path):
    """fn(state, step) that scores the concepts (MIC / TIC with their labels) and the
    reconstructions (test BCE) of the fixed test images `indices` and appends the
    point to the stage's learning curve; the forward pass compiles once."""
    score = causalvae_evaluation.concept_scorer(model, mesh, batch_size)

    def point(state, step: int) -> None:
        scored = score(state.params, dataset, indices)
        concept_scores = mic.concept_mic_tic(scored["concept_codes"], labels)
        kept = {"mic": concept_scores["mic"], "tic": concept_scores["tic"],
                "test_bce": scored["test_bce"], "test_mse": scored["test_mse"]}
        append_curve_point(workdir, STAGE, step, kept)
        console.say(f"[{STAGE}] step {step}: MIC {kept['mic']:.1f}, TIC {kept['tic']:.1f}, "
                    f"test BCE {kept['test_bce']:.1f} ({len(indices)} images)")

    return point


def run(config: ml_collections.ConfigDict, workdir: Path, mesh: Mesh,
        mode: str = "train") -> dict:
    """Trains (or resumes), evaluates on the test split, writes the figure and
    results; returns the results dict. `mode`: runner.MODES."""
    cfg = config.causalvae
    dataset, split, batcher = image_stages.training_data(config, cfg.optim.batch_size)
    labels = dataset.labels(np.arange(dataset.num_images)).astype(np.float32)
    scaling = causalvae_run.label_scaling(config.data.name, labels[split["train"]])
    model = causalvae_run.build_model(config, dataset)
    total_steps = cfg.train.num_steps or cfg.train.num_epochs * batcher.steps_per_epoch
    init_rng, train_rng = jax.random.split(jax.random.key(config.seed))
    objective = cfg.objective
    check_finite_labels(labels[split["train"]], config.data.name)
    # Deterministic, so a resumed run recomputes it (PC's result is read back from
    # WORKDIR/graph_discovery.json) rather than checkpointing it.
    start_graph = initial_graph(
        objective, model, labels[split["train"]],
        np.asarray(scaling.unit_interval(labels[split["train"]])), workdir, config.seed,
    )

    curve_point = None
    if cfg.train.get("eval_every_steps", 0) > 0:
        curve_indices = split["test"][:cfg.train.num_curve_images]
        curve_point = curve_evaluator(model, dataset, curve_indices, labels[curve_indices],
                                      mesh, cfg.train.eval_batch_size, workdir)

    def plan(first_step: int) -> runner.Plan:
        on_devices = image_stages.image_device_data(
            STAGE, dataset, [batcher], first_step, total_steps, cfg.train,
            {"labels": lambda index: labels[index]})
        image_source = dataset
        if on_devices is None and cfg.train.cache_images and first_step < total_steps:
            logging.info("[%s] rendering %d training images once", STAGE, len(split["train"]))
            image_source = pipeline.CachedImages(dataset, split["train"])
        return runner.Plan(runner.Training(
            steps={"train": make_train_step(model, scaling, objective)},
            batches=pipeline.labelled_batches(
                image_source, labels, batcher, first_step, total_steps,
                jax.process_index(), jax.process_count(), cfg.train.prefetch_batches,
            ),
            rng=train_rng,
            device_data=on_devices,
        ), curve_point)

    def finish(state) -> dict:
        test_indices = causalvae_run.evaluation_indices(config, split)
        logging.info("[%s] evaluating on %d test images", STAGE, len(test_indices))
        results = causalvae_evaluation.evaluate(
            model=model, params=state.params, dataset=dataset, indices=test_indices,
            labels=labels[test_indices], mesh=mesh, batch_size=cfg.train.eval_batch_size,
            graph_threshold=cfg.train.graph_threshold, dag_c=objective.dag_c,
        )
        results.update(start_graph.report)
        if curve_point is not None:
            results["curve"] = read_curve(workdir, STAGE)
        if (jax.process_index() == 0 and hasattr(dataset, "counterfactual_images")
                and cfg.train.num_counterfactual_images):
            results["counterfactual"] = causalvae_evaluation.counterfactuals(
                config, dataset, test_indices, labels[test_indices], scaling,
                {"model": (model, jax.device_get(state.params)),
                 **causalvae_evaluation.compared_models(config, mesh, dataset)},
            )
        logging.info("[%s] MIC %.1f TIC %.1f SHD %s", STAGE, results["mic"], results["tic"],
                     results["shd"])
        return results

    def draw_figures(state, results: dict) -> None:
        causalvae_evaluation.save_intervention_figure(
            model, jax.device_get(state.params), dataset, split["test"][0], scaling,
            labels[split["train"]], results.get("learned_graph"), cfg.train.figure_values,
            workdir / "figures" / "causalvae_interventions.png",
        )

    return runner.run_stage(runner.Stage(
        name=STAGE, signature=causalvae_run.signature(config), train_config=cfg.train,
        create_state=functools.partial(
            causalvae_run.create_state, model, dataset.image_shape, init_rng,
            cfg.optim.learning_rate, objective.initial_penalty, start_graph.adjacency,
            start_graph.lagrangian, start_graph.support, cfg.optim.max_grad_norm,
        ),
        total_steps=total_steps, global_batch_size=cfg.optim.batch_size,
        plan=plan, finish=finish,  # constant learning rate: cfg.optim.learning_rate
        draw_figures=draw_figures,
    ), workdir, mesh, mode)
