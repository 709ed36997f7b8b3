"""Reading prepared TFDS data without TensorFlow: opening ArrayRecord splits with
encoded images, decoding them, reading records at random, caching derived tables
next to the data, and mapping factor tuples to records.

`tfds_datasets.py` builds the dataset classes on these.
"""

from __future__ import annotations

import contextlib
import io
import logging
import os
from collections.abc import Sequence

import numpy as np
from PIL import Image

FACTOR_INDEX_FILE = "causal_disent_factor_index.npy"
ATTRIBUTES_FILE = "causal_disent_attributes.npy"
_READ_CHUNK = 4096  # records deserialised at once when scanning labels
_BUILD_FLAGS = "--file_format=array_record"


class DatasetNotPreparedError(FileNotFoundError):
    """The dataset is not in the data dir in a form we can read (says how to fix)."""


class IncompleteGridError(ValueError):
    """The prepared records do not form the full factor grid."""


def default_data_dir() -> str:
    """TFDS's default data dir: $TFDS_DATA_DIR, else ~/tensorflow_datasets."""
    return os.environ.get("TFDS_DATA_DIR", os.path.expanduser("~/tensorflow_datasets"))


def official_build_command(name: str, data_dir: str) -> str:
    """The command that prepares an official TFDS dataset as ArrayRecord."""
    return (
        "pip install tensorflow-cpu h5py  # TFDS's official generators need TensorFlow\n"
        f"tfds build {name} --data_dir={data_dir} {_BUILD_FLAGS}"
    )


# --------------------------------------------------------------------------- #
# Opening prepared data
# --------------------------------------------------------------------------- #
def open_split(name: str, split: str, data_dir: str, how_to_prepare: str):
    """Random-access source over one prepared split; images are left encoded.

    Args:
      name: TFDS name (its builder must be registered, i.e. imported).
      split: split name.
      data_dir: TFDS data dir.
      how_to_prepare: command(s) shown when the data is missing.
    Returns:
      (source, data_path): a `tfds` ArrayRecord data source whose examples keep
      every Image feature as encoded bytes, and `<data_dir>/<name>/<version>`.
    Raises:
      DatasetNotPreparedError: the dataset is missing or not in ArrayRecord.
    """
    import tensorflow_datasets as tfds  # deferred: heavy, and optional for procedural data

    with _without_missing_folder_warning(), _damaged_as_not_prepared(name, data_dir,
                                                                     how_to_prepare):
        builder = tfds.builder(name, data_dir=data_dir)
        where = os.fspath(builder.data_path)
        prepared = builder.is_prepared()
    if not prepared:
        raise DatasetNotPreparedError(
            f"{name} is not prepared: looked for {where} (data_dir={data_dir}).\n"
            f"Prepare it with:\n{how_to_prepare}"
        )
    file_format = builder.info.file_format
    if file_format is None or file_format.value != "array_record":
        raise DatasetNotPreparedError(
            f"{name} in {where} is stored as {file_format and file_format.value}, but "
            "random access without TensorFlow needs ArrayRecord. Convert it (the tfds CLI "
            "needs TensorFlow) with:\n"
            f"tfds convert_format --dataset_version_dir={where} --out_file_format=array_record\n"
            f"or rebuild it with:\n{how_to_prepare}"
        )
    skip_images = {
        key: tfds.decode.SkipDecoding()
        for key, feature in builder.info.features.items()
        if isinstance(feature, tfds.features.Image)
    }
    with _damaged_as_not_prepared(name, data_dir, how_to_prepare):
        source = tfds.data_source(
            name, split=split, data_dir=data_dir, download=False, decoders=skip_images
        )
        if len(source):
            source[0]  # opens the shards now: a missing one fails here, not mid-run
    return source, where


@contextlib.contextmanager
def _damaged_as_not_prepared(name: str, data_dir: str, how_to_prepare: str):
    """TFDS's own error on a prepared dataset it cannot read (a damaged
    dataset_info.json, a folder of another TFDS version, missing shards) as a
    DatasetNotPreparedError naming the folder and how to prepare it again."""
    try:
        yield
    except DatasetNotPreparedError:
        raise
    except Exception as error:  # ParseError, AssertionError, OSError, ...: TFDS's own
        reason = " ".join(str(error).split())
        reason = reason if len(reason) <= 300 else reason[:300] + " ..."
        raise DatasetNotPreparedError(
            f"{name} in {os.path.join(data_dir, name)} cannot be read ({type(error).__name__}: "
            f"{reason}); it is damaged or was prepared by another version of TFDS: delete "
            f"that folder and prepare it again with:\n{how_to_prepare}") from error


