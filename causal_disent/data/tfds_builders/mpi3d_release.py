"""The MPI3D release (Gondal et al., "On the Transfer of Inductive Bias from Simulation
to the Real World: a New Disentanglement Dataset", NeurIPS 2019): a robot arm moving
an object in front of a camera, in three variants of one scene, each a manually
downloaded `.npz`:

  mpi3d_toy.npz        simple renders
  mpi3d_realistic.npz  realistic renders
  mpi3d_real.npz       photographs of the real platform

Each holds one array, `images`, uint8 [N, 64, 64, 3], ordered row-major over the
factors (object_color, object_shape, object_size, camera_height, background_color,
horizontal_axis, vertical_axis), the last fastest. The current release has 6 object
colours and 6 shapes, (6, 6, 2, 3, 3, 40, 40) = 1 036 800 images; the earlier
competition release (and the later mpi3d_complex) had 4 and 4, (4, 4, 2, 3, 3, 40, 40)
= 460 800, the sizes disentanglement_lib's loader states. A file's grid is told by
its image count; any other count is refused.

The files are read as a stream (the header first, then a few thousand images at a
time), so checking a file reads only its header and building never holds the 12.7 GB
of the current release in memory. This module needs no TensorFlow Datasets; the
builders are in `mpi3d.py`, the command that runs them in `build_mpi3d.py`:

  python -m causal_disent.data.tfds_builders.build_mpi3d mpi3d_real --data_dir=DATA_DIR
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import os
import zipfile
import zlib
from collections.abc import Iterator, Sequence

import numpy as np

RELEASE_URL = "https://github.com/rr-learning/disentanglement_dataset"
NAMES = ("mpi3d_toy", "mpi3d_realistic", "mpi3d_real")
IMAGES_KEY = "images"
IMAGE_SHAPE = (64, 64, 3)

FACTOR_NAMES = (
    "object_color", "object_shape", "object_size", "camera_height", "background_color",
    "horizontal_axis", "vertical_axis",
)
# The values of the current release. The two axes are the robot arm's two degrees
# of freedom, 40 steps each.
COLOR_NAMES = ("white", "green", "red", "blue", "brown", "olive")
SHAPE_NAMES = ("cone", "cube", "cylinder", "hexagonal", "pyramid", "sphere")
SIZE_NAMES = ("small", "large")
CAMERA_HEIGHT_NAMES = ("top", "center", "bottom")
BACKGROUND_NAMES = ("purple", "sea green", "salmon")
AXIS_STEPS = 40

GRID_SIZES = (6, 6, 2, 3, 3, AXIS_STEPS, AXIS_STEPS)  # the current release
EARLIER_GRID_SIZES = (4, 4, 2, 3, 3, AXIS_STEPS, AXIS_STEPS)  # the competition release
KNOWN_GRIDS = (GRID_SIZES, EARLIER_GRID_SIZES)
_IMAGES_PER_READ = 2048  # 25 MB of pixels per read


class ReleaseFileError(ValueError):
    """The .npz is not an MPI3D release file (says what is wrong and how to fix it)."""


@dataclasses.dataclass(frozen=True)
class ReleaseFile:
    """A checked release file: where it is and the grid its image count gives."""

    path: str
    num_images: int
    factor_sizes: tuple[int, ...]


def file_name(name: str) -> str:
    """The release's file of dataset `name` ("mpi3d_real" -> "mpi3d_real.npz")."""
    return f"{name}.npz"


def manual_download_instructions(name: str) -> str:
    """Where to get the file and where TFDS expects it."""
    return (
        f"Download {file_name(name)} from the MPI3D release, {RELEASE_URL} (Gondal et al. "
        "2019, 'On the Transfer of Inductive Bias from Simulation to the Real World: a New "
        "Disentanglement Dataset'), and put it, under that exact name, in the manual "
        f"directory: by default <data_dir>/downloads/manual/{file_name(name)}, or in the "
        f"folder given to `--manual_dir`. Then run:\n{build_command(name, '<data_dir>')}"
    )


def build_command(name: str, data_dir: str) -> str:
    """Commands that build `name` from its release file as ArrayRecord."""
    return (
        f"# put {file_name(name)} (from {RELEASE_URL}) in {data_dir}/downloads/manual/, then\n"
        "# either (no TensorFlow needed):\n"
        f"python -m causal_disent.data.tfds_builders.build_mpi3d {name} "
        f"--data_dir={data_dir}\n"
        "# or, with TensorFlow installed (the `tfds` CLI of TFDS 4.9 imports it):\n"
        f"tfds build {name} --imports=causal_disent.data.tfds_builders.mpi3d "
        f"--data_dir={data_dir} --file_format=array_record"
    )


def describe_grids(grids: Sequence[Sequence[int]]) -> str:
    """'1,036,800 (6 x 6 x 2 x 3 x 3 x 40 x 40) or 460,800 (4 x 4 x ...)'."""
    return " or ".join(f"{math.prod(g):,} ({' x '.join(map(str, g))})" for g in grids)


