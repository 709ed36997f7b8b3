"""Datasets by name. A typo gets the closest known name back.

Procedural datasets are rendered by the library (offline, nothing to prepare); real
datasets are read from TFDS data prepared in `data_dir` (TFDS's default when None).
Modules are imported on first use, so naming a procedural dataset never imports
tensorflow-datasets.
"""

import dataclasses
import difflib
import importlib


@dataclasses.dataclass(frozen=True)
class DatasetEntry:
    module: str  # causal_disent.data.<module>
    attribute: str  # the class in it
    reads_data_dir: bool  # real data: the constructor takes data_dir
    factor_grid: bool = True  # False: binary attributes (CelebA), no grid of factors


DATASETS: dict[str, DatasetEntry] = {
    # procedural
    "shapes3d_synth": DatasetEntry("shapes3d_synth", "Shapes3DSynth", False),
    "dsprites_synth": DatasetEntry("dsprites_synth", "DSpritesSynth", False),
    "cars3d_synth": DatasetEntry("cars3d_synth", "Cars3DSynth", False),
    "sprites_synth": DatasetEntry("sprites_synth", "SpritesSynth", False),
    "pendulum": DatasetEntry("pendulum", "Pendulum", False),
    "flow": DatasetEntry("flow", "Flow", False),
    # real, read through TFDS (see causal_disent/data/tfds_datasets.py)
    "shapes3d": DatasetEntry("tfds_datasets", "Shapes3D", True),
    "dsprites": DatasetEntry("tfds_datasets", "DSprites", True),
    "smallnorb": DatasetEntry("tfds_datasets", "SmallNORB", True),
    "cars3d": DatasetEntry("tfds_datasets", "Cars3D", True),
    "sprites": DatasetEntry("tfds_datasets", "Sprites", True),
    # attributes, not a factor grid: transitions are one-attribute pairs
    "celeb_a": DatasetEntry("tfds_datasets", "CelebA64", True, factor_grid=False),
}


def check_dataset_name(name: str) -> None:
    """Raises ValueError naming the closest known dataset when `name` is unknown."""
    if name in DATASETS:
        return
    close = difflib.get_close_matches(name, DATASETS, n=1)
    hint = f" Did you mean {close[0]!r}?" if close else ""
    raise ValueError(
        f"unknown dataset {name!r}.{hint} Known datasets: {', '.join(sorted(DATASETS))}."
    )


def dataset_class(name: str) -> type:
    """The class of the dataset called `name` (its module imported on first use)."""
    check_dataset_name(name)
    entry = DATASETS[name]
    return getattr(importlib.import_module(f"causal_disent.data.{entry.module}"),
                   entry.attribute)


def get_dataset(name: str, data_dir: str | None = None):
    """The dataset called `name`; `data_dir` is where real datasets are read from."""
    constructor = dataset_class(name)
    return constructor(data_dir=data_dir) if DATASETS[name].reads_data_dir else constructor()


def dataset_from_config(data_config):
    """The dataset of a config's `data` section (`name`, optional `data_dir`)."""
    return get_dataset(data_config.name, data_dir=data_config.get("data_dir") or None)
