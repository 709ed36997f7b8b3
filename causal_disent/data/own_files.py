"""Reading a researcher's own dataset from files: `--config.data.name=files
--config.data.path=P`, with P one of

  an `.npz` or HDF5 (`.h5`, `.hdf5`) file of arrays: `images` (uint8 [N, H, W, C]),
    optional `factors` [N, F] with `factor_names` and `factor_sizes`, `labels` [N, L]
    with `label_names`, `causal_graph` [L, L], and pairs `pair_x`, `pair_y`,
    `pair_action` with `pair_variables` (and optional `pair_split`);
  a folder of PNG / JPEG images with CSV files beside them: `factors.csv` and / or
    `labels.csv` (a `file` column, then one column per factor or concept),
    `causal_graph.csv` (the L x L 0/1 matrix, a header row of label names), and
    `pairs.csv` (`input, output, variation, source, target[, split]` as the CT-VAE
    authors write them, or `input, output, action[, split]` with actions named
    `<variable>+` / `<variable>-`).

Images are read on demand: an uncompressed `.npz` member is memory-mapped, an HDF5
dataset is read by rows, a folder's files are decoded when first asked for. The
formats in full, with an example per model family: docs/own_data.md.
"""

from __future__ import annotations

import csv
import os
import zipfile
from pathlib import Path

import numpy as np

from causal_disent.data.own_data import ArrayDataset, TransitionPairs

NAME = "files"
ARRAY_SUFFIXES = (".npz", ".h5", ".hdf5")
IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg")
# A folder's decoded images are kept in memory up to this size, else decoded on
# every read.
FOLDER_CACHE_BYTES = 2 << 30
_OPENED: dict[tuple, ArrayDataset] = {}


def open_files_dataset(path: str) -> ArrayDataset:
    """The dataset at `path` (see the module docstring); opened once per process and
    state of the files. ValueError naming the problem and its fix."""
    if not path:
        raise ValueError("the files dataset reads one's own data at a path (an .npz / .h5 "
                         "file or an image folder; docs/own_data.md), and none was given: "
                         "--config.data.path=P to train, --path=P for describe and show, "
                         "--data_path=P for evaluate")
    location = Path(path).expanduser()
    if not location.exists():
        raise ValueError(f"{path}: no such file or folder (the files dataset's path)")
    key = (str(location.resolve()), _state_of(location))
    if key not in _OPENED:
        _OPENED.clear()  # one dataset per process is the common case; keep memory bounded
        _OPENED[key] = _open(location)
    return _OPENED[key]


def _state_of(location: Path) -> tuple:
    files = [location] if location.is_file() else [location, *sorted(location.glob("*.csv"))]
    return tuple((str(f), f.stat().st_mtime_ns, f.stat().st_size) for f in files)


def _open(location: Path) -> ArrayDataset:
    if location.is_dir():
        return read_image_folder(location)
    suffix = location.suffix.lower()
    if suffix == ".npz":
        return dataset_from_arrays(NpzArrays(location), str(location))
    if suffix in (".h5", ".hdf5"):
        return dataset_from_arrays(Hdf5Arrays(location), str(location))
    raise ValueError(f"data.path={location}: expected an image folder or a file ending in "
                     f"{', '.join(ARRAY_SUFFIXES)}")


# --------------------------------------------------------------------------- #
# Arrays files
# --------------------------------------------------------------------------- #
def dataset_from_arrays(arrays, where: str) -> ArrayDataset:
    """An ArrayDataset from a mapping of the named arrays (module docstring)."""
    unknown = sorted(set(arrays.keys()) - set(ARRAY_KEYS))
    if unknown:
        raise ValueError(f"{where}: unknown array(s) {unknown}; known: {', '.join(ARRAY_KEYS)}")
    if "images" not in arrays.keys():
        raise ValueError(f"{where}: no `images` array (uint8 [N, H, W, C])")

    def get(key, as_strings=False):
        if key not in arrays.keys():
            return None
        value = arrays.load(key)
        return tuple(str(v) for v in np.asarray(value).astype(str).tolist()) if as_strings else value

    factor_names = get("factor_names", as_strings=True)
    pairs = None
    if "pair_x" in arrays.keys() or "pair_action" in arrays.keys():
        missing = [key for key in ("pair_x", "pair_y", "pair_action") if key not in arrays.keys()]
        if missing:
            raise ValueError(f"{where}: pairs need pair_x, pair_y and pair_action; missing "
                             f"{', '.join(missing)}")
        variables = get("pair_variables", as_strings=True) or factor_names
        if variables is None:
            raise ValueError(f"{where}: name the pairs' moved variables in `pair_variables` "
                             f"(action v moves variable v up, V + v moves it down)")
        split = get("pair_split", as_strings=True)
        pairs = TransitionPairs(get("pair_x"), get("pair_y"), get("pair_action"), variables,
                                None if split is None else np.array(split))
    return ArrayDataset(
        arrays.images(), get("factors"), factor_names=factor_names,
        factor_sizes=get("factor_sizes"), labels=get("labels"),
        label_names=get("label_names", as_strings=True), causal_graph=get("causal_graph"),
        pairs=pairs, name=NAME)


