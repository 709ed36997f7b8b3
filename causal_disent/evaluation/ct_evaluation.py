"""Stage-2 evaluation: action retrieval on test transitions, decoded transitions,
and the paper's figures (iterated interventions, causal structure) of Gendron et al.,
"Disentanglement of Latent Representations via Causal Interventions", IJCAI 2023."""

import functools
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh
from matplotlib.figure import Figure

from causal_disent.data import transitions
from causal_disent.evaluation import ct_actions, ct_retrieval
from causal_disent.objectives import ct as ct_objectives
from causal_disent.utils import figures, host_memory
from causal_disent.utils.images import images_to_unit_range
from causal_disent.utils.sharding import padded_global_batches, replicated

# How figure titles cite the paper.
PAPER = "Gendron et al., IJCAI 2023"


def action_retrieval_scores(action_probs: np.ndarray, true_actions: np.ndarray) -> dict:
    """Action and factor accuracy (CT-VAE paper §4) from q [n, 2F] and a* [n].

    Factor accuracy folds the two directions: argmax(q[:F] + q[F:]) == a* mod F.
    Also the chance levels of both accuracies, the accuracy per true action (None
    for an action with no pair) and its number of pairs, and two count matrices (rows: true, columns:
    predicted): `confusion` over factors [F, F] and `action_confusion` over
    actions [2F, 2F].
    """
    num_actions = action_probs.shape[-1]
    num_factors = num_actions // 2
    predicted_action = action_probs.argmax(-1)
    predicted_factor = np.asarray(ct_objectives.fold_factor_probabilities(action_probs)).argmax(-1)
    true_factor = true_actions % num_factors
    confusion = np.zeros((num_factors, num_factors), np.int64)
    np.add.at(confusion, (true_factor, predicted_factor), 1)
    action_confusion = np.zeros((num_actions, num_actions), np.int64)
    np.add.at(action_confusion, (true_actions, predicted_action), 1)
    per_action = [
        float(np.mean(predicted_action[true_actions == a] == a)) if np.any(true_actions == a) else None
        for a in range(num_actions)
    ]
    return {
        "action_accuracy": float(np.mean(predicted_action == true_actions)),
        "factor_accuracy": float(np.mean(predicted_factor == true_factor)),
        "action_chance": 1.0 / num_actions,
        "factor_chance": 1.0 / num_factors,
        "per_action_accuracy": per_action,
        "per_action_pairs": np.bincount(true_actions, minlength=num_actions).tolist(),
        "confusion": confusion.tolist(),
        "action_confusion": action_confusion.tolist(),
    }


def pair_mix_scores(scores: dict, factor_sizes) -> dict | None:
    """Action and factor accuracy reweighted to the authors' mix of test pairs
    (`transitions.authors_factor_shares`) from `action_retrieval_scores`' per-action
    accuracy and factor confusion. Given its action, a pair is drawn alike by both samplers
    (X uniform among the images the move keeps inside the grid), so this is the
    accuracy their pair-mean would give, up to sampling noise; the paper's numbers
    are such pair-means. None when an action has no test pair."""
    per_action = scores["per_action_accuracy"]
    if any(accuracy is None for accuracy in per_action):
        return None
    confusion = np.asarray(scores["confusion"], float)
    per_factor = np.diag(confusion) / confusion.sum(axis=1)
    action_weights = transitions.authors_action_probabilities(factor_sizes)
    factor_weights = transitions.authors_factor_shares(factor_sizes)
    return {"action_accuracy": float(np.dot(action_weights, per_action)),
            "factor_accuracy": float(np.dot(factor_weights, per_factor))}


# Cells get their count and fraction up to this many actions, their count alone up
# to twice as many; beyond that the text no longer fits a cell.
_ANNOTATE_FULL, _ANNOTATE_COUNT = 12, 24


