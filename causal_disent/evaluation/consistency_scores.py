"""The interventional-consistency scores of an autoencoder of the VAE family
("On the interventional consistency of autoencoders", ICLR 2021 submission, §2.1): INV[m, i],
EQV[m, i] and SCN[i], each 1 − a normalised error, and their heat maps.

With base samples N (hybrid samples of the test images' encodings: each unit from a
different image), responses R(N) = E(σ(D(N))) (objectives/consistency.py), for each
noise unit m an intervention I_m setting N_m to unit m of another image's encoding,
σ_i² the variance of unit i of the encodings and U_m = E (v − N_m)² / σ_m² the
intervention's size in those units:

  INV[m, i] = 1 − E (R(I_m N)_i − R(N)_i)² / σ_i² / U_m
  EQV[m, i] = 1 − E ‖X(I_m R(I_m N))_i − X(I_m N)_i‖² / s_i² / U_m
  SCN[i]    = 1 − E (R(N)_i − N_i)² / σ_i²

X the XBlock (identity without one) and s_i² the total variance of causal unit i
over X(N). The paper prints these with its normalisation partly lost; this is our
reading, chosen so that the scores are unit-free: 1 is perfect, and 0 is a response
that moved as much as an independent redraw (for INV off the diagonal) or as much as
the intervention itself. On the diagonal, INV near 0 means unit m registers its
intervention and near 1 that the unit is collapsed (the paper's reading); EQV's
diagonal compares the re-imposed unit with itself through X, so it is 1 but for the
unit's parents. A unit whose encodings do not vary (σ² = 0) cannot be intervened on:
its row is NaN, and the means skip it. The mask of an XBlock is its mean-field value.
"""

import functools
from pathlib import Path

import jax
import numpy as np
from matplotlib.figure import Figure

from causal_disent.objectives import consistency
from causal_disent.utils import figures
from causal_disent.utils.images import images_to_unit_range


def batched(fn, inputs: np.ndarray, batch_size: int) -> np.ndarray:
    """fn over `inputs` in batches of `batch_size` rows, the last one padded (one
    compiled shape), concatenated."""
    outputs = []
    for start in range(0, len(inputs), batch_size):
        chunk = inputs[start:start + batch_size]
        padded = np.concatenate([chunk, np.repeat(chunk[-1:], batch_size - len(chunk), 0)])
        outputs.append(np.asarray(fn(padded))[:len(chunk)])
    return np.concatenate(outputs)


def consistency_scores(model, params, images: np.ndarray, seed: int = 0,
                       batch_size: int = 256) -> dict:
    """The scores on `images` [T, H, W, ch] (uint8 or [0, 1] floats): {"inv" [n][n],
    "eqv" [n][n], "scn" [n], "inv_off_diagonal", "inv_diagonal", "eqv_mean",
    "scn_mean", "num_samples"} (nested lists and floats, NaN where undefined)."""
    # The parameters are an argument, not a constant folded into each compiled function.
    encode = functools.partial(jax.jit(
        lambda p, x: model.apply({"params": p}, x, method=model.encode)[0]), params)
    respond = functools.partial(jax.jit(
        lambda p, n: consistency.response(p, model, n)), params)
    cause = functools.partial(jax.jit(lambda p, n: consistency.causes(p, model, n)), params)
    if images.dtype == np.uint8:
        images = np.asarray(images_to_unit_range(images))
    encodings = batched(encode, images, batch_size).astype(np.float64)
    count, units = encodings.shape
    rng = np.random.default_rng(seed)
    noise = np.take_along_axis(encodings, rng.integers(0, count, encodings.shape), axis=0)
    variance = encodings.var(axis=0)
    valid = variance > 0
    safe_variance = np.where(valid, variance, 1.0)

    def run(fn, inputs):
        return batched(fn, inputs.astype(np.float32), batch_size).astype(np.float64)

    plain = run(respond, noise)
    base_causes = run(cause, noise)
    cause_variance = base_causes.var(axis=0).sum(axis=-1)
    safe_cause_variance = np.where(cause_variance > 0, cause_variance, 1.0)
    scn = 1 - ((plain - noise) ** 2).mean(axis=0) / safe_variance
    inv = np.full((units, units), np.nan)
    eqv = np.full((units, units), np.nan)
    for unit in np.flatnonzero(valid):
        values = encodings[rng.integers(0, count, count), unit]
        intervened = noise.copy()
        intervened[:, unit] = values
        size = ((values - noise[:, unit]) ** 2).mean() / variance[unit]
        after = run(respond, intervened)
        inv[unit] = 1 - ((after - plain) ** 2).mean(axis=0) / safe_variance / size
        reimposed = after.copy()
        reimposed[:, unit] = values
        moved = ((run(cause, reimposed) - run(cause, intervened)) ** 2).sum(axis=-1)
        eqv[unit] = 1 - moved.mean(axis=0) / safe_cause_variance / size
    scn[~valid] = np.nan
    off_diagonal = ~np.eye(units, dtype=bool)
    return {
        "inv": inv.tolist(), "eqv": eqv.tolist(), "scn": scn.tolist(),
        "inv_off_diagonal": float(np.nanmean(np.where(off_diagonal, inv, np.nan))),
        "inv_diagonal": float(np.nanmean(np.diag(inv))),
        "eqv_mean": float(np.nanmean(eqv)),
        "scn_mean": float(np.nanmean(scn)),
        "num_samples": int(count),
    }


