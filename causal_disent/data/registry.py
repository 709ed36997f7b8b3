"""Datasets by name. A typo gets the closest known name back."""

import difflib
from collections.abc import Callable

from causal_disent.data.shapes3d_synth import Shapes3DSynth

# name -> constructor; each returns an object with the ground-truth interface
# (factor_names, factor_sizes, factor_values, num_images, image_shape, images, ...).
DATASETS: dict[str, Callable[[], object]] = {
    "shapes3d_synth": Shapes3DSynth,
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


def get_dataset(name: str):
    check_dataset_name(name)
    return DATASETS[name]()
