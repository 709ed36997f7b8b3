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

from causal_disent.discovery import graphs as discovery_graphs
from causal_disent.evaluation import causalvae_do
from causal_disent.evaluation.counterfactual_scores import (
    counterfactual_pairs,
    score_counterfactuals,
)
from causal_disent.evaluation.metrics import graphs, mic
from causal_disent.objectives import causalvae as cv
from causal_disent.objectives.causalvae_variants import LabelScaling
from causal_disent.runs import causalvae as causalvae_run
from causal_disent.utils import figures, host_memory
from causal_disent.utils.images import images_to_unit_range
from causal_disent.utils.sharding import batch_sharded, padded_global_batches, replicated


def concept_codes_and_errors(model, params, dataset, indices: np.ndarray, mesh: Mesh,
                             batch_size: int) -> dict[str, Any]:
    """`concept_scorer(model, mesh, batch_size)(params, dataset, indices)`."""
    return concept_scorer(model, mesh, batch_size)(params, dataset, indices)


# One scorer per model, mesh and batch size: the learning curve and the test scores
# share its compiled program (built per call, it compiled twice a run).
@functools.lru_cache(maxsize=8)
def concept_scorer(model, mesh: Mesh, batch_size: int):
    """fn(params, dataset, indices) -> scores, compiled once: runs `model` on dataset
    images `indices` in padded batches sharded over `mesh`.

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

    per_image = host_memory.compiled_ahead(per_image, "an evaluation batch",
                                           field="causalvae.train.eval_batch_size")

    def score(params, dataset, indices: np.ndarray) -> dict[str, Any]:
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

    return score


def evaluate(*, model, params, dataset, indices, labels, mesh, batch_size,
             graph_threshold: float, dag_c: float) -> dict:
    """MIC/TIC, reconstruction errors and (with a learned A) the graph scores."""
    scored = concept_codes_and_errors(model, params, dataset, indices, mesh, batch_size)
    true_graph = getattr(dataset, "causal_graph", None)
    results = {
        "variant": model.variant,
        "num_images": int(len(indices)),
        "label_names": list(dataset.label_names),
        "concept_code": "z (causal layer output), mean over each concept's k dims",
        **mic.concept_mic_tic(scored["concept_codes"], labels),
        "test_bce": scored["test_bce"],
        "test_mse": scored["test_mse"],
        # None for one's own data without a known graph: no SHD then.
        "true_graph": None if true_graph is None else np.asarray(true_graph).tolist(),
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
            is_acyclic=discovery_graphs.is_acyclic(adjacency, graph_threshold),
            dag_constraint=float(cv.dag_constraint(jnp.asarray(adjacency, jnp.float32), dag_c)),
        )
        if true_graph is not None:
            results.update(
                shd=graphs.structural_hamming_distance(adjacency, true_graph, graph_threshold),
                **graph_report(learned, true_graph))
    return results


def save_intervention_figure(model, params, dataset, index: int, scaling: LabelScaling,
                             train_labels: np.ndarray, learned_graph, num_values: int,
                             path: Path) -> None:
    """Writes a PNG of interventions on the test image `index`, two rows per concept:
    the model's do(z_c = v), then (for datasets the library draws) the simulator's
    true counterfactual do(c = v), each row starting with the input image. The
    `num_values` values v run evenly from the 5th to the 95th percentile of the
    training labels (the extremes, combined with the other concepts' values, are far
    off the data and decode poorly). A concept with children in the learned graph is
    set at the mask layer's input and output (its descendants follow); one without,
    at the output only (its causes stay as they are)."""
    raw_values = intervention_values(train_labels, num_values)  # [n, V] in label units
    codes = (raw_values - scaling.prior_offset[:, None]) / scaling.prior_scale[:, None]
    if learned_graph is None:
        has_children = np.zeros(model.num_concepts, bool)
    else:
        has_children = np.asarray(learned_graph).sum(axis=1) > 0
    grid = intervention_rows(model, params, dataset, index, raw_values, codes, has_children)
    with_truth = hasattr(dataset, "counterfactual_images")
    row_labels, captions = [], []
    factual = dataset.labels(np.array([index]))[0]
    for concept, name in enumerate(dataset.label_names):
        row_labels.append(f"{name}{'*' if has_children[concept] else ''}\nmodel")
        captions.append([f"factual {factual[concept]:.3g}"]
                        + [f"{value:.3g}" for value in raw_values[concept]])
        if with_truth:
            row_labels.append(f"{name}\nsimulator")
            captions.append([""] * (num_values + 1))
    figures.save_image_grid(
        grid, path, row_labels=row_labels, cell_labels=captions,
        column_labels=["input"] + [f"v{k + 1}" for k in range(num_values)],
        title=_intervention_title(dataset.name, index, num_values, with_truth,
                                  has_children.any()),
    )


def intervention_values(train_labels: np.ndarray, num_values: int) -> np.ndarray:
    """[n, V] values of each concept, evenly spaced from the 5th to the 95th
    percentile of `train_labels` [N, n], in label units."""
    low, high = np.percentile(np.asarray(train_labels, np.float64), [5, 95], axis=0)
    return np.linspace(low, high, num_values).T


def intervention_rows(model, params, dataset, index: int, raw_values: np.ndarray,
                      codes: np.ndarray, has_children: np.ndarray) -> np.ndarray:
    """Rows of the intervention figure, uint8 [R, V + 1, H, W, ch]: per concept c the
    model's row (the input image, then do(z_c = codes[c, v]) for each v), and for a
    dataset with `counterfactual_images` the simulator's row under it (the input
    image, then the true do(c = raw_values[c, v])); R = n or 2n."""
    image = dataset.images(np.array([index]))[0]
    grid = causalvae_do.intervention_sweep(model, params, image, codes, has_children)
    if not hasattr(dataset, "counterfactual_images"):
        return grid
    repeated = np.full(raw_values.shape[1], index)
    rows = []
    for concept in range(model.num_concepts):
        truth = dataset.counterfactual_images(repeated, concept, raw_values[concept])
        rows += [grid[concept], np.concatenate([image[None], truth])]
    return np.stack(rows)


def _intervention_title(dataset_name: str, index: int, num_values: int, with_truth: bool,
                        any_children: bool) -> str:
    rows = ("per concept c: the model's do(z_c = v), then the simulator's true "
            "counterfactual do(c = v)" if with_truth else "per concept c: the model's do(z_c = v)")
    lines = [f"CausalVAE interventions on {dataset_name}, test image {index} "
             "(Yang et al., CVPR 2021, Fig. 6)", rows,
             f"v1..v{num_values} evenly from the 5th to the 95th percentile of the "
             "training labels (captions: v in label units)"]
    if any_children:
        lines.append("*: a parent in the learned graph, set at the mask layer's input "
                     "too, so its descendants follow")
    return "\n".join(lines)


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