def save_confusion_figure(scores: dict, action_names: list[str], path) -> Path:
    """Writes a PNG heat map of the row-normalised action confusion.

    Args:
      scores: from `action_retrieval_scores` ("action_confusion" [A, A] counts, rows
        true action, columns predicted; "per_action_accuracy" [A]).
      action_names: A names, on both axes; each row label carries that action's
        accuracy (n/a for an action with no test pair).
      path: the PNG to write (parent folders are created).
    Returns:
      the path written.
    """
    counts = np.asarray(scores["action_confusion"], np.int64)
    num_actions = counts.shape[0]
    if counts.shape != (num_actions, num_actions) or len(action_names) != num_actions:
        raise ValueError(
            f"{len(action_names)} action names for an action confusion of shape {counts.shape}"
        )
    totals = counts.sum(axis=1, keepdims=True)
    fractions = counts / np.maximum(totals, 1)  # a row with no pair stays 0
    row_labels = [
        f"{name} ({'n/a' if accuracy is None else f'{accuracy:.2f}'})"
        for name, accuracy in zip(action_names, scores["per_action_accuracy"])
    ]

    size = 2.5 + 0.45 * num_actions
    fig = Figure(figsize=(size + 1.5, size), dpi=figures.DPI, layout="constrained")
    ax = fig.subplots()
    image = ax.imshow(fractions, vmin=0.0, vmax=1.0, cmap="Blues")
    fig.colorbar(image, ax=ax, fraction=0.046, pad=0.04,
                 label="fraction of the true action's pairs")
    ticks = np.arange(num_actions)
    ax.set_xticks(ticks, action_names, rotation=90, fontsize=8)
    ax.set_yticks(ticks, row_labels, fontsize=8)
    ax.set_xlabel("predicted action (argmax q)")
    ax.set_ylabel("true action (its accuracy)")
    title = f"CT-VAE action retrieval on {int(counts.sum())} test transitions"
    if "action_accuracy" in scores:
        title += f" (accuracy {scores['action_accuracy']:.3f})"
    with_fraction = num_actions <= _ANNOTATE_FULL
    cells = ("; cells: count, fraction" if with_fraction
             else "; cells: count" if num_actions <= _ANNOTATE_COUNT else "")
    ax.set_title(f"{title}\nconfusion, row-normalised{cells}", fontsize=10)
    if num_actions <= _ANNOTATE_COUNT:
        _annotate_cells(ax, counts, fractions, with_fraction=with_fraction)
    return figures.save_figure(fig, path)


def _annotate_cells(ax, counts: np.ndarray, fractions: np.ndarray, with_fraction: bool) -> None:
    """Writes each non-empty cell's count (and fraction) on the [A, A] heat map."""
    for (row, column), count in np.ndenumerate(counts):
        if count == 0:
            continue  # empty cells stay blank so the errors stand out
        text = f"{count}\n{fractions[row, column]:.2f}" if with_fraction else str(count)
        # Dark cells get white text.
        color = "white" if fractions[row, column] > 0.5 else "black"
        ax.text(column, row, text, ha="center", va="center", fontsize=7, color=color)


# How the headline figure takes each action's mask and graph (`ct.eval.headline`).
HEADLINES = {
    "most_likely": "the most likely mask and graph (edges and mask entries with "
                   "probability > 0.5), no sampling",
    "sample": "one Gumbel-Bernoulli draw of every mask and graph",
}


def check_eval_config(eval_config) -> None:
    """Raises ValueError when the section `ct.eval` names no known headline (its
    counts are range-checked with every other count, train/config_ranges.py)."""
    if eval_config.headline not in HEADLINES:
        raise ValueError(f"ct.eval.headline must be one of {tuple(HEADLINES)}, "
                         f"got {eval_config.headline!r}")