# A gate at or above this mean-field value counts as an edge of the XBlock's graph.
EDGE_THRESHOLD = 0.5


def xblock_structure(model, params) -> dict | None:
    """The XBlock's learned graph, or None for a model without one: {"mask" [n][n]
    (M_ij, mean-field: unit j's gate into unit i), "edges" (gates >= EDGE_THRESHOLD),
    "possible_edges" (the gates that may be open), "edge_fraction"} (the paper's
    sparsity table, §4, counts the same fraction)."""
    if getattr(model, "xblock", None) is None:
        return None
    block = model.xblock
    mask = np.asarray(block.apply({"params": params["xblock"]}, method=block.parent_mask))
    support = np.asarray(block.apply({"params": params["xblock"]},
                                     method=block.parent_support))
    edges = int(((mask >= EDGE_THRESHOLD) & (support > 0)).sum())
    possible = int(support.sum())
    return {"mask": mask.round(4).tolist(), "edges": edges, "possible_edges": possible,
            "edge_fraction": edges / possible if possible else float("nan")}


# Test images the scores are computed on: n + 1 responses of each per model.
NUM_SCORED_IMAGES = 1024


def score_test_images(model, params, dataset, test_indices: np.ndarray, seed: int = 0,
                      batch_size: int = 256) -> dict:
    """`consistency_scores` on the first NUM_SCORED_IMAGES test images."""
    return consistency_scores(model, params, dataset.images(test_indices[:NUM_SCORED_IMAGES]),
                              seed, batch_size)


def save_consistency_figure(scores: dict, path, structure: dict | None = None) -> Path:
    """Writes `draw_consistency_figure(scores, structure)` as a PNG; returns the path."""
    return figures.save_figure(draw_consistency_figure(scores, structure), path)


def draw_consistency_figure(scores: dict, structure: dict | None = None) -> Figure:
    """Heat maps on a common 0–1 colour scale: INV[m, i] and EQV[m, i] (rows the
    intervened unit m), SCN[i] as one row, and with `structure` (xblock_structure)
    the XBlock's mask M[i, j]; NaN (a unit that never varies) is grey."""
    unit_axes = {"xlabel": "response unit i", "ylabel": "intervened unit m", "ticks": "every"}
    panels = [
        figures.HeatMap(np.asarray(scores["inv"]), **unit_axes,
                        title=f"invariance INV[m, i]\n(off-diagonal mean "
                              f"{scores['inv_off_diagonal']:.3f})"),
        figures.HeatMap(np.asarray(scores["eqv"]), **unit_axes,
                        title=f"equivariance EQV[m, i]\n(mean {scores['eqv_mean']:.3f})"),
        figures.HeatMap(np.asarray(scores["scn"])[None], xlabel="unit i", ticks="every",
                        title=f"self-consistency SCN[i]\n(mean {scores['scn_mean']:.3f})"),
    ]
    if structure is not None:
        panels.append(figures.HeatMap(
            np.asarray(structure["mask"]), xlabel="parent unit j", ylabel="child unit i",
            ticks="every", title=f"XBlock mask M[i, j]\n({structure['edges']} of "
                                 f"{structure['possible_edges']} gates open)"))
    return figures.draw_heat_maps(
        [panels], colorbar_label="score (1 = consistent); mask: gate value",
        title=_consistency_title(scores, any(np.isnan(p.values).any() for p in panels)),
        panel_inches=(3.2, 3.0),
    )


def _consistency_title(scores: dict, any_missing: bool) -> str:
    lines = [f"Interventional consistency of the latent units on {scores['num_samples']} "
             "test images (\"On the interventional consistency of autoencoders\", §2.1)",
             "1 = consistent; 0 = moved as much as an independent redraw; on INV's "
             "diagonal 0 = unit m registers its intervention, 1 = unit collapsed"]
    if any_missing:
        lines.append("grey: no score (the unit's encodings never vary)")
    return "\n".join(lines)
