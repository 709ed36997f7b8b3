"""Stage-2 evaluation: action retrieval on test transitions, decoded transitions,
and the paper's figures (iterated interventions, causal structure)."""

import functools
from pathlib import Path

import jax
import jax.numpy as jnp
import matplotlib

matplotlib.use("Agg")  # files only, no display
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from jax.sharding import Mesh  # noqa: E402

from causal_disent import ct_interventions as interventions  # noqa: E402
from causal_disent.data import transitions  # noqa: E402
from causal_disent.utils.figures import image_grid, save_png  # noqa: E402
from causal_disent.objectives import ct as ct_objectives  # noqa: E402
from causal_disent.runs import ct as ct_run  # noqa: E402
from causal_disent.utils.images import images_to_unit_range  # noqa: E402
from causal_disent.utils.sharding import padded_global_batches, replicated  # noqa: E402


def action_retrieval_scores(action_probs: np.ndarray, true_actions: np.ndarray) -> dict:
    """Action and factor accuracy (CT-VAE paper §4) from q [n, 2F] and a* [n].

    Factor accuracy folds the two directions: argmax(q[:F] + q[F:]) == a* mod F.
    Also the chance levels of both accuracies, the accuracy per true action (None
    for an action with no pair), and two count matrices (rows: true, columns:
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
        "confusion": confusion.tolist(),
        "action_confusion": action_confusion.tolist(),
    }


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
    fig, ax = plt.subplots(figsize=(size + 1.5, size))
    image = ax.imshow(fractions, vmin=0.0, vmax=1.0, cmap="Blues")
    fig.colorbar(image, ax=ax, fraction=0.046, pad=0.04,
                 label="fraction of the true action's pairs")
    ticks = np.arange(num_actions)
    ax.set_xticks(ticks, action_names, rotation=90, fontsize=8)
    ax.set_yticks(ticks, row_labels, fontsize=8)
    ax.set_xlabel("predicted action")
    ax.set_ylabel("true action (its accuracy)")
    title = "action confusion, row-normalised"
    if "action_accuracy" in scores:
        title += f" (accuracy {scores['action_accuracy']:.3f})"
    ax.set_title(title, fontsize=10)
    if num_actions <= _ANNOTATE_COUNT:
        _annotate_cells(ax, counts, fractions, with_fraction=num_actions <= _ANNOTATE_FULL)
    fig.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def _annotate_cells(ax, counts: np.ndarray, fractions: np.ndarray, with_fraction: bool) -> None:
    """Writes each non-empty cell's count (and fraction) on the [A, A] heat map."""
    for (row, column), count in np.ndenumerate(counts):
        if count == 0:
            continue  # empty cells stay blank so the errors stand out
        text = f"{count}\n{fractions[row, column]:.2f}" if with_fraction else str(count)
        # Dark cells get white text.
        color = "white" if fractions[row, column] > 0.5 else "black"
        ax.text(column, row, text, ha="center", va="center", fontsize=7, color=color)


def evaluate(*, model, params, mcqvae, mcqvae_params, encode, dataset, pairs, mesh,
             batch_size, rng) -> dict:
    """Scores the CT layer on `pairs` (a TransitionSampler set of test transitions).

    Returns action retrieval scores and, for the transition under the true action:
    node_accuracy (predicted Y codes equal to the true ones), exact_match (all nodes
    right), decoded_mse (decoded predicted codes vs the image Y) and, as its floor,
    reconstruction_mse (decoded true Y codes vs Y).
    """
    latent = mcqvae.code_grid_shape(dataset.image_shape)

    @functools.partial(jax.jit, out_shardings=replicated(mesh))
    def score(params, mcq_params, x_codes, y_codes, action, y_images, rng):
        rngs = {"gumbel": rng, "noise": rng}
        every = model.apply({"params": params}, x_codes, rngs=rngs, method=model.all_actions)
        probs = jax.nn.softmax(ct_objectives.action_scores(every["logits"], y_codes), axis=-1)
        true = model.apply({"params": params}, x_codes, action, rngs=rngs)
        predicted = jnp.argmax(true["logits"], axis=-1).astype(jnp.int32)
        target = images_to_unit_range(y_images)

        def decode(codes):
            grid = codes.reshape(codes.shape[0], *latent)
            return mcqvae.apply({"params": mcq_params}, grid, method=mcqvae.decode_codes)

        return {
            "probs": probs,
            "node_correct": jnp.mean(predicted == y_codes, axis=-1),
            "decoded_mse": jnp.mean((decode(predicted) - target) ** 2, axis=(1, 2, 3)),
            "reconstruction_mse": jnp.mean((decode(y_codes) - target) ** 2, axis=(1, 2, 3)),
        }

    num_pairs = len(pairs["action"])
    collected = []
    batches = padded_global_batches(num_pairs, batch_size, mesh, lambda index: {
        "x": dataset.images(pairs["x_index"][index]),
        "y": dataset.images(pairs["y_index"][index]),
        "action": pairs["action"][index],
    })
    for start, batch, keep in batches:
        out = score(
            params, mcqvae_params, encode(mcqvae_params, batch["x"]),
            encode(mcqvae_params, batch["y"]), batch["action"], batch["y"],
            jax.random.fold_in(rng, start),
        )
        collected.append(jax.tree.map(lambda v: np.asarray(v)[:keep], out))
    merged = {k: np.concatenate([c[k] for c in collected]) for k in collected[0]}
    results = {"num_pairs": num_pairs}
    results.update(action_retrieval_scores(merged["probs"], pairs["action"]))
    results.update({
        "node_accuracy": float(merged["node_correct"].mean()),
        "exact_match": float(np.mean(merged["node_correct"] == 1.0)),
        "decoded_mse": float(merged["decoded_mse"].mean()),
        "reconstruction_mse": float(merged["reconstruction_mse"].mean()),
    })
    return results


