"""The archive of Reed et al. 2015 ("Deep Visual Analogy-Making", NeurIPS), which
holds both Cars3D (`data/cars/*.mat`) and Sprites (`data/sprites/*.mat`).

It cannot be downloaded automatically (no stable mirror, no checksums in TFDS), so
the builders read it from TFDS's manual directory, streaming the .tar.gz without
unpacking it (the cars alone are ~0.9 GB of .mat files).
"""

from __future__ import annotations

import io
import os
import tarfile
import zlib
from collections.abc import Iterator

import numpy as np
from PIL import Image

ARCHIVE_NAME = "nips2015-analogy-data.tar.gz"
ARCHIVE_URL = "http://www.scottreed.info/files/nips2015-analogy-data.tar.gz"
OUTPUT_SIZE = 64  # both datasets are stored as 64x64x3


def manual_download_instructions(name: str) -> str:
    """Where to get the archive and where TFDS expects it."""
    return (
        f"Download {ARCHIVE_NAME} (about 1 GB) from {ARCHIVE_URL}, the data of Reed et al. "
        "2015, 'Deep Visual Analogy-Making' (linked from http://www.scottreed.info), and "
        "put it, "
        "still compressed and under that exact name, in the manual directory: by default "
        f"<data_dir>/downloads/manual/{ARCHIVE_NAME}, or in the folder given to "
        f"`--manual_dir`. Then run:\n{build_command(name, '<data_dir>')}"
    )


def build_command(name: str, data_dir: str) -> str:
    """Commands that build `name` from the archive as ArrayRecord."""
    return (
        f"# put {ARCHIVE_NAME} (from {ARCHIVE_URL}) in {data_dir}/downloads/manual/, then\n"
        "# either (no TensorFlow needed):\n"
        f"python -m causal_disent.data.tfds_builders.reed2015 {name} --data_dir={data_dir}\n"
        "# or, with TensorFlow installed (the `tfds` CLI of TFDS 4.9 imports it):\n"
        f"tfds build {name} --imports=causal_disent.data.tfds_builders.{name} "
        f"--data_dir={data_dir} --file_format=array_record"
    )


def prepare(name: str, data_dir: str, manual_dir: str | None = None) -> None:
    """Builds `name` ("cars3d" or "sprites") as ArrayRecord, without TensorFlow."""
    import importlib

    import tensorflow_datasets as tfds

    module = importlib.import_module(f"causal_disent.data.tfds_builders.{name}")
    builder = {"cars3d": "Cars3d", "sprites": "Sprites"}[name]
    builder = getattr(module, builder)(data_dir=data_dir, file_format="array_record")
    config = tfds.download.DownloadConfig(manual_dir=manual_dir) if manual_dir else None
    builder.download_and_prepare(download_config=config)


class CorruptArchiveError(ValueError):
    """The archive is truncated or damaged (says which file and how to fix it)."""


def _corrupt(path: str, what: str, error: Exception) -> CorruptArchiveError:
    return CorruptArchiveError(
        f"{path} is truncated or corrupt ({what}: {error}). Delete it and download it "
        f"again from {ARCHIVE_URL}."
    )


def iter_mat_files(
    archive_path: str, folder: str, dataset_name: str, names_only: bool = False
) -> Iterator[tuple[str, bytes | None]]:
    """(member name, bytes) of every `.mat` under `folder` (e.g. "data/cars/").

    Members come in archive order; callers sort if they need a stable order.
    With `names_only`, the bytes are None (a cheaper listing pass).
    Raises FileNotFoundError when the archive is missing and CorruptArchiveError
    when it cannot be read to its end.
    """
    path = os.fspath(archive_path)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"{path} not found. {manual_download_instructions(dataset_name)}")
    found = 0
    try:
        with tarfile.open(path, mode="r:gz") as archive:
            for member in archive:
                name = member.name.lstrip("./")
                if member.isfile() and name.startswith(folder) and name.endswith(".mat"):
                    found += 1
                    yield name, None if names_only else archive.extractfile(member).read()
    except (tarfile.TarError, EOFError, zlib.error, OSError) as error:
        raise _corrupt(path, type(error).__name__, error) from error
    if not found:
        raise CorruptArchiveError(
            f"{path} has no .mat files under {folder}; it is not {ARCHIVE_NAME} or it is "
            f"incomplete. Download it again from {ARCHIVE_URL}."
        )


