r"""How a dataset's factors share its transition pairs: the CT-VAE paper's Figure 4.
`benchmarks/factor_imbalance.py` records and draws it for named datasets.

Gendron et al. ("Disentanglement of Latent Representations via Causal Interventions",
IJCAI 2023, §4 and Figure 4) stress that their transition data is imbalanced: their
generator draws the same number of pairs for every adjacent value step of every
factor, so a factor's share of the pairs grows with its number of values (Cars3D's
car model, 183 values, outweighs its elevation, 4 values, about 60 to 1). This module
measures, per factor of each dataset, on the default image-level split:

  grid_pairs     distinct (X, Y) pairs one step apart along the factor with both images
                 in the training split (one count per pair, either direction);
  grid_share     that count's share over the factors: what a sampler drawing uniformly
                 over all valid pairs would train on;
  authors_share  the share in the authors' pairs (∝ values − 1; `action_mix="authors"`);
  balanced_share the share in this library's default training batches (uniform over
                 actions, `action_mix="balanced"`): 1 / F.

The distinct pairs of a full grid are nearly balanced ((size − 1) / size of the images
move along each factor); the imbalance the paper describes comes from how pairs are
drawn, not from which exist.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from causal_disent.data import describe, splits, transitions
from causal_disent.utils import figures

TRAIN_SPLIT = "train"


def factor_pair_shares(dataset, split: dict[str, np.ndarray] | None = None) -> dict:
    """Per moved factor, its training pairs and its share of them under each way of
    drawing pairs (module docstring).

    Args:
      dataset: a factor dataset (`factor_names`, `factor_sizes`, `num_images`).
      split: {name: image indices} with a "train" entry; None: the default split
        (`describe.DEFAULT_SPLIT_FRACTIONS`, seed `describe.DEFAULT_SPLIT_SEED`).
    Returns:
      {"dataset", "num_actions", "factors": [{"name", "size", "grid_pairs",
      "grid_share", "authors_share", "balanced_share"}], "largest_to_smallest"}: the
      last is the authors' largest share over their smallest.
    """
    if split is None:
        split = splits.dataset_split(dataset, describe.DEFAULT_SPLIT_FRACTIONS,
                                     describe.DEFAULT_SPLIT_SEED)
    if TRAIN_SPLIT not in split:
        raise ValueError(f"the split needs a {TRAIN_SPLIT!r} entry, got {sorted(split)}")
    sampler = transitions.TransitionSampler(dataset, split, seed=0)
    # Action k and F + k use the same pairs, reversed: count each pair once.
    grid_pairs = sampler.pair_counts(TRAIN_SPLIT)[: sampler.num_factors]
    sizes = [dataset.factor_sizes[f] for f in sampler.action_factors]
    authors = transitions.authors_factor_shares(sizes)
    factors = [
        {"name": dataset.factor_names[f], "size": int(size), "grid_pairs": int(pairs),
         "grid_share": float(pairs / grid_pairs.sum()), "authors_share": float(share),
         "balanced_share": 1.0 / sampler.num_factors}
        for f, size, pairs, share in zip(sampler.action_factors, sizes, grid_pairs, authors)
    ]
    return {"dataset": dataset.name, "num_actions": sampler.num_actions, "factors": factors,
            "largest_to_smallest": float(authors.max() / authors.min())}


def draw_factor_shares(per_dataset: Sequence[dict]):
    """One panel per dataset, a group of horizontal bars per factor: its share of the
    pairs in the authors' draw, of the distinct grid pairs, and of balanced batches.
    Returns a matplotlib Figure."""
    from matplotlib.figure import Figure

    heights = [len(entry["factors"]) for entry in per_dataset]
    figure = Figure(figsize=(7.0, 0.9 + 0.42 * sum(heights) + 0.5 * len(per_dataset)),
                    dpi=figures.DPI, layout="constrained")
    panels = figure.subplots(len(per_dataset), 1, squeeze=False,
                             gridspec_kw={"height_ratios": heights})[:, 0]
    kinds = (("authors_share", "authors' pairs (∝ values − 1)", "tab:red"),
             ("grid_share", "distinct pairs in the train split", "tab:blue"),
             ("balanced_share", "balanced batches (this library's default)", "tab:gray"))
    bar = 0.26
    for panel, entry in zip(panels, per_dataset):
        names = [f"{f['name']} ({f['size']})" for f in entry["factors"]]
        rows = np.arange(len(names))
        for k, (key, label, colour) in enumerate(kinds):
            panel.barh(rows + (k - 1) * bar, [f[key] for f in entry["factors"]], bar,
                       label=label, color=colour)
        panel.set_yticks(rows, names, fontsize=8)
        panel.invert_yaxis()
        panel.set_xlim(0, 1)
        panel.tick_params(axis="x", labelsize=8)
        panel.set_title(f"{entry['dataset']}: {entry['num_actions']} actions", fontsize=9,
                        loc="left")
    panels[-1].set_xlabel("share of the training pairs", fontsize=8)
    panels[-1].legend(fontsize=7, loc="lower right")  # the widest bars are in the first
    figure.suptitle("How each factor shares the transition pairs (CT-VAE paper, Figure 4)",
                    fontsize=10)
    return figure
