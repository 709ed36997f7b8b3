"""CausalVAE on the test split (the `causalvae` stage's evaluation, also what
`causal_disent.evaluate` reports for a finished run):

- MIC / TIC (×100) between each concept's code (the mean over its k dims of z, the
  causal layer's output, which the label prior ties to the label; ε for
  ConditionVAE) and its label (Yang et al., "CausalVAE", CVPR 2021, §5);
- the learned A, its thresholded graph, the SHD to `dataset.causal_graph` and
  whether it lies in the true graph's Markov equivalence class;
- the Bernoulli NLL and MSE of the reconstructions;
- for datasets the library draws, the interventions scored against the simulator's
  true counterfactuals (evaluation/counterfactual_scores.py), for this run and the
  runs of `causalvae.train.compare_workdirs`;
- the figure of interventions (per concept, the model's row of swept values and the
  true counterfactuals' row under it).
"""

import functools
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import ml_collections
import numpy as np
import optax
from absl import logging
from jax.sharding import Mesh

from causal_disent import causalvae_interventions
from causal_disent.discovery import graphs as discovery_graphs
from causal_disent.evaluation.counterfactual_scores import (
    counterfactual_pairs,
    score_counterfactuals,
)
from causal_disent.evaluation.metrics import graphs, mic
from causal_disent.objectives import causalvae as cv
from causal_disent.objectives.causalvae_variants import LabelScaling
from causal_disent.runs import causalvae as causalvae_run
from causal_disent.utils.figures import image_grid, save_png
from causal_disent.utils.images import images_to_unit_range
from causal_disent.utils.sharding import batch_sharded, padded_global_batches, replicated


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
    batches = padded_global_batches(len(indices), batch_size, mesh,
                                    lambda index: {"image": dataset.images(indices[index])})
    for _, batch, keep in batches:
        out = jax.device_get(per_image(params, batch["image"]))
        chunks.append(jax.tree.map(lambda x, n=keep: x[:n], out))
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
            is_acyclic=discovery_graphs.is_acyclic(adjacency, graph_threshold),
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
    logging.info("[causalvae] scoring interventions of %s against the simulator on %d "
                 "images", ", ".join(models), len(chosen))
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
        other = causalvae_run.compared_config(directory, config.data.name)
        model, params = causalvae_run.load_trained(other, directory, mesh, dataset)
        name = other.causalvae.model.variant
        if model.has_mask_layer or model.decoder != "per_concept":
            name = f"{name}_{model.decoder}"
        if name in models:  # e.g. two seeds of one setting
            name = f"{name}@{directory.name}"
        models[name] = (model, jax.device_get(params))
    return models


def graph_report(learned_graph: np.ndarray, true_graph: np.ndarray) -> dict:
    """Whether the learned DAG lies in the true graph's Markov equivalence class."""
    learned = (np.asarray(learned_graph) != 0).astype(np.int64)
    true = (np.asarray(true_graph) != 0).astype(np.int64)
    acyclic = discovery_graphs.is_acyclic(learned.astype(float), 0.0)
    return {"in_true_equivalence_class":
            bool(acyclic and discovery_graphs.same_equivalence_class(learned, true))}