def retrieval_scores(model, params, x_codes: np.ndarray, y_codes: np.ndarray,
                     actions: np.ndarray, mesh: Mesh, batch_size: int, rng, *,
                     headline: str, num_draws: int) -> dict:
    """Action retrieval on code pairs: the headline scores (`action_retrieval_scores`
    with the structure `headline` names, under `rng`) and, when `num_draws` > 0,
    "draws": action and factor accuracy over that many Gumbel draws (draw d under
    fold_in(rng, d + 1)), each {"mean", "std" (sample std), "values"}.

    "densities" (and "draws"'s, the mean over its draws) gives per action [A] the
    share of nodes its intervention mask holds ("mask_density") and of the N²
    possible edges its graph holds ("edge_density"), over the pairs' X: with the
    most likely structure these are the masks and graphs thresholded at 0.5, so a
    mask whose probabilities stay near 0.5 in training shows as a headline density
    far from the draws' one."""
    scored = ct_retrieval.score_pairs(model.with_structure(headline), params, x_codes,
                                      y_codes, mesh, batch_size, rng)
    results = {"headline": headline, "headline_structure": HEADLINES[headline],
               **action_retrieval_scores(scored["probabilities"], actions),
               "densities": structure_densities(scored)}
    if num_draws > 0:
        sampling = model.with_structure("sample")
        draws = [ct_retrieval.score_pairs(sampling, params, x_codes, y_codes, mesh,
                                          batch_size, jax.random.fold_in(rng, draw + 1))
                 for draw in range(num_draws)]
        per_draw = [action_retrieval_scores(draw["probabilities"], actions) for draw in draws]
        results["draws"] = {"structure": HEADLINES["sample"], "num_draws": num_draws}
        for key in ("action_accuracy", "factor_accuracy"):
            values = [scores[key] for scores in per_draw]
            results["draws"][key] = {
                "mean": float(np.mean(values)),
                "std": float(np.std(values, ddof=1)) if num_draws > 1 else 0.0,
                "values": values,
            }
        densities = [structure_densities(draw) for draw in draws]
        results["draws"]["densities"] = {
            name: np.mean([d[name] for d in densities], axis=0).tolist()
            for name in STRUCTURE_DENSITIES}
    return results


STRUCTURE_DENSITIES = ("mask_density", "edge_density")


def structure_densities(scored: dict) -> dict[str, list[float]]:
    """Per action, the mean over pairs of `ct_retrieval.score_pairs`' densities."""
    return {name: scored[name].mean(axis=0).tolist() for name in STRUCTURE_DENSITIES}


def evaluate(*, model, params, mcqvae, mcqvae_params, encode, dataset, pairs, mesh,
             batch_size, rng, headline: str = "most_likely", num_draws: int = 0) -> dict:
    """Scores the CT layer on `pairs` (a TransitionSampler set of test transitions).

    Returns `retrieval_scores` (the headline and the draws), for a factor grid the
    headline reweighted to the authors' mix of pairs ("authors_pair_mix",
    `pair_mix_scores`) and, for the transition
    under the true action with the headline's structure: node_accuracy (predicted Y
    codes equal to the true ones), exact_match (all nodes right), decoded_mse
    (decoded predicted codes vs the image Y) and, as its floor, reconstruction_mse
    (decoded true Y codes vs Y).
    """
    codes = {name: ct_retrieval.encode_images(encode, mcqvae_params, dataset,
                                              pairs[f"{name}_index"], mesh, batch_size)
             for name in ("x", "y")}
    results = {"num_pairs": len(pairs["action"])}
    results.update(retrieval_scores(model, params, codes["x"], codes["y"], pairs["action"],
                                    mesh, batch_size, rng, headline=headline,
                                    num_draws=num_draws))
    if transitions.moves_along_grid(dataset):
        sizes = [dataset.factor_sizes[f] for f in transitions.action_factor_indices(dataset)]
        results["authors_pair_mix"] = pair_mix_scores(results, sizes)
    results.update(_transition_scores(model.with_structure(headline), params, mcqvae,
                                      mcqvae_params, dataset, pairs, codes, mesh,
                                      batch_size, rng))
    return results