class _MissingFolderWarning(logging.Filter):
    """TFDS warns "Variant folder ... has no dataset_info.json" when the dataset is
    not prepared, which the error that follows says better, with the fix."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith("Variant folder")


@contextlib.contextmanager
def _without_missing_folder_warning():
    quiet = _MissingFolderWarning()
    logger = logging.getLogger("absl")
    logger.addFilter(quiet)
    try:
        yield
    finally:
        logger.removeFilter(quiet)


def decode_images(encoded: Sequence[bytes], shape: tuple[int, int, int]) -> np.ndarray:
    """PNG/JPEG bytes -> [B, *shape] uint8 (resized with Lanczos if the size differs)."""
    height, width, channels = shape
    out = np.empty((len(encoded), *shape), np.uint8)
    for i, data in enumerate(encoded):
        with Image.open(io.BytesIO(data)) as image:
            image = image.convert("L" if channels == 1 else "RGB")
            if image.size != (width, height):
                image = image.resize((width, height), Image.Resampling.LANCZOS)
            out[i] = np.asarray(image).reshape(shape)
    return out


def read_records(sources: Sequence, offsets: np.ndarray, records: np.ndarray) -> list[dict]:
    """Examples at global record indices over splits concatenated in order."""
    split_of = np.searchsorted(offsets, records, side="right") - 1
    examples: list[dict | None] = [None] * len(records)
    for split in np.unique(split_of):
        positions = np.flatnonzero(split_of == split)
        local = (records[positions] - offsets[split]).tolist()
        for position, example in zip(positions, sources[split].__getitems__(local)):
            examples[position] = example
    return examples


def scan_records(sources: Sequence, read_row) -> np.ndarray:
    """[N, K] int64 of `read_row(example)` over every record of every source."""
    rows = []
    for source in sources:
        for start in range(0, len(source), _READ_CHUNK):
            keys = list(range(start, min(start + _READ_CHUNK, len(source))))
            rows.extend(read_row(example) for example in source.__getitems__(keys))
    return np.asarray(rows, np.int64).reshape(len(rows), -1)


def save_cache(path: str, array: np.ndarray) -> None:
    """Writes atomically; a read-only data dir only costs a rebuild next time."""
    temporary = f"{path}.tmp{os.getpid()}"
    try:
        with open(temporary, "wb") as f:
            np.save(f, array)
        os.replace(temporary, path)
    except OSError as error:
        logging.warning("could not cache %s (%s); it will be rebuilt on next load", path, error)


def load_cache(path: str) -> np.ndarray | None:
    try:
        return np.load(path, allow_pickle=False)
    except (OSError, ValueError):
        return None


# --------------------------------------------------------------------------- #
# Factor lookup
# --------------------------------------------------------------------------- #
def build_factor_index(
    labels: np.ndarray, factor_names: Sequence[str], factor_sizes: Sequence[int]
) -> np.ndarray:
    """Record of every flat factor index, from the records' labels.

    Args:
      labels: [N, F] int factor indices of the records, -1 rows for records that
        are not part of the grid (e.g. other Sprites frames).
      factor_names, factor_sizes: the grid.
    Returns:
      [prod(sizes)] int64: record index of each flat index (last factor fastest).
    Raises:
      IncompleteGridError naming an out-of-range label, a duplicate or the first
      missing factor tuple.
    """
    sizes = np.asarray(factor_sizes, np.int64)
    kept = np.flatnonzero(labels[:, 0] >= 0)
    grid_labels = labels[kept]
    out_of_range = (grid_labels < 0) | (grid_labels >= sizes)
    if out_of_range.any():
        row, column = np.argwhere(out_of_range)[0]
        raise IncompleteGridError(
            f"record {kept[row]} has {factor_names[column]}={grid_labels[row, column]}, "
            f"outside [0, {sizes[column] - 1}]"
        )
    strides = np.array([np.prod(sizes[i + 1 :]) for i in range(len(sizes))], np.int64)
    flat = grid_labels @ strides
    num_images = int(np.prod(sizes))
    counts = np.bincount(flat, minlength=num_images)

    def describe(flat_index: int) -> str:
        values = np.unravel_index(flat_index, tuple(sizes))
        return ", ".join(f"{n}={int(v)}" for n, v in zip(factor_names, values))

    if (counts > 1).any():
        raise IncompleteGridError(f"several records have ({describe(np.argmax(counts > 1))})")
    if (counts == 0).any():
        missing = np.flatnonzero(counts == 0)
        raise IncompleteGridError(
            f"{len(missing)} of {num_images} factor tuples have no record; the first "
            f"missing is ({describe(missing[0])}). Re-prepare the dataset."
        )
    table = np.empty(num_images, np.int64)
    table[flat] = kept
    return table