ARRAY_KEYS = ("images", "factors", "factor_names", "factor_sizes", "labels", "label_names",
              "causal_graph", "pair_x", "pair_y", "pair_action", "pair_variables", "pair_split")


class NpzArrays:
    """The arrays of an `.npz` file; `images` memory-mapped when stored uncompressed
    (`np.savez`), read into memory when compressed (`np.savez_compressed`)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        try:
            self._file = np.load(path, allow_pickle=False)
        except (OSError, ValueError, zipfile.BadZipFile) as error:
            raise ValueError(f"{path}: not a readable .npz file ({error})") from None

    def keys(self):
        return list(self._file.keys())

    def load(self, key):
        try:
            return self._file[key]
        except ValueError as error:  # object arrays need pickle, which is never allowed
            raise ValueError(f"{self.path}: array {key!r} cannot be read without pickle "
                             f"({error}); store strings as a numpy str array") from None

    def images(self):
        mapped = memory_map_npz_member(self.path, "images")
        return mapped if mapped is not None else self.load("images")


def memory_map_npz_member(path: Path, key: str) -> np.memmap | None:
    """Member `key` of an `.npz` as a read-only memmap, or None when it is compressed
    (or otherwise not mappable). An `.npz` is a zip of `.npy` files; a stored member's
    bytes lie contiguous in the zip after its local header."""
    with zipfile.ZipFile(path) as archive:
        info = archive.getinfo(f"{key}.npy")
        if info.compress_type != zipfile.ZIP_STORED:
            return None
    with open(path, "rb") as handle:
        handle.seek(info.header_offset)
        local_header = handle.read(30)
        name_length = int.from_bytes(local_header[26:28], "little")
        extra_length = int.from_bytes(local_header[28:30], "little")
        handle.seek(info.header_offset + 30 + name_length + extra_length)
        version = np.lib.format.read_magic(handle)
        if version == (1, 0):
            shape, fortran, dtype = np.lib.format.read_array_header_1_0(handle)
        elif version == (2, 0):
            shape, fortran, dtype = np.lib.format.read_array_header_2_0(handle)
        else:
            return None
        offset = handle.tell()
    if fortran or dtype.hasobject:
        return None
    return np.memmap(path, dtype=dtype, mode="r", offset=offset, shape=shape)


class Hdf5Arrays:
    """The datasets of an HDF5 file (top level); `images` read by rows on demand."""

    def __init__(self, path: Path) -> None:
        try:
            import h5py
        except ImportError:
            raise ValueError(f"{path}: reading HDF5 needs h5py: pip install h5py") from None
        self.path = path
        try:
            self._file = h5py.File(path, "r")
        except OSError as error:
            raise ValueError(f"{path}: not a readable HDF5 file ({error})") from None

    def keys(self):
        return list(self._file.keys())

    def load(self, key):
        value = self._file[key][()]
        if isinstance(value, np.ndarray) and value.dtype.kind in "OS":
            value = np.array([v.decode() if isinstance(v, bytes) else str(v) for v in value])
        return value

    def images(self):
        return self._file["images"]  # h5py reads sorted row indices (ArrayDataset sorts)


# --------------------------------------------------------------------------- #
# Image folders
# --------------------------------------------------------------------------- #
def read_image_folder(folder: Path) -> ArrayDataset:
    """An ArrayDataset of the images in `folder` with the CSV files beside them."""
    factor_table = read_table(folder / "factors.csv")
    label_table = read_table(folder / "labels.csv")
    if factor_table is None and label_table is None:
        files = sorted(p.name for p in folder.iterdir() if p.suffix.lower() in IMAGE_SUFFIXES)
        if not files:
            raise ValueError(f"{folder}: no {', '.join(IMAGE_SUFFIXES)} images and no "
                             f"factors.csv / labels.csv")
    else:
        for name, table in (("factors.csv", factor_table), ("labels.csv", label_table)):
            if table is not None and "file" not in table:
                raise ValueError(f"{folder / name}: needs a `file` column naming each image, "
                                 f"then one column per value; its columns are {list(table)}")
        files = list((factor_table or label_table)["file"])
        if factor_table is not None and label_table is not None \
                and list(label_table["file"]) != files:
            raise ValueError(f"{folder}: factors.csv and labels.csv must list the same files "
                             f"in the same order")
    images = ImageFolder(folder, files)
    factors = names = None
    if factor_table is not None:
        names = [column for column in factor_table if column != "file"]
        factors = numeric_columns(factor_table, names, folder / "factors.csv")
    labels = label_names = None
    if label_table is not None:
        label_names = [column for column in label_table if column != "file"]
        labels = numeric_columns(label_table, label_names, folder / "labels.csv")
    graph = read_causal_graph(folder / "causal_graph.csv", label_names)
    pairs = read_pairs(folder / "pairs.csv", files, names)
    return ArrayDataset(images, factors, factor_names=names, labels=labels,
                        label_names=label_names, causal_graph=graph, pairs=pairs, name=NAME)


class ImageFolder:
    """Image files as an array [N, H, W, C] uint8 decoded on demand (kept once decoded
    while they fit FOLDER_CACHE_BYTES). Every file's size and mode are checked when
    the folder is opened, from the headers alone."""

    def __init__(self, folder: Path, files: list[str]) -> None:
        from PIL import Image, UnidentifiedImageError

        self.paths = [folder / name for name in files]
        shapes = []
        for path in self.paths:
            if not path.is_file():
                raise ValueError(f"{folder}: {path.name} is listed but not in the folder")
            try:
                with Image.open(path) as image:
                    shapes.append((image.size, image.mode))
            except (UnidentifiedImageError, OSError) as error:
                raise ValueError(f"{path}: not a readable image ({error})") from None
        first_size = shapes[0][0]
        for path, (size, _) in zip(self.paths, shapes):
            if size != first_size:
                raise ValueError(
                    f"{folder}: images of different sizes: {self.paths[0].name} is "
                    f"{first_size[0]}x{first_size[1]} and {path.name} is {size[0]}x{size[1]} "
                    f"(width x height); resize them to one size first")
        self.grayscale = all(mode in ("L", "1") for _, mode in shapes)
        channels = 1 if self.grayscale else 3
        self.shape = (len(files), first_size[1], first_size[0], channels)
        self.dtype = np.dtype(np.uint8)
        cached = int(np.prod(self.shape)) <= FOLDER_CACHE_BYTES
        self._cache = np.zeros(self.shape, np.uint8) if cached else None
        self._decoded = np.zeros(len(files), bool)

    def __len__(self) -> int:
        return self.shape[0]

    def __getitem__(self, rows) -> np.ndarray:
        rows = np.atleast_1d(np.asarray(rows, np.int64))
        if self._cache is None:
            return np.stack([self._decode(row) for row in rows])
        for row in rows[~self._decoded[rows]]:
            self._cache[row] = self._decode(row)
            self._decoded[row] = True
        return self._cache[rows]

    def _decode(self, row: int) -> np.ndarray:
        from PIL import Image

        with Image.open(self.paths[row]) as image:
            pixels = np.asarray(image.convert("L" if self.grayscale else "RGB"), np.uint8)
        return pixels[..., None] if self.grayscale else pixels


def read_table(path: Path) -> dict[str, list[str]] | None:
    """A CSV file as {column: values}, None when absent; it must have a `file` column
    first (factors / labels) and one value per column on every row."""
    if not path.is_file():
        return None
    with open(path, newline="") as handle:
        rows = list(csv.reader(handle))
    rows = [row for row in rows if any(cell.strip() for cell in row)]
    if not rows or len(rows) < 2:
        raise ValueError(f"{path}: needs a header row and at least one row of values")
    header = [cell.strip() for cell in rows[0]]
    for number, row in enumerate(rows[1:], start=2):
        if len(row) != len(header):
            raise ValueError(f"{path}: line {number} has {len(row)} values for the "
                             f"{len(header)} columns {header}")
    if len(set(header)) != len(header):
        raise ValueError(f"{path}: repeated column names in {header}")
    table = {column: [row[i].strip() for row in rows[1:]] for i, column in enumerate(header)}
    return table


def numeric_columns(table: dict, columns: list[str], path: Path) -> np.ndarray:
    """[N, len(columns)] float64 of the table's columns; ValueError at the first cell
    that is not a number."""
    if "file" not in table or not columns:
        raise ValueError(f"{path}: needs a `file` column and at least one value column")
    values = np.empty((len(table["file"]), len(columns)), np.float64)
    for j, column in enumerate(columns):
        for i, cell in enumerate(table[column]):
            try:
                values[i, j] = float(cell)
            except ValueError:
                raise ValueError(f"{path}: {column!r} of {table['file'][i]} is {cell!r}, not a "
                                 f"number (categories take integer codes)") from None
    if values.size and np.all(values == np.round(values)):
        return values.astype(np.int64)
    return values


def read_causal_graph(path: Path, label_names) -> np.ndarray | None:
    if not path.is_file():
        return None
    with open(path, newline="") as handle:
        rows = [row for row in csv.reader(handle) if row]
    header = [cell.strip() for cell in rows[0]]
    if label_names is None:
        raise ValueError(f"{path}: a causal graph is over the concepts of labels.csv, "
                         f"which is missing")
    if header != list(label_names):
        raise ValueError(f"{path}: its header {header} must name the labels.csv concepts "
                         f"{list(label_names)} in order")
    try:
        return np.array([[int(cell) for cell in row] for row in rows[1:]])
    except ValueError:
        raise ValueError(f"{path}: the matrix must hold 0 and 1 only") from None


def read_pairs(path: Path, files: list[str], factor_names) -> TransitionPairs | None:
    """`pairs.csv` as TransitionPairs between the folder's rows."""
    table = read_table(path)
    if table is None:
        return None
    row_of = {name: row for row, name in enumerate(files)}
    for column in ("input", "output"):
        if column not in table:
            raise ValueError(f"{path}: needs `input` and `output` columns (image file names)")
        for name in table[column]:
            if name not in row_of:
                raise ValueError(f"{path}: pair {column} {name!r} is not an image of the "
                                 f"dataset (not listed, or not in the folder)")
    x = np.array([row_of[name] for name in table["input"]], np.int64)
    y = np.array([row_of[name] for name in table["output"]], np.int64)
    if {"variation", "source", "target"} <= set(table):
        variables, action = _actions_from_variations(table, factor_names, path)
    elif "action" in table:
        variables, action = _actions_from_names(table["action"], factor_names, path)
    else:
        raise ValueError(f"{path}: name each pair's action, in columns `variation, source, "
                         f"target` (the CT-VAE authors') or `action` (<variable>+ / -)")
    split = np.array(table["split"]) if "split" in table else None
    return TransitionPairs(x, y, action, variables, split)