def _transition_scores(model, params, mcqvae, mcqvae_params, dataset, pairs, codes, mesh,
                       batch_size, rng) -> dict:
    """`evaluate`'s scores of the transition under the true action."""
    latent = mcqvae.code_grid_shape(dataset.image_shape)

    @functools.partial(jax.jit, out_shardings=replicated(mesh))
    def score(params, mcq_params, x_codes, y_codes, action, y_images, rng):
        true = model.apply({"params": params}, x_codes, action,
                           rngs={"gumbel": rng, "noise": rng})
        predicted = jnp.argmax(true["logits"], axis=-1).astype(jnp.int32)
        target = images_to_unit_range(y_images)

        def decode(codes):
            grid = codes.reshape(codes.shape[0], *latent)
            return mcqvae.apply({"params": mcq_params}, grid, method=mcqvae.decode_codes)

        return {
            "node_correct": jnp.mean(predicted == y_codes, axis=-1),
            "decoded_mse": jnp.mean((decode(predicted) - target) ** 2, axis=(1, 2, 3)),
            "reconstruction_mse": jnp.mean((decode(y_codes) - target) ** 2, axis=(1, 2, 3)),
        }

    score = host_memory.compiled_ahead(score, "scoring a batch of pairs",
                                       field="ct.train.eval_batch_size")
    collected = []
    batches = padded_global_batches(len(pairs["action"]), batch_size, mesh, lambda index: {
        "x_codes": codes["x"][index], "y_codes": codes["y"][index],
        "action": pairs["action"][index], "y": dataset.images(pairs["y_index"][index]),
    })
    for start, batch, keep in batches:
        out = score(params, mcqvae_params, batch["x_codes"], batch["y_codes"], batch["action"],
                    batch["y"], jax.random.fold_in(rng, start))
        collected.append(jax.tree.map(lambda v: np.asarray(v)[:keep], out))
    merged = {k: np.concatenate([c[k] for c in collected]) for k in collected[0]}
    return {
        "node_accuracy": float(merged["node_correct"].mean()),
        "exact_match": float(np.mean(merged["node_correct"] == 1.0)),
        "decoded_mse": float(merged["decoded_mse"].mean()),
        "reconstruction_mse": float(merged["reconstruction_mse"].mean()),
    }


def evaluate_test_pairs(*, sampler, num_test_pairs: int, **evaluate_args) -> dict:
    """`evaluate` on the fixed set of `num_test_pairs` test transitions of `sampler`
    (the same set for every run of a dataset, split and seed). Called with the section
    `ct.eval` as keywords: `evaluate_test_pairs(..., **config.ct.eval)`."""
    return evaluate(pairs=sampler.fixed_set("test", num_test_pairs), **evaluate_args)


def save_figures(*, model, params, mcqvae, mcqvae_params, dataset, split, rng,
                 figures_dir: Path, times: int = 5, num_structure_images: int = 64) -> None:
    """Writes into `figures_dir`: ct_interventions.png (the paper's Fig. 5: every
    action applied 1..`times` times), ct_structure_masks.png and
    ct_structure_adjacency.png (Fig. 6: each action's intervention mask and causal
    graph, averaged over the first `num_structure_images` test images)."""
    ctvae = ct_actions.CTVAE(
        mcqvae=mcqvae, mcqvae_params=jax.device_get(mcqvae_params), transition=model,
        transition_params=jax.device_get(params), image_shape=tuple(dataset.image_shape),
        latent_shape=mcqvae.code_grid_shape(dataset.image_shape),
        action_names=tuple(transitions.dataset_action_names(dataset)),
    )
    start, start_description = intervention_start(dataset, split)
    chains = chained_interventions(ctvae, dataset.images(np.array([start]))[0], times)
    figures.save_image_grid(
        chains, figures_dir / "ct_interventions.png",
        title=(f"CT-VAE iterated interventions on {dataset.name} ({PAPER}, Fig. 5)\n"
               f"start: {start_description}; row: one action applied 1 to {times} "
               "times, each time to the codes it predicted"),
        row_labels=list(ctvae.action_names), column_labels=chain_column_labels(times),
    )
    images = dataset.images(split["test"][:num_structure_images])
    mask, adjacency = structure_means(ctvae, images, rng)
    about = f"on {dataset.name}, mean over {len(images)} test images"
    figures.save_figure(draw_mask_figure(mask, ctvae.action_names, ctvae.latent_shape, about),
                        figures_dir / "ct_structure_masks.png")
    figures.save_figure(
        draw_adjacency_figure(adjacency, ctvae.action_names, ctvae.latent_shape, about),
        figures_dir / "ct_structure_adjacency.png")


