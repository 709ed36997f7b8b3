r"""Prints what a dataset is, as one JSON object.

  python -m causal_disent.data.describe shapes3d_synth
  python -m causal_disent.data.describe pendulum
  python -m causal_disent.data.describe files --path=my_images.npz

Fields: name, image_shape, num_images, factors (name, size, and the values, or their
range when there are more than `MAX_LISTED_VALUES`), splits (sizes and whether they
are the dataset's published split or the seeded default), num_actions and
action_names (CT-VAE transitions: +/- one step of one factor), and, where known,
labels and the true causal graph over them (edges as [cause, effect] names). For
one's own data (`files`, a registered ArrayDataset) also num_rows, full_grid, a
summary line and `trains`: what each model family and the metrics can do with its
labels.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

import numpy as np

from causal_disent.data import registry, splits, transitions
from causal_disent.utils import arguments

MAX_LISTED_VALUES = 50
# The default image-level split of every config (config.data.split_fractions).
DEFAULT_SPLIT_FRACTIONS = (0.7, 0.15, 0.15)
DEFAULT_SPLIT_SEED = 0


def describe(dataset) -> dict:
    """The JSON-ready description of a factor dataset (or of an attribute dataset
    such as CelebA, which has binary attributes instead of a factor grid)."""
    if transitions.is_attribute_dataset(dataset):
        return describe_attributes(dataset)
    factors = []
    for name, size, values in zip(
        dataset.factor_names, dataset.factor_sizes, dataset.factor_values
    ):
        values = np.asarray(values, np.float64)
        entry = {"name": name, "size": int(size)}
        if size <= MAX_LISTED_VALUES:
            entry["values"] = [_number(v) for v in values]
        else:
            entry["range"] = [_number(values.min()), _number(values.max())]
        factors.append(entry)
    has_published = getattr(dataset, "predefined_split", lambda: None)() is not None
    split = splits.dataset_split(dataset, DEFAULT_SPLIT_FRACTIONS, DEFAULT_SPLIT_SEED)
    description = {
        "name": dataset.name,
        "image_shape": list(dataset.image_shape),
        "num_images": int(dataset.num_images),
        "factors": factors,
        "splits": {name: int(len(indices)) for name, indices in split.items()},
        "split_source": "published" if has_published else (
            f"seeded: fractions {list(DEFAULT_SPLIT_FRACTIONS)}, seed {DEFAULT_SPLIT_SEED}"
        ),
        "num_actions": transitions.num_dataset_actions(dataset),
        "action_names": transitions.dataset_action_names(dataset),
    }
    if hasattr(dataset, "describe_labels"):  # one's own data: what its labels allow
        description["num_rows"] = int(dataset.num_rows)
        description["full_grid"] = bool(dataset.full_grid)
        description["summary"] = dataset.describe_labels()
        description["trains"] = what_labels_allow(dataset)
    label_names = getattr(dataset, "label_names", None)
    if label_names:
        description["labels"] = list(label_names)
    graph = getattr(dataset, "causal_graph", None)
    if graph is not None:
        names = list(label_names) if label_names else list(dataset.factor_names)
        causes, effects = np.nonzero(np.asarray(graph))
        description["causal_graph"] = {
            "nodes": names,
            "edges": [[names[c], names[e]] for c, e in zip(causes, effects)],
        }
    return description


def what_labels_allow(dataset) -> dict[str, str]:
    """For one's own dataset: what each model family and the metrics can do with its
    labels, in words."""
    pairs = transitions.pair_list_of(dataset)
    if pairs is not None:
        ct = f"yes, from its {len(pairs.action)} listed pairs"
    elif dataset.full_grid:
        ct = "yes, from pairs one factor step apart on its grid"
    else:
        ct = f"no: {transitions.grid_transitions_missing(dataset)}"
    if dataset.label_names is None:
        causalvae = "no: CausalVAE needs concept labels (labels / labels.csv)"
    else:
        causalvae = (f"yes, {len(dataset.label_names)} concepts"
                     + (", SHD against the given graph" if dataset.causal_graph is not None
                        else ", no true graph to score SHD against"))
    if not dataset.num_factors:
        metrics = "none: the disentanglement metrics need factor labels"
    elif dataset.full_grid:
        metrics = "all"
    else:
        metrics = ("all but betavae and factorvae, which fix one factor across random "
                   "draws and need a full grid")
    return {"ct_vae": ct, "vae": "yes (images only)", "causalvae": causalvae,
            "metrics": metrics}


def describe_attributes(dataset) -> dict:
    """CelebA-like datasets: attributes, published splits, one-attribute actions."""
    split = dataset.predefined_split()
    return {
        "name": dataset.name,
        "image_shape": list(dataset.image_shape),
        "num_images": int(dataset.num_images),
        "attributes": list(dataset.attribute_names),
        "splits": {name: int(len(indices)) for name, indices in split.items()},
        "split_source": "published",
        "num_actions": transitions.num_dataset_actions(dataset),
        "action_names": transitions.dataset_action_names(dataset),
    }


def _number(value: float) -> float | int:
    value = float(value)
    return int(value) if value.is_integer() else round(value, 6)


def main(argv: Sequence[str] | None = None) -> None:
    parser = arguments.OneLineArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dataset", help=f"one of: {', '.join(sorted(registry.DATASETS))}")
    parser.add_argument("--data_dir", default=None, help="TFDS data dir (real datasets)")
    parser.add_argument("--path", default=None,
                        help="files: the file or folder of one's own dataset")
    args = parser.parse_args(argv)
    try:
        dataset = registry.get_dataset(args.dataset, data_dir=args.data_dir, path=args.path)
    except (ValueError, FileNotFoundError) as error:
        raise SystemExit(f"error: {error}") from None
    print(json.dumps(describe(dataset), indent=2))


if __name__ == "__main__":
    main()