def load_mat(name: str, data: bytes) -> dict[str, object]:
    """Variables of a MATLAB file, in MATLAB's axis order, whatever its version.

    v5 files are read with scipy; v7.3 files are HDF5 and need h5py. h5py shows
    MATLAB arrays transposed, so they are transposed back, and cell arrays (HDF5
    object references) become numpy object arrays of the same (MATLAB) shape.
    """
    import scipy.io

    try:
        major, _ = scipy.io.matlab.matfile_version(io.BytesIO(data))
        if major < 2:
            return scipy.io.loadmat(io.BytesIO(data))
        return _load_mat_v73(io.BytesIO(data))
    except (ValueError, OSError, zlib.error, scipy.io.matlab.MatReadError) as error:
        raise CorruptArchiveError(
            f"{name} in {ARCHIVE_NAME} cannot be read as a MATLAB file ({error}). Delete "
            f"the archive and download it again from {ARCHIVE_URL}."
        ) from error


def _load_mat_v73(stream: io.BytesIO) -> dict[str, object]:
    try:
        import h5py
    except ImportError as error:
        raise ImportError("this .mat file is MATLAB v7.3 (HDF5): pip install h5py") from error

    def convert(file, value):
        array = value[()]
        if array.dtype == h5py.ref_dtype:
            cells = np.empty(array.shape, object)
            for position, reference in np.ndenumerate(array):
                cells[position] = convert(file, file[reference])
            return cells.T
        return np.asarray(array).T

    with h5py.File(stream, "r") as file:
        return {key: convert(file, file[key]) for key in file if not key.startswith("#")}


def resize_rgb(image: np.ndarray) -> Image.Image:
    """[H, W, 3] uint8 -> 64x64 PIL image (Lanczos, as disentanglement_lib)."""
    pil = Image.fromarray(np.ascontiguousarray(image), "RGB")
    if pil.size != (OUTPUT_SIZE, OUTPUT_SIZE):
        pil = pil.resize((OUTPUT_SIZE, OUTPUT_SIZE), Image.Resampling.LANCZOS)
    return pil


def _main() -> None:
    """The command: its archive found, or damaged, or a package missing: one line."""
    from causal_disent.data.tfds_reading import default_data_dir
    from causal_disent.utils import arguments

    parser = arguments.OneLineArgumentParser(description="Build Cars3D or Sprites (ArrayRecord).")
    parser.add_argument("name", choices=("cars3d", "sprites"))
    parser.add_argument("--data_dir", default=default_data_dir())
    parser.add_argument(
        "--manual_dir", default=None, help=f"folder holding {ARCHIVE_NAME} "
        "(default <data_dir>/downloads/manual)"
    )
    args = parser.parse_args()
    manual_dir = args.manual_dir or os.path.join(args.data_dir, "downloads", "manual")
    archive = os.path.join(manual_dir, ARCHIVE_NAME)
    if not os.path.isfile(archive):
        raise SystemExit(f"error: {archive} does not exist: download {ARCHIVE_URL} (about "
                         f"1 GB) and put it there, still compressed, or pass --manual_dir="
                         f"<the folder holding it>")
    # The builders raise the package module's error, not this __main__ copy's.
    from causal_disent.data.tfds_builders import reed2015
    try:
        reed2015.prepare(args.name, args.data_dir, args.manual_dir)
    except (reed2015.CorruptArchiveError, ImportError) as error:
        raise SystemExit(f"error: {error}") from None


if __name__ == "__main__":
    _main()