def intervention_start(dataset, split) -> tuple[int, str]:
    """The dataset index the iterated interventions start from, and its description:
    the image with every factor at the middle of its range, so that both directions
    of every action have room to move (attribute datasets and explicit pairs: the
    first test image)."""
    if not transitions.moves_along_grid(dataset):
        index = int(split["test"][0])
        return index, f"test image {index}"
    middle = np.array([size // 2 for size in dataset.factor_sizes])[None]
    return int(dataset.factors_to_index(middle)[0]), "every factor at its middle value"


def chained_interventions(ctvae: ct_actions.CTVAE, image: np.ndarray,
                          times: int) -> np.ndarray:
    """Rows of the iterated-interventions figure, one per action.

    Args:
      ctvae: the trained CT-VAE.
      image: uint8 [H, W, ch], the input as the dataset renders it.
      times: how many times each action is applied.
    Returns:
      uint8 [A, times + 2, H, W, ch]: per action the input image itself, its
      reconstruction, then the action applied 1..`times` times.
    """
    return np.stack([
        np.concatenate([image[None], ct_actions.apply_action(ctvae, image, action, times)])
        for action in range(ctvae.num_actions)
    ])


def chain_column_labels(times: int) -> list[str]:
    """Column titles of `chained_interventions`' rows."""
    return ["input", "reconstruction"] + [f"×{step}" for step in range(1, times + 1)]


def structure_means(ctvae: ct_actions.CTVAE, images: np.ndarray,
                    rng) -> tuple[np.ndarray, np.ndarray]:
    """Every action's intervention mask R_a [A, N] and causal graph M [A, N, N] (N
    code-grid nodes), each averaged over uint8 `images` [B, H, W, ch]."""
    codes = ctvae.encode(images)
    out = jax.jit(
        lambda p, c, r: ctvae.transition.apply(
            {"params": p}, c, rngs={"gumbel": r, "noise": r}, method=ctvae.transition.all_actions
        )
    )(ctvae.transition_params, codes, rng)
    return np.asarray(out["mask"]).mean(axis=1), np.asarray(out["adjacency"]).mean(axis=1)


def draw_mask_figure(mask: np.ndarray, action_names, latent_shape, about: str) -> Figure:
    """Heat maps of the masks [A, N]: a row per action, a column per codebook, each
    panel that codebook's h × w code grid (`latent_shape` = (C, h, w))."""
    num_codebooks, height, width = latent_shape
    grids = np.asarray(mask).reshape(len(action_names), num_codebooks, height, width)
    last = len(action_names) - 1
    panels = [[figures.HeatMap(
        grids[action, codebook], ticks="none",
        title=f"codebook {codebook}" if action == 0 else "",
        ylabel=name if codebook == 0 else "",
        xlabel=f"{height}×{width} code grid" if action == last else "",
    ) for codebook in range(num_codebooks)] for action, name in enumerate(action_names)]
    return figures.draw_heat_maps(
        panels, colorbar_label="probability that the action intervenes on the node",
        title=(f"CT-VAE intervention masks R_a ({PAPER}, Fig. 6)\n{about}\n"
               "rows: actions; columns: codebooks"),
        panel_inches=(1.3, 1.2),
    )


# Panels per row of the causal-graph figure.
_GRAPH_COLUMNS = 4


def draw_adjacency_figure(adjacency: np.ndarray, action_names, latent_shape,
                          about: str) -> Figure:
    """One N × N heat map of the causal graph M per action (adjacency [A, N, N],
    M[i, j]: node j is a parent of node i), `_GRAPH_COLUMNS` panels a row."""
    num_codebooks, height, width = latent_shape
    side = figures.matrix_panel_inches(len(adjacency[0]))
    panels = [figures.HeatMap(matrix, title=name, xlabel="parent node j", ylabel="child node i")
              for matrix, name in zip(np.asarray(adjacency), action_names)]
    return figures.draw_heat_maps(
        [panels[start:start + _GRAPH_COLUMNS]
         for start in range(0, len(panels), _GRAPH_COLUMNS)],
        colorbar_label="M[i, j], probability of the edge j → i",
        title=(f"CT-VAE causal graph M per action ({PAPER}, Fig. 6)\n{about}\n"
               f"node = codebook·{height * width} + row·{width} + column of the "
               f"{num_codebooks}×{height}×{width} code grid"),
        # A little taller than wide: room for the title of the panel below.
        cmap="magma", panel_inches=(side, side + 0.3),
    )
