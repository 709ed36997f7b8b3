"""CausalVAE's interventions scored against the simulator's true counterfactuals.

Pendulum and Flow are drawn by the library, so for a test image and do(concept c =
v) the true image is known: the generator redraws it with c set to v, c's
descendants recomputed by their mechanisms and every other concept kept
(`dataset.counterfactual_images`). A model's answer is its decoded image under
do(z_c = λ₁(v)), λ₁ the label prior's scaling (the codes' units).

For each concept the score is the pixel MSE (RGB in [0, 1]) between the model's
image and the true one, over the whole image and split into two regions:
  changed  the pixels the true intervention changes (for do(cause): the cause and
           its effects; for do(effect): the effect alone),
  kept     the pixels it leaves as they were; for do(effect) this is where the
           causes are drawn, which a faithful intervention must leave alone.
The same numbers for the unintervened reconstruction say how far doing nothing
gets; other trained models (ConditionVAE, the joint decoder) are scored on the
same images and values for comparison.

The scored images are spread evenly over the test split, and each one's value v of
concept c is the label of another test image drawn at random (`counterfactual_pairs`),
so v is a value the concept really takes, combined with the image's other concepts.
"""

from __future__ import annotations

import numpy as np

from causal_disent.data.counterfactuals import descendants
from causal_disent.evaluation import causalvae_do


def counterfactual_pairs(indices: np.ndarray, labels: np.ndarray, count: int,
                         seed: int) -> tuple[np.ndarray, np.ndarray]:
    """`count` test images spread evenly over `indices` [N], and for each the labels
    [count, n] of another test image drawn at random (the intervention values)."""
    indices, labels = np.asarray(indices), np.asarray(labels, np.float64)
    count = min(count, len(indices))
    chosen = np.linspace(0, len(indices) - 1, count).round().astype(np.int64)
    donors = np.random.default_rng(seed).choice(len(indices), count, replace=False)
    return indices[chosen], labels[donors]


def concept_kinds(graph: np.ndarray) -> list[str]:
    """'root', 'intermediate' or 'leaf' per concept of `graph` (graph[i, j]: i -> j)."""
    graph = np.asarray(graph) != 0
    kinds = []
    for concept in range(len(graph)):
        has_parents, has_children = graph[:, concept].any(), graph[concept].any()
        kinds.append("intermediate" if has_parents and has_children
                     else "root" if has_children else "leaf" if has_parents else "isolated")
    return kinds


def region_errors(predicted: np.ndarray, truth: np.ndarray, factual: np.ndarray) -> dict:
    """Pixel MSE of uint8 RGBA images [B, H, W, 4] (RGB, in [0, 1]), over the whole
    image and over the pixels the true intervention changes or keeps (per image,
    then averaged; an image whose truth changes nothing has no 'changed' term)."""
    predicted, truth, factual = (np.asarray(x[..., :3], np.float64) / 255.0
                                 for x in (predicted, truth, factual))
    squared = ((predicted - truth) ** 2).mean(axis=-1)  # [B, H, W]
    changed = np.any(truth != factual, axis=-1)
    changed_mse = [squared[b][changed[b]].mean() for b in range(len(squared)) if changed[b].any()]
    kept_mse = [squared[b][~changed[b]].mean() for b in range(len(squared)) if (~changed[b]).any()]
    return {
        "mse": float(squared.mean()),
        "mse_changed": float(np.mean(changed_mse)) if changed_mse else None,
        "mse_kept": float(np.mean(kept_mse)) if kept_mse else None,
        "changed_fraction": float(changed.mean()),
    }


def score_counterfactuals(dataset, indices: np.ndarray, values: np.ndarray, prior_offset,
                          prior_scale, models: dict, *, batch_size: int = 64) -> dict:
    """Scores every model's do(concept) images against the true counterfactuals.

    Args:
      dataset: Pendulum or Flow (with `counterfactual_images` and `causal_graph`).
      indices: [N] test images' flat indices.
      values: [N, n] raw label values: image b's do(concept c) sets c to values[b, c].
      prior_offset, prior_scale: [n] λ₁(v) = (v − offset) / scale, the codes' units.
      models: name -> (CausalVAE, params); every model sees the same images and v.
    Returns:
      {"num_images", "values": "...", "concepts": {label_name: {"kind", "descendants",
      "<model>": region_errors, "<model>_reconstruction": region_errors of doing
      nothing}}}.
    """
    indices, values = np.asarray(indices), np.asarray(values, np.float64)
    offset, scale = np.asarray(prior_offset, np.float64), np.asarray(prior_scale, np.float64)
    graph = np.asarray(dataset.causal_graph)
    kinds = concept_kinds(graph)
    factual = dataset.images(indices)
    reconstructions = {
        name: _in_batches(lambda x, m=model, p=params: causalvae_do.reconstruct(m, p, x),
                          factual, batch_size)
        for name, (model, params) in models.items()
    }
    concepts = {}
    for concept, label_name in enumerate(dataset.label_names):
        truth = dataset.counterfactual_images(indices, concept, values[:, concept])
        codes = (values[:, concept] - offset[concept]) / scale[concept]
        entry = {
            "kind": kinds[concept],
            "descendants": [dataset.label_names[d]
                            for d in np.flatnonzero(descendants(graph, concept))],
        }
        for name, (model, params) in models.items():
            predicted = _in_batches(
                lambda x, start, m=model, p=params: causalvae_do.intervene(
                    m, p, x, concept, codes[start:start + len(x)]),
                factual, batch_size, with_start=True,
            )
            entry[name] = region_errors(predicted, truth, factual)
            entry[f"{name}_reconstruction"] = region_errors(reconstructions[name], truth, factual)
        concepts[label_name] = entry
    return {
        "num_images": int(len(indices)),
        "values": "each image's v is the label of another test image drawn at random",
        "regions": "changed: pixels the true intervention changes; kept: the others",
        "concepts": concepts,
    }


def _in_batches(function, images: np.ndarray, batch_size: int, with_start: bool = False):
    outputs = []
    for start in range(0, len(images), batch_size):
        chunk = images[start:start + batch_size]
        outputs.append(function(chunk, start) if with_start else function(chunk))
    return np.concatenate(outputs)