def _variable_order(names: set[str], factor_names) -> tuple[str, ...]:
    """The factors' order for variables that are factors, sorted names otherwise."""
    if factor_names and names <= set(factor_names):
        return tuple(name for name in factor_names if name in names)
    return tuple(sorted(names))


def _actions_from_variations(table, factor_names, path: Path):
    variables = _variable_order(set(table["variation"]), factor_names)
    index = {name: v for v, name in enumerate(variables)}
    action = np.empty(len(table["variation"]), np.int32)
    for i, (variable, source, target) in enumerate(
            zip(table["variation"], table["source"], table["target"])):
        try:
            step = float(target) - float(source)
        except ValueError:
            raise ValueError(f"{path}: pair {i}: source {source!r} and target {target!r} must "
                             f"be numbers (the direction of the move is their order)") from None
        if step == 0:
            raise ValueError(f"{path}: pair {i} moves {variable!r} from {source} to itself")
        action[i] = index[variable] + (0 if step > 0 else len(variables))
    return variables, action


def _actions_from_names(names: list[str], factor_names, path: Path):
    for i, name in enumerate(names):
        if len(name) < 2 or name[-1] not in "+-":
            raise ValueError(f"{path}: pair {i}'s action {name!r} must be a variable name "
                             f"followed by + or - (e.g. hue+)")
    variables = _variable_order({name[:-1] for name in names}, factor_names)
    index = {name: v for v, name in enumerate(variables)}
    action = np.array([index[name[:-1]] + (len(variables) if name[-1] == "-" else 0)
                       for name in names], np.int32)
    return variables, action


