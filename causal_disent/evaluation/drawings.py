"""The figures of a trained model's end-of-stage evaluation, drawn from host values
alone: this module imports no JAX, so that a figure worker process
(utils/figure_workers.py) imports it quickly and builds these figures itself
(`figures.save_drawn`) while the main process goes on with the devices."""

import numpy as np
from matplotlib.figure import Figure

from causal_disent.utils import figures


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


def draw_reconstruction_figure(images: np.ndarray, reconstructions: np.ndarray, title: str):
    """Two rows, "input" (uint8 `images` [n, H, W, ch]) over "reconstruction" (uint8
    [n, H, W, ch], each captioned with its per-pixel MSE in [0, 1] units).
    Returns `figures.draw_image_grid`'s (figure, layout)."""
    return figures.draw_image_grid(
        np.stack([images, reconstructions]), title=title,
        row_labels=["input", "reconstruction"],
        cell_labels=[[""] * len(images),
                     [f"MSE {mse:.4f}" for mse in pixel_mse(images, reconstructions)]],
    )


def pixel_mse(images: np.ndarray, reconstructions: np.ndarray) -> np.ndarray:
    """Mean squared error per image [n] of uint8 [n, H, W, ch] pairs, in [0, 1] units."""
    difference = (images.astype(np.float64) - reconstructions.astype(np.float64)) / 255.0
    return np.mean(difference ** 2, axis=tuple(range(1, difference.ndim)))