def grid_of(num_images: int, where: str, grids: Sequence[Sequence[int]] = KNOWN_GRIDS
            ) -> tuple[int, ...]:
    """The factor sizes of the grid with `num_images` images; ReleaseFileError naming
    `where` and every expected count otherwise."""
    for sizes in grids:
        if math.prod(sizes) == num_images:
            return tuple(int(s) for s in sizes)
    raise ReleaseFileError(
        f"{where} holds {num_images:,} images, but an MPI3D file holds "
        f"{describe_grids(grids)} ({' x '.join(FACTOR_NAMES)}): it is truncated or not "
        f"an MPI3D release file. Download it again from {RELEASE_URL}."
    )


def check_file(path: str, name: str, grids: Sequence[Sequence[int]] = KNOWN_GRIDS
               ) -> ReleaseFile:
    """Checks the header of the release file at `path` (no pixels are read).

    Raises FileNotFoundError (with where to get it) when it is missing and
    ReleaseFileError when it is not an .npz with `images` uint8 [N, 64, 64, 3], N the
    size of one of `grids`.
    """
    path = os.fspath(path)
    with _images_member(path, name) as (_, num_images):
        return ReleaseFile(path, num_images, grid_of(num_images, path, grids))


def iter_images(release: ReleaseFile) -> Iterator[tuple[int, np.ndarray]]:
    """(first flat index, uint8 [B, 64, 64, 3]) over the file in order, a few thousand
    images at a time. ReleaseFileError when the data ends early or is damaged."""
    image_bytes = math.prod(IMAGE_SHAPE)
    with _images_member(release.path, "") as (member, num_images):
        if num_images != release.num_images:
            raise ReleaseFileError(f"{release.path} changed while it was read")
        for start in range(0, num_images, _IMAGES_PER_READ):
            count = min(_IMAGES_PER_READ, num_images - start)
            try:
                data = member.read(count * image_bytes)
            except (zipfile.BadZipFile, EOFError, zlib.error, OSError) as error:
                raise _damaged(release.path, f"{type(error).__name__}: {error}") from error
            if len(data) != count * image_bytes:
                read = start + len(data) // image_bytes
                raise _damaged(release.path, f"its images end after {read:,} of {num_images:,}")
            yield start, np.frombuffer(data, np.uint8).reshape(count, *IMAGE_SHAPE)


def _damaged(path: str, what: str) -> ReleaseFileError:
    return ReleaseFileError(f"{path} is truncated or corrupt ({what}). Delete it and "
                            f"download it again from {RELEASE_URL}.")


@contextlib.contextmanager
def _images_member(path: str, name: str):
    """(stream positioned at the first pixel of `images`, N), the header checked."""
    path = os.fspath(path)
    if not os.path.isfile(path):
        how = f" {manual_download_instructions(name)}" if name else ""
        raise FileNotFoundError(f"{path} not found.{how}")
    try:
        archive = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError) as error:
        raise _damaged(path, f"not an .npz archive: {error}") from error
    with archive:
        member_name = f"{IMAGES_KEY}.npy"
        if member_name not in archive.namelist():
            keys = sorted(n.removesuffix(".npy") for n in archive.namelist())
            raise ReleaseFileError(
                f"{path} has no array {IMAGES_KEY!r} (it holds {', '.join(keys) or 'none'}): "
                f"it is not an MPI3D release file. Download it again from {RELEASE_URL}."
            )
        try:
            with archive.open(member_name) as member:
                shape, fortran_order, dtype = _read_header(path, member)
                _check_header(path, shape, fortran_order, dtype)
                yield member, int(shape[0])
        except (zipfile.BadZipFile, EOFError, zlib.error) as error:
            raise _damaged(path, f"{type(error).__name__}: {error}") from error


def _read_header(path: str, member) -> tuple[tuple[int, ...], bool, np.dtype]:
    try:
        version = np.lib.format.read_magic(member)
        if version == (1, 0):
            return np.lib.format.read_array_header_1_0(member)
        if version == (2, 0):
            return np.lib.format.read_array_header_2_0(member)
        raise ValueError(f"unsupported .npy format version {version}")
    except ValueError as error:
        raise ReleaseFileError(
            f"{path}: {IMAGES_KEY!r} is not a readable .npy array ({error}). Download it "
            f"again from {RELEASE_URL}.") from error


def _check_header(path: str, shape, fortran_order: bool, dtype: np.dtype) -> None:
    expected = f"uint8 [N, {', '.join(map(str, IMAGE_SHAPE))}]"
    if dtype != np.uint8 or len(shape) != 4 or tuple(shape[1:]) != IMAGE_SHAPE:
        raise ReleaseFileError(
            f"{path}: {IMAGES_KEY!r} is {dtype} {list(shape)}, but an MPI3D release file "
            f"holds {expected}: it is not an MPI3D release file (or was re-saved). Download "
            f"it again from {RELEASE_URL}."
        )
    if fortran_order:
        # Images are read one after the other, which needs C (row-major) order.
        raise ReleaseFileError(
            f"{path}: {IMAGES_KEY!r} is stored in Fortran order; re-save it with "
            f"np.savez(path, images=np.ascontiguousarray(images)) or download it again "
            f"from {RELEASE_URL}."
        )