def save_npz(path: str | os.PathLike, dataset, chunk_size: int = 4096) -> None:
    """Writes `dataset` (a built-in dataset or an ArrayDataset) in the `.npz` format
    `files` reads and memory-maps: images in flat-index order, rendered and written a
    chunk at a time (an exported Shapes3D is 5.9 GB), with their factor indices and
    sizes, and concept labels and graph where the dataset has them."""
    index = np.arange(dataset.num_images)
    arrays = {}
    if getattr(dataset, "num_factors", 0):
        arrays.update(factors=dataset.index_to_factors(index),
                      factor_names=np.array(dataset.factor_names),
                      factor_sizes=np.array(dataset.factor_sizes))
    if getattr(dataset, "label_names", None) is not None:
        arrays.update(labels=dataset.labels(index), label_names=np.array(dataset.label_names))
        if getattr(dataset, "causal_graph", None) is not None:
            arrays["causal_graph"] = np.asarray(dataset.causal_graph)
    header = {"descr": np.lib.format.dtype_to_descr(np.dtype(np.uint8)), "fortran_order": False,
              "shape": (dataset.num_images, *dataset.image_shape)}
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED, allowZip64=True) as archive:
        with archive.open("images.npy", "w", force_zip64=True) as member:
            np.lib.format.write_array_header_2_0(member, header)
            for start in range(0, dataset.num_images, chunk_size):
                member.write(dataset.images(index[start:start + chunk_size]).tobytes())
        for key, value in arrays.items():
            with archive.open(f"{key}.npy", "w") as member:
                np.lib.format.write_array(member, np.asarray(value), allow_pickle=False)
