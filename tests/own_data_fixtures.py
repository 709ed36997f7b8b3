"""Small datasets of one's own, written in each format `files` reads (the tests'
fixtures for causal_disent/data/own_files.py).

The images draw their factors: a colour (channel and level), and a square's row and
column, so a model could learn them; the rows are shuffled, so that reading them
back on the grid is not the identity.
"""

from pathlib import Path

import numpy as np
from PIL import Image

FACTOR_NAMES = ("colour", "row", "column")
# 4 x 8 x 8 = 256 images: with half of them in the test split every action has test
# pairs, and the code cache's batch (256) fits.
GRID_SIZES = (4, 8, 8)
LABEL_NAMES = ("hue", "height", "width")
HALF_AND_HALF = "--config.data.split_fractions=(0.5,0.0,0.5)"


def grid_arrays(sizes=GRID_SIZES, seed: int = 1, side: int = 64) -> dict:
    """{images, factors, labels}: every combination of `sizes` once, rows shuffled;
    labels are the factors plus a little noise (CausalVAE's concepts)."""
    factors = np.stack(np.meshgrid(*[np.arange(s) for s in sizes], indexing="ij"),
                       -1).reshape(-1, len(sizes))
    factors = factors[np.random.default_rng(seed).permutation(len(factors))]
    images = np.zeros((len(factors), side, side, 3), np.uint8)
    cell = side // (max(sizes[1:]) + 1)
    for image, (colour, row, column) in zip(images, factors):
        image[..., colour % 3] = 60 * (1 + colour // 3)
        image[cell // 2 + row * cell: cell // 2 + (row + 1) * cell,
              cell // 2 + column * cell: cell // 2 + (column + 1) * cell] = 255
    noise = np.random.default_rng(seed + 1).normal(0, 0.1, factors.shape)
    return {"images": images, "factors": factors,
            "labels": (factors + noise).astype(np.float32)}


def write_npz(path: Path, compressed: bool = False, **changes) -> Path:
    """The grid as an `.npz` with names (and `changes` replacing or adding arrays)."""
    arrays = grid_arrays()
    arrays.update(factor_names=np.array(FACTOR_NAMES), label_names=np.array(LABEL_NAMES),
                  causal_graph=np.array([[0, 1, 1], [0, 0, 1], [0, 0, 0]]))
    arrays.update(changes)
    arrays = {key: value for key, value in arrays.items() if value is not None}
    (np.savez_compressed if compressed else np.savez)(path, **arrays)
    return path


def write_hdf5(path: Path) -> Path:
    import h5py

    arrays = grid_arrays()
    with h5py.File(path, "w") as handle:
        handle["images"] = arrays["images"]
        handle["factors"] = arrays["factors"]
        handle["factor_names"] = np.array(FACTOR_NAMES, dtype="S")
    return path


def write_image_folder(folder: Path, count: int | None = None, pairs: bool = True,
                       sizes_differ: bool = False) -> Path:
    """The grid's first `count` images (all: None) as PNG files with labels.csv and,
    off the grid, factors.csv and the authors' pairs.csv: each image with the next
    image whose factors differ in one value by one step."""
    folder.mkdir(parents=True, exist_ok=True)
    arrays = grid_arrays()
    images, factors, labels = (arrays[k][:count] for k in ("images", "factors", "labels"))
    files = [f"img_{i:04d}.png" for i in range(len(images))]
    for i, (name, image) in enumerate(zip(files, images)):
        if sizes_differ and i == len(files) - 1:
            image = image[:32, :32]
        Image.fromarray(image).save(folder / name)
    _write_csv(folder / "factors.csv", ["file", *FACTOR_NAMES],
               [[name, *map(str, row)] for name, row in zip(files, factors)])
    _write_csv(folder / "labels.csv", ["file", *LABEL_NAMES],
               [[name, *(f"{v:.4f}" for v in row)] for name, row in zip(files, labels)])
    if pairs:
        rows = []
        where = {tuple(row): i for i, row in enumerate(factors.tolist())}
        for i, row in enumerate(factors.tolist()):
            for f, name in enumerate(FACTOR_NAMES):
                for step in (1, -1):
                    moved = list(row)
                    moved[f] += step
                    if tuple(moved) in where:
                        rows.append([files[i], files[where[tuple(moved)]], name,
                                     str(row[f]), str(moved[f])])
        _write_csv(folder / "pairs.csv", ["input", "output", "variation", "source", "target"],
                   rows)
    return folder


def _write_csv(path: Path, header, rows) -> None:
    path.write_text("\n".join(",".join(row) for row in [header, *rows]) + "\n")