def evaluate_on_test(config, model, params, mcqvae, mcqvae_params, encode, dataset, sampler,
                     mesh: Mesh) -> dict:
    """`evaluate` on a run's fixed set of test transitions (`ct.train.num_eval_pairs`),
    with the run's evaluation key."""
    cfg = config.ct
    return evaluate(
        model=model, params=params, mcqvae=mcqvae, mcqvae_params=mcqvae_params,
        encode=encode, dataset=dataset, pairs=sampler.fixed_set("test", cfg.train.num_eval_pairs),
        mesh=mesh, batch_size=cfg.train.eval_batch_size, rng=ct_run.stage_rngs(config)[2],
    )


def save_figures(*, model, params, mcqvae, mcqvae_params, dataset, split, rng,
                 figures_dir: Path, times: int = 5, num_structure_images: int = 64) -> None:
    """Writes ct_interventions.png (paper Fig. 5) and ct_structure_*.png (Fig. 6)."""
    ctvae = interventions.CTVAE(
        mcqvae=mcqvae, mcqvae_params=jax.device_get(mcqvae_params), transition=model,
        transition_params=jax.device_get(params), image_shape=tuple(dataset.image_shape),
        latent_shape=mcqvae.code_grid_shape(dataset.image_shape),
        action_names=tuple(transitions.dataset_action_names(dataset)),
    )
    # Start from the image with every factor in the middle of its range, so that both
    # directions of every action have room to move (attribute datasets: a test image).
    if transitions.is_attribute_dataset(dataset):
        start = dataset.images(split["test"][:1])[0]
    else:
        middle = np.array([size // 2 for size in dataset.factor_sizes])[None]
        start = dataset.images(dataset.factors_to_index(middle))[0]
    rows = [interventions.apply_action(ctvae, start, a, times) for a in range(model.num_actions)]
    save_png(image_grid(np.stack(rows)), figures_dir / "ct_interventions.png", upscale=2)
    _save_structure(ctvae, dataset.images(split["test"][:num_structure_images]), rng, figures_dir)


def _save_structure(ctvae, images, rng, figures_dir: Path) -> None:
    codes = ctvae.encode(images)
    out = jax.jit(
        lambda p, c, r: ctvae.transition.apply(
            {"params": p}, c, rngs={"gumbel": r, "noise": r}, method=ctvae.transition.all_actions
        )
    )(ctvae.transition_params, codes, rng)
    mask = np.asarray(out["mask"]).mean(axis=1)  # [A, N]
    adjacency = np.asarray(out["adjacency"]).mean(axis=1)  # [A, N, N]
    num_actions, (num_codebooks, height, width) = mask.shape[0], ctvae.latent_shape

    fig, axes = plt.subplots(num_actions, num_codebooks, squeeze=False,
                             figsize=(1.6 * num_codebooks + 1, 1.3 * num_actions))
    for a in range(num_actions):
        grid = mask[a].reshape(num_codebooks, height, width)
        for c in range(num_codebooks):
            ax = axes[a, c]
            ax.imshow(grid[c], vmin=0, vmax=1, cmap="viridis")
            ax.set_xticks([]), ax.set_yticks([])
            if c == 0:
                ax.set_ylabel(ctvae.action_names[a], fontsize=7)
            if a == 0:
                ax.set_title(f"codebook {c}", fontsize=8)
    fig.suptitle("intervention mask R_a (batch mean)", fontsize=9)
    fig.tight_layout()
    figures_dir.mkdir(parents=True, exist_ok=True)
    fig.savefig(figures_dir / "ct_structure_masks.png", dpi=100)
    plt.close(fig)

    columns = 4
    fig, axes = plt.subplots(-(-num_actions // columns), columns, squeeze=False,
                             figsize=(3 * columns, 3 * -(-num_actions // columns)))
    for a, ax in enumerate(axes.flat):
        ax.set_xticks([]), ax.set_yticks([])
        if a < num_actions:
            ax.imshow(adjacency[a], vmin=0, vmax=1, cmap="magma")
            ax.set_title(f"M for {ctvae.action_names[a]}", fontsize=8)
        else:
            ax.axis("off")
    fig.suptitle("causal graph M_ij = 1: j is a parent of i (batch mean)", fontsize=9)
    fig.tight_layout()
    fig.savefig(figures_dir / "ct_structure_adjacency.png", dpi=100)
    plt.close(fig)
