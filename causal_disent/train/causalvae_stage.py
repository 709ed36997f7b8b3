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

Evaluation on the test split: MIC / TIC (×100) between each concept's code (the
mean over its k dims of z, the causal layer's output, which the label prior ties to
the label; ε for ConditionVAE) and its label; the learned A, its thresholded graph
and the SHD to `dataset.causal_graph`, and whether it lies in the true graph's
Markov equivalence class; Bernoulli NLL and MSE of the reconstructions; for
datasets the library draws, the interventions scored against the simulator's true
counterfactuals ("counterfactual", evaluation/counterfactual_scores.py). Written to
WORKDIR/results.json under "causalvae", with the figure
figures/causalvae_interventions.png (per concept, the model's row of swept values
and the true counterfactuals' row under it).
"""

import functools
import json
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import ml_collections
import numpy as np
import optax
from absl import logging
from jax.sharding import Mesh

from causal_disent import causalvae_interventions, models
from causal_disent.data import pipeline, registry, splits
from causal_disent.data import pendulum as pendulum_data
from causal_disent.evaluation import graphs, mic
from causal_disent.evaluation.figures import image_grid, save_png
from causal_disent.models.causalvae import VARIANTS
from causal_disent.objectives import causalvae as cv
from causal_disent.objectives.causalvae_variants import LOSSES, LabelScaling, LossWeights
from causal_disent.objectives.mcqvae import images_to_unit_range
from causal_disent.evaluation.counterfactual_scores import (
    counterfactual_pairs,
    score_counterfactuals,
)
from causal_disent.models.causalvae import DECODERS
from causal_disent.train import reporting, resume
from causal_disent.train.causalvae_graph import (
    GRAPH_LEARNING,
    adjacency_gradient_mask,
    check_hand_set_adjacency,
    graph_report,
    initial_graph,
)
from causal_disent.train.checkpoint import CheckpointError, StageCheckpoints
from causal_disent.train.loop import fit
from causal_disent.train.sharding import (
    batch_sharded,
    check_batch_divisible,
    global_batch,
    process_slice,
    replicated,
)
from causal_disent.train.state import TrainState, train_step

STAGE = "causalvae"

# The authors' (mean, scale) of the label prior, by dataset; others use the training
# split's per-label mean and standard deviation.
AUTHORS_LABEL_SCALE = {"pendulum": pendulum_data.LABEL_SCALE}


class CausalVAEState(TrainState):
    """TrainState plus the augmented-Lagrangian state of the DAG constraint."""

    lagrangian: cv.AugmentedLagrangian


def signature(config: ml_collections.ConfigDict) -> dict:
    """What a checkpoint of this stage depends on: the data and the architecture."""
    return {"data": config.data.name, "model": config.causalvae.model.to_dict()}


def validate(config: ml_collections.ConfigDict, mesh: Mesh, workdir: Path) -> None:
    """Checks this stage's config (and that the dataset has matching labels) before
    anything compiles. Raises ValueError naming the field."""
    del workdir
    cfg = config.causalvae
    model, objective, optim, train = cfg.model, cfg.objective, cfg.optim, cfg.train
    if model.variant not in VARIANTS:
        raise ValueError(
            f"causalvae.model.variant {model.variant!r} is unknown; known: {', '.join(VARIANTS)}"
        )
    for name in ("num_concepts", "concept_dim", "encoder_hidden", "decoder_hidden",
                 "mechanism_hidden"):
        if model[name] < 1:
            raise ValueError(f"causalvae.model.{name} must be positive, got {model[name]}")
    dataset = registry.dataset_from_config(config.data)
    if getattr(dataset, "label_names", None) is None:
        raise ValueError(
            f"dataset {config.data.name!r} has no concept labels; CausalVAE needs a "
            f"labelled dataset such as 'pendulum' or 'flow'"
        )
    if len(dataset.label_names) != model.num_concepts:
        raise ValueError(
            f"causalvae.model.num_concepts = {model.num_concepts} but dataset "
            f"{config.data.name!r} has {len(dataset.label_names)} labels "
            f"{tuple(dataset.label_names)}: one concept per label"
        )
    height, width, _ = dataset.image_shape
    for name in ("encoder_widths", "decoder_widths"):
        widths = tuple(model[name])
        if not widths:
            raise ValueError(f"causalvae.model.{name} must name at least one width")
        if height % 2 ** len(widths) or width % 2 ** len(widths):
            raise ValueError(
                f"causalvae.model.{name} has {len(widths)} stride-2 layers but the "
                f"{height}x{width} images are not divisible by 2^{len(widths)}"
            )
    if optim.learning_rate <= 0:
        raise ValueError("causalvae.optim.learning_rate must be positive")
    if optim.max_grad_norm < 0:
        raise ValueError("causalvae.optim.max_grad_norm must be >= 0 (0 = no clipping)")
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
    if model.decoder not in DECODERS:
        raise ValueError(
            f"causalvae.model.decoder {model.decoder!r} is unknown; known: {', '.join(DECODERS)}"
        )
    if objective.graph_learning not in GRAPH_LEARNING:
        raise ValueError(
            f"causalvae.objective.graph_learning {objective.graph_learning!r} is unknown; "
            f"known: {', '.join(GRAPH_LEARNING)}"
        )
    if not 0 < objective.ci_alpha < 1 or min(objective.ci_neighbours, objective.ci_subsample,
                                             objective.ci_permutations) < 1:
        raise ValueError(
            "causalvae.objective needs 0 < ci_alpha < 1 and ci_neighbours, ci_subsample, "
            "ci_permutations >= 1"
        )
    if objective.learned_edge_init == 0:
        raise ValueError("causalvae.objective.learned_edge_init must be nonzero (an edge's "
                         "starting strength)")
    if train.num_counterfactual_images < 0:
        raise ValueError("causalvae.train.num_counterfactual_images must be >= 0 (0 = skip)")
    for directory in train.compare_workdirs:  # checked now, not after training
        compared_config(Path(directory), config.data.name)
    if objective.label_prior_weight <= 0:
        raise ValueError("causalvae.objective.label_prior_weight must be positive")
    if train.graph_threshold < 0 or train.figure_values < 1:
        raise ValueError("causalvae.train needs graph_threshold >= 0 and figure_values >= 1")
    check_batch_divisible(optim.batch_size, mesh, "causalvae.optim.batch_size")
    check_batch_divisible(train.eval_batch_size, mesh, "causalvae.train.eval_batch_size")


def label_scaling(dataset_name: str, train_labels: np.ndarray) -> LabelScaling:
    """The label prior's (mean, scale) and l_u's range, from the training labels
    [n_train, n] (and the authors' constants where known)."""
    low, high = train_labels.min(axis=0), train_labels.max(axis=0)
    if dataset_name in AUTHORS_LABEL_SCALE:
        table = np.asarray(AUTHORS_LABEL_SCALE[dataset_name], np.float32)
        offset, scale = table[:, 0], table[:, 1]
    else:
        offset, scale = train_labels.mean(axis=0), train_labels.std(axis=0)
    return LabelScaling(
        prior_offset=np.asarray(offset, np.float32),
        prior_scale=np.maximum(np.asarray(scale, np.float32), 1e-6),
        low=np.asarray(low, np.float32),
        high=np.asarray(np.maximum(high, low + 1e-6), np.float32),
    )


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


def create_state(model, image_shape, init_rng, learning_rate: float,
                 initial_penalty: float, initial_adjacency=None,
                 initial_lagrangian: cv.AugmentedLagrangian | None = None,
                 adjacency_support=None, max_grad_norm: float = 0.0) -> CausalVAEState:
    """A fresh state; A (when the model has one) and the Lagrangian state start from
    `initial_adjacency` / `initial_lagrangian` when given (the pre-training's); A's
    updates are zeroed outside `adjacency_support` when given; gradients are clipped
    to a global norm of `max_grad_norm` when it is > 0."""
    sample = jnp.zeros((1, *image_shape), jnp.float32)
    params = model.init(init_rng, sample)["params"]
    if initial_adjacency is not None and model.has_causal_layer:
        params = {**params, "scm": {**params["scm"],
                                    "adjacency": jnp.asarray(initial_adjacency, jnp.float32)}}
    if initial_lagrangian is None:
        initial_lagrangian = cv.AugmentedLagrangian.create(penalty=initial_penalty)
    # Every link is always present (identity when unused), so the optimiser state has
    # one structure whatever the settings and any checkpoint restores.
    clip = optax.clip_by_global_norm(max_grad_norm) if max_grad_norm > 0 else optax.identity()
    tx = optax.chain(adjacency_gradient_mask(adjacency_support), clip,
                     optax.adam(learning_rate))
    return CausalVAEState.create(
        apply_fn=model.apply, params=params, tx=tx, lagrangian=initial_lagrangian,
    )


class CachedImages:
    """The images of some flat indices rendered once and kept in memory (uint8)."""

    def __init__(self, dataset, indices: np.ndarray, chunk: int = 512):
        indices = np.asarray(indices, np.int64)
        self._row = np.full(dataset.num_images, -1, np.int64)
        self._row[indices] = np.arange(len(indices))
        self._images = np.concatenate(
            [dataset.images(indices[s : s + chunk]) for s in range(0, len(indices), chunk)]
        )

    def images(self, index: np.ndarray) -> np.ndarray:
        rows = self._row[np.asarray(index)]
        if (rows < 0).any():
            raise ValueError("index outside the cached images")
        return self._images[rows]


def labelled_batches(image_source, labels: np.ndarray, batcher, first_step: int,
                     last_step: int, prefetch: int):
    """Yields {"image": uint8 [b, H, W, ch], "labels": float32 [b, n]} (this host's
    share) for steps [first_step, last_step)."""

    def batch(step: int) -> dict[str, np.ndarray]:
        index = batcher.local_batch_indices(step, jax.process_index(), jax.process_count())
        return {"image": image_source.images(index), "labels": labels[index]}

    batches = map(batch, range(first_step, last_step))
    if prefetch <= 0:
        yield from batches
    else:
        yield from pipeline.prefetched(batches, prefetch)


def run(config: ml_collections.ConfigDict, workdir: Path, mesh: Mesh) -> dict:
    """Trains (or resumes), evaluates on the test split, writes the figure and
    results; returns the results dict."""
    cfg = config.causalvae
    dataset = registry.dataset_from_config(config.data)
    split = splits.dataset_split(dataset, config.data.split_fractions, config.data.split_seed)
    labels = dataset.labels(np.arange(dataset.num_images)).astype(np.float32)
    scaling = label_scaling(config.data.name, labels[split["train"]])
    model = models.build_causalvae(cfg.model, dataset.image_shape)
    batcher = pipeline.EpochShuffledBatches(split["train"], cfg.optim.batch_size, seed=config.seed)
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
    make_state = functools.partial(
        create_state, model, dataset.image_shape, init_rng, cfg.optim.learning_rate,
        objective.initial_penalty, start_graph.adjacency, start_graph.lagrangian,
        start_graph.support, cfg.optim.max_grad_norm,
    )
    checkpoints, state, first_step, finished = resume.open_stage(
        stage=STAGE, workdir=workdir, signature=signature(config), train_config=cfg.train,
        create_state=make_state, mesh=mesh, total_steps=total_steps,
    )
    if finished is not None:
        return finished

    if first_step < total_steps:
        image_source = dataset
        if cfg.train.cache_images:
            logging.info("[%s] rendering %d training images once", STAGE, len(split["train"]))
            image_source = CachedImages(dataset, split["train"])
        jitted_step = jax.jit(
            make_train_step(model, scaling, cfg.objective),
            in_shardings=(replicated(mesh), batch_sharded(mesh), replicated(mesh)),
            out_shardings=(replicated(mesh), replicated(mesh)),
            donate_argnums=0,
        )
        state = fit(
            stage=STAGE, state=state,
            step_fn=lambda state, batch: jitted_step(state, global_batch(batch, mesh), train_rng),
            local_batches=labelled_batches(
                image_source, labels, batcher, first_step, total_steps,
                cfg.train.prefetch_batches,
            ),
            first_step=first_step, last_step=total_steps,
            global_batch_size=cfg.optim.batch_size, checkpoints=checkpoints,
            writer=reporting.MetricsWriter(workdir),
            log_every_steps=cfg.train.log_every_steps,
            learning_rate_fn=None,  # constant: cfg.optim.learning_rate
        )
    checkpoints.close()

    test_indices = evaluation_indices(config, split)
    logging.info("[%s] evaluating on %d test images", STAGE, len(test_indices))
    params = state.params
    results = evaluate(
        model=model, params=params, dataset=dataset, indices=test_indices,
        labels=labels[test_indices], mesh=mesh, batch_size=cfg.train.eval_batch_size,
        graph_threshold=cfg.train.graph_threshold, dag_c=cfg.objective.dag_c,
    )
    results["steps"] = int(jax.device_get(state.step))
    results.update(start_graph.report)
    if jax.process_index() == 0:
        host_params = jax.device_get(params)
        if hasattr(dataset, "counterfactual_images") and cfg.train.num_counterfactual_images:
            results["counterfactual"] = counterfactuals(
                config, dataset, test_indices, labels[test_indices], scaling,
                {"model": (model, host_params), **compared_models(config, mesh, dataset)},
            )
        save_intervention_figure(
            model, host_params, dataset, split["test"][0], scaling,
            labels[split["train"]], results.get("learned_graph"), cfg.train.figure_values,
            workdir / "figures" / "causalvae_interventions.png",
        )
    reporting.update_results(workdir, STAGE, results)
    logging.info("[%s] MIC %.1f TIC %.1f SHD %s", STAGE, results["mic"], results["tic"],
                 results["shd"])
    return results


def concept_codes_and_errors(model, params, dataset, indices: np.ndarray, mesh: Mesh,
                             batch_size: int) -> dict[str, Any]:
    """Runs `model` on dataset images `indices` in padded batches sharded over `mesh`.

    Returns concept_codes [N, n] (each concept's z averaged over its k dims),
    test_bce (Bernoulli NLL per image, summed over pixels and channels) and test_mse
    (of the sigmoid reconstructions, per pixel).
    """

    @functools.partial(
        jax.jit,
        in_shardings=(replicated(mesh), batch_sharded(mesh)),
        out_shardings=replicated(mesh),
    )
    def per_image(params, images):
        images = images_to_unit_range(images)
        outputs = model.apply({"params": params}, images)
        logits = outputs["reconstruction_logits"]
        bce = jnp.sum(optax.sigmoid_binary_cross_entropy(logits, images), axis=(1, 2, 3))
        mse = jnp.mean((jax.nn.sigmoid(logits) - images) ** 2, axis=(1, 2, 3))
        return {"codes": jnp.mean(outputs["z"], axis=-1), "bce": bce, "mse": mse}

    chunks = []
    for start in range(0, len(indices), batch_size):
        chunk = indices[start : start + batch_size]
        # Pad the last batch with its first image; padding is dropped below.
        padded = np.concatenate([chunk, np.full(batch_size - len(chunk), chunk[0])])
        local = {"image": dataset.images(padded[process_slice(batch_size)])}
        batch = global_batch(local, mesh)
        out = jax.device_get(per_image(params, batch["image"]))
        chunks.append(jax.tree.map(lambda x, n=len(chunk): x[:n], out))
    merged = jax.tree.map(lambda *xs: np.concatenate(xs), *chunks)
    return {
        "concept_codes": merged["codes"],
        "test_bce": float(merged["bce"].mean()),
        "test_mse": float(merged["mse"].mean()),
    }


def evaluate(*, model, params, dataset, indices, labels, mesh, batch_size,
             graph_threshold: float, dag_c: float) -> dict:
    """MIC/TIC, reconstruction errors and (with a learned A) the graph scores."""
    scored = concept_codes_and_errors(model, params, dataset, indices, mesh, batch_size)
    results = {
        "variant": model.variant,
        "num_images": int(len(indices)),
        "label_names": list(dataset.label_names),
        "concept_code": "z (causal layer output), mean over each concept's k dims",
        **mic.concept_mic_tic(scored["concept_codes"], labels),
        "test_bce": scored["test_bce"],
        "test_mse": scored["test_mse"],
        "true_graph": np.asarray(dataset.causal_graph).tolist(),
        "graph_threshold": graph_threshold,
        "shd": None,
        "learned_adjacency": None,
        "learned_graph": None,
    }
    if model.has_causal_layer:
        adjacency = np.asarray(jax.device_get(params["scm"]["adjacency"]), np.float64)
        learned = (np.abs(adjacency) > graph_threshold).astype(np.int64)
        np.fill_diagonal(learned, 0)
        results.update(
            learned_adjacency=adjacency.round(4).tolist(),
            learned_graph=learned.tolist(),
            shd=graphs.structural_hamming_distance(adjacency, dataset.causal_graph,
                                                   graph_threshold),
            is_acyclic=graphs.is_acyclic(adjacency, graph_threshold),
            dag_constraint=float(cv.dag_constraint(jnp.asarray(adjacency, jnp.float32), dag_c)),
            **graph_report(learned, dataset.causal_graph),
        )
    return results


def save_intervention_figure(model, params, dataset, index: int, scaling: LabelScaling,
                             train_labels: np.ndarray, learned_graph, num_values: int,
                             path: Path) -> None:
    """Two rows per concept: the model's do(z_c = v), then (for datasets the library
    draws) the simulator's true counterfactual do(c = v), each after the test image
    `index`. The `num_values` values v run from the 5th to the 95th percentile of the
    training labels (the extremes, combined with the other concepts' values, are far
    off the data and decode poorly). A concept with children in the learned graph is
    set at the mask layer's input and output (its descendants follow); one without,
    at the output only (its causes stay as they are)."""
    low, high = np.percentile(np.asarray(train_labels, np.float64), [5, 95], axis=0)
    raw_values = np.linspace(low, high, num_values).T  # [n, V] in label units
    codes = (raw_values - scaling.prior_offset[:, None]) / scaling.prior_scale[:, None]
    if learned_graph is None:
        has_children = np.zeros(model.num_concepts, bool)
    else:
        has_children = np.asarray(learned_graph).sum(axis=1) > 0
    image = dataset.images(np.array([index]))[0]
    grid = causalvae_interventions.intervention_sweep(model, params, image, codes, has_children)
    if hasattr(dataset, "counterfactual_images"):
        repeated = np.full(num_values, index)
        rows = []
        for concept in range(model.num_concepts):
            truth = dataset.counterfactual_images(repeated, concept, raw_values[concept])
            rows += [grid[concept], np.concatenate([image[None], truth])]
        grid = np.stack(rows)
    save_png(image_grid(grid), path, upscale=1)


def counterfactuals(config: ml_collections.ConfigDict, dataset, indices: np.ndarray,
                    labels: np.ndarray, scaling: LabelScaling, models: dict) -> dict:
    """`evaluation.counterfactual_scores` on `num_counterfactual_images` test images,
    for this run's model and the compared runs' (`compare_workdirs`)."""
    chosen, values = counterfactual_pairs(
        indices, labels, config.causalvae.train.num_counterfactual_images, config.seed
    )
    logging.info("[%s] scoring interventions of %s against the simulator on %d images",
                 STAGE, ", ".join(models), len(chosen))
    return score_counterfactuals(
        dataset, chosen, values, scaling.prior_offset, scaling.prior_scale, models,
        batch_size=config.causalvae.train.eval_batch_size,
    )


def compared_models(config: ml_collections.ConfigDict, mesh: Mesh, dataset) -> dict:
    """name -> (model, params) of the finished runs in `compare_workdirs`, named by
    their variant and decoder (e.g. "condition_vae", "causalvae_joint"; a repeated
    name gets "@<workdir name>")."""
    models = {}
    for directory in config.causalvae.train.compare_workdirs:
        directory = Path(directory)
        other = compared_config(directory, config.data.name)
        model, params = load_trained(other, directory, mesh, dataset)
        name = other.causalvae.model.variant
        if model.has_mask_layer or model.decoder != "per_concept":
            name = f"{name}_{model.decoder}"
        if name in models:  # e.g. two seeds of one setting
            name = f"{name}@{directory.name}"
        models[name] = (model, jax.device_get(params))
    return models


def compared_config(directory: Path, dataset_name: str) -> ml_collections.ConfigDict:
    """The config of a run in `compare_workdirs`; an error naming the fix unless it is
    a run on `dataset_name`."""
    config_path = directory / "config.json"
    if not config_path.exists():
        raise FileNotFoundError(
            f"{config_path} not found: causalvae.train.compare_workdirs must list the "
            "--workdir of finished CausalVAE runs"
        )
    other = ml_collections.ConfigDict(json.loads(config_path.read_text()))
    if other.data.name != dataset_name:
        raise ValueError(
            f"{directory} was trained on {other.data.name!r}, not {dataset_name!r}: "
            "compare runs on the same dataset"
        )
    return other


def check_finite_labels(labels: np.ndarray, dataset_name: str) -> None:
    """ValueError naming the first non-finite training label."""
    if not np.isfinite(labels).all():
        example, concept = np.argwhere(~np.isfinite(labels))[0]
        raise ValueError(
            f"dataset {dataset_name!r}: training label {concept} of example {example} is "
            f"{labels[example, concept]}; CausalVAE needs finite labels: fix or drop "
            "those examples"
        )


def evaluation_indices(config: ml_collections.ConfigDict, split: dict) -> np.ndarray:
    """The test images the stage scores: the first `num_eval_images` (0 = all)."""
    return split["test"][: config.causalvae.train.num_eval_images or None]


def load_trained(config: ml_collections.ConfigDict, workdir: Path, mesh: Mesh, dataset):
    """The model and its trained parameters (replicated over `mesh`) from `workdir`'s
    latest checkpoint; CheckpointError if there is none."""
    cfg = config.causalvae
    model = models.build_causalvae(cfg.model, dataset.image_shape)
    checkpoints = StageCheckpoints(workdir, STAGE, signature(config), 1, 1)
    if checkpoints.latest_step() is None:
        checkpoints.close()
        raise CheckpointError(
            f"no causalvae checkpoint in {checkpoints.directory}: train the run first"
        )
    make_state = functools.partial(
        create_state, model, dataset.image_shape, jax.random.key(0),
        cfg.optim.learning_rate, cfg.objective.initial_penalty,
    )
    return model, resume.restore_params(checkpoints, make_state, mesh)
