"""Datasets by name. A typo gets the closest known name back.

Procedural datasets are rendered by the library (offline, nothing to prepare); real
datasets are read from TFDS data prepared in `data_dir` (TFDS's default when None);
`files` reads a researcher's own dataset at `data.path` (own_files.py), and
`register_dataset` names a dataset object built in Python (own_data.ArrayDataset).
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
    reads_path: bool = False  # a researcher's own files: the constructor takes data.path


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
    "mpi3d_toy": DatasetEntry("tfds_datasets", "MPI3DToy", True),
    "mpi3d_realistic": DatasetEntry("tfds_datasets", "MPI3DRealistic", True),
    "mpi3d_real": DatasetEntry("tfds_datasets", "MPI3DReal", True),
    # attributes, not a factor grid: transitions are one-attribute pairs
    "celeb_a": DatasetEntry("tfds_datasets", "CelebA64", True, factor_grid=False),
    # a researcher's own images and labels, at config.data.path
    "files": DatasetEntry("own_files", "open_files_dataset", False, reads_path=True),
}

# Datasets built in Python and named by `register_dataset`, for this process.
_REGISTERED: dict[str, object] = {}


def register_dataset(name: str, dataset) -> None:
    """Names `dataset` (e.g. an own_data.ArrayDataset) so that a config's
    `data.name=name` trains and evaluates on it in this process. The name lives as
    long as the process: a run trained on it is loaded again after registering the
    same data under the same name."""
    if not isinstance(name, str) or not name or name in DATASETS:
        raise ValueError(f"register_dataset needs a new name, not one of the library's "
                         f"({', '.join(sorted(DATASETS))}); got {name!r}")
    if not hasattr(dataset, "images") or not hasattr(dataset, "image_shape"):
        raise ValueError(f"register_dataset({name!r}, ...) needs a dataset with `images` and "
                         f"`image_shape`, such as causal_disent.data.own_data.ArrayDataset")
    _REGISTERED[name] = dataset


def check_dataset_name(name: str) -> None:
    """Raises ValueError naming the closest known dataset when `name` is unknown."""
    if name in DATASETS or name in _REGISTERED:
        return
    known = [*DATASETS, *_REGISTERED]
    close = difflib.get_close_matches(name, known, n=1)
    hint = f" Did you mean {close[0]!r}?" if close else ""
    raise ValueError(
        f"unknown dataset {name!r}.{hint} Known datasets: {', '.join(sorted(known))}; a "
        f"dataset built in Python is named with causal_disent.data.registry.register_dataset "
        f"in the process that uses it."
    )


def dataset_class(name: str) -> type:
    """The class of the dataset called `name` (its module imported on first use)."""
    check_dataset_name(name)
    if name in _REGISTERED:
        return type(_REGISTERED[name])
    entry = DATASETS[name]
    return getattr(importlib.import_module(f"causal_disent.data.{entry.module}"),
                   entry.attribute)


def get_dataset(name: str, data_dir: str | None = None, path: str | None = None):
    """The dataset called `name`; `data_dir` is where real datasets are read from,
    `path` where `files` reads a researcher's own."""
    check_dataset_name(name)
    if name in _REGISTERED:
        return _REGISTERED[name]
    constructor, entry = dataset_class(name), DATASETS[name]
    if entry.reads_path:
        return constructor(path or "")
    return constructor(data_dir=data_dir) if entry.reads_data_dir else constructor()


def dataset_from_config(data_config):
    """The dataset of a config's `data` section (`name`, optional `data_dir`, `path`)."""
    return get_dataset(data_config.name, data_dir=data_config.get("data_dir") or None,
                       path=data_config.get("path") or None)
