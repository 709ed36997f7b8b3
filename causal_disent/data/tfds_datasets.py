"""Real ground-truth datasets read from TFDS data prepared in the user's data dir.

Reading goes through `tfds.data_source` (random access over ArrayRecord files) and
needs no TensorFlow. Preparing the official datasets (`tfds build shapes3d ...`)
does: their generators hand numpy images to TFDS, which encodes them with
`tf.image`. Cars3D, Sprites and MPI3D are built by this package's own builders
(`causal_disent.data.tfds_builders`), which encode with PIL and need no TensorFlow.

TFDS shuffles records when it writes them, so record order is not factor order.
A grid dataset therefore maps every flat factor index to its record once, by
reading all labels, checks the grid is complete, and caches the map as
`<data_dir>/<name>/<version>/causal_disent_factor_index.npy` for later loads.

SmallNORB: the TFDS labels are (category, instance, elevation, azimuth,
lighting) with instances 4, 6-9 in `train` and 0-3, 5 in `test`. Each split alone
is a complete grid only over its own five instances, so we join both splits and
keep the instance as an explicit factor: (category 5, instance 10, elevation 9,
azimuth 18, lighting 6) = 48 600 images, a complete grid, as disentanglement_lib
does. The instance is a nuisance factor (`nuisance_factors`): no action moves it
and every transition keeps it fixed, so SmallNORB has the 8 actions of +/- one step
of category, elevation, azimuth and lighting. Images
(left camera only) are resized from 96x96 to 64x64 with PIL's Lanczos filter
(disentanglement_lib's antialiased resize).

MPI3D's grid depends on the release its file came from (6 object colours and shapes,
or 4 in the earlier one); the prepared record count tells which (`_choose_grid`).

CelebA is not a grid: `CelebA` exposes its 40 binary attributes instead, and
`transitions.sample_one_attribute_pairs` draws image pairs that differ in exactly
one of the first 10 attributes (CT-VAE's CelebA transitions).
"""

from __future__ import annotations

import logging
import math
import os
import threading

import numpy as np
from PIL import Image

from causal_disent.data.base import FactorDataset, check_image_index
from causal_disent.data.tfds_builders import mpi3d_release
from causal_disent.data.transitions import sample_one_attribute_pairs
from causal_disent.data.tfds_reading import (
    ATTRIBUTES_FILE,
    FACTOR_INDEX_FILE,
    DatasetNotPreparedError,
    IncompleteGridError,
    build_factor_index,
    decode_images,
    default_data_dir,
    load_cache,
    official_build_command,
    open_split,
    read_records,
    save_cache,
    scan_records,
)

__all__ = [
    "CELEBA_ATTRIBUTE_NAMES", "Cars3D", "CelebA", "CelebA64", "DSprites",
    "DatasetNotPreparedError", "IncompleteGridError", "MPI3D", "MPI3DReal",
    "MPI3DRealistic", "MPI3DToy", "Shapes3D", "SmallNORB", "Sprites", "TfdsGridDataset",
    "sample_one_attribute_pairs",
]
_SPOT_CHECKS = 16  # cached lookup entries re-read on every load


class TfdsGridDataset(FactorDataset):
    """A FactorDataset over prepared TFDS splits (concatenated in order).

    Subclasses set the FactorDataset attributes plus:
      tfds_name: TFDS name; splits: splits joined into one grid;
      label_features: the integer feature of each factor;
      image_feature: the Image feature read;
      and may override `_factors_of(example)` (e.g. to drop records),
      `_how_to_prepare(data_dir)` and `_choose_grid(num_records)`.
    """

    tfds_name: str = ""
    splits: tuple[str, ...] = ("train",)
    label_features: tuple[str, ...] = ()
    image_feature: str = "image"
    cache_file: str = FACTOR_INDEX_FILE

    def __init__(self, data_dir: str | None = None) -> None:
        self.data_dir = os.fspath(data_dir) if data_dir is not None else default_data_dir()
        self._import_builder()
        opened = [
            open_split(self.tfds_name, split, self.data_dir, self._how_to_prepare(self.data_dir))
            for split in self.splits
        ]
        self._sources = [source for source, _ in opened]
        self.data_path = opened[0][1]
        lengths = [len(source) for source in self._sources]
        self._offsets = np.cumsum([0] + lengths[:-1]).astype(np.int64)
        self.num_records = int(sum(lengths))
        self._choose_grid(self.num_records)
        super().__init__()  # once the grid is known: it derives num_images from it
        self.cache_path = os.path.join(self.data_path, self.cache_file)
        self._lock = threading.Lock()
        self.record_of_index = self._load_or_build_factor_index()

    # -- hooks -------------------------------------------------------------- #
    def _import_builder(self) -> None:
        """Registers the TFDS builder (official ones are registered by TFDS)."""

    def _how_to_prepare(self, data_dir: str) -> str:
        return official_build_command(self.tfds_name, data_dir)

    def _choose_grid(self, num_records: int) -> None:
        """Sets the factor grid where it depends on the prepared data (MPI3D); the
        class's grid otherwise."""

    def _factors_of(self, example: dict) -> list[int]:
        """Factor indices of one record ([-1] * F when it is not in the grid)."""
        return [int(example[key]) for key in self.label_features]

    # -- lookup table ------------------------------------------------------- #
    def _load_or_build_factor_index(self) -> np.ndarray:
        cached = load_cache(self.cache_path)
        if cached is not None and self._cache_is_valid(cached):
            return cached
        if cached is not None:
            logging.warning("%s does not match the data; rebuilding it", self.cache_path)
        labels = scan_records(self._sources, self._factors_of)
        table = build_factor_index(labels, self.factor_names, self.factor_sizes)
        save_cache(self.cache_path, table)
        return table

    def _cache_is_valid(self, table: np.ndarray) -> bool:
        """Right shape, distinct in-range records, and a re-read sample agrees."""
        if table.shape != (self.num_images,) or table.dtype != np.int64:
            return False
        if table.size and (table.min() < 0 or table.max() >= self.num_records):
            return False
        if len(np.unique(table)) != table.size:
            return False
        sample = np.unique(np.linspace(0, self.num_images - 1, _SPOT_CHECKS).astype(np.int64))
        examples = read_records(self._sources, self._offsets, table[sample])
        found = np.array([self._factors_of(example) for example in examples], np.int64)
        return bool(np.array_equal(found, self.index_to_factors(sample)))

    # -- images ------------------------------------------------------------- #
    def _images_at(self, index: np.ndarray) -> np.ndarray:
        examples = read_records(self._sources, self._offsets, self.record_of_index[index])
        return decode_images([e[self.image_feature] for e in examples], self.image_shape)


# --------------------------------------------------------------------------- #
# Official TFDS datasets
# --------------------------------------------------------------------------- #
class Shapes3D(TfdsGridDataset):
    """DeepMind 3D Shapes (TFDS `shapes3d`): 480 000 images, 64x64x3.

    TFDS's `label_*` are the ranks of the stored values, so index i of a factor
    stands for its i-th smallest stored value (listed in `factor_values`).
    """

    name = "shapes3d"
    tfds_name = "shapes3d"
    image_shape = (64, 64, 3)
    factor_names = ("floor_hue", "wall_hue", "object_hue", "scale", "shape", "orientation")
    factor_sizes = (10, 10, 10, 8, 4, 15)
    factor_values = (
        np.arange(10) / 10.0,
        np.arange(10) / 10.0,
        np.arange(10) / 10.0,
        np.linspace(0.75, 1.25, 8),
        np.arange(4, dtype=np.float64),  # cube, cylinder, sphere, capsule
        np.linspace(-30.0, 30.0, 15),
    )
    label_features = tuple(f"label_{n}" for n in factor_names)


class DSprites(TfdsGridDataset):
    """dSprites (TFDS `dsprites`), colour dropped: 737 280 images, 64x64x1. TFDS
    stores pixels as 0/1; they are returned as 0/255 like every image here."""

    name = "dsprites"
    tfds_name = "dsprites"
    image_shape = (64, 64, 1)
    factor_names = ("shape", "scale", "orientation", "x_position", "y_position")
    factor_sizes = (3, 6, 40, 32, 32)
    factor_values = (
        np.array([1.0, 2.0, 3.0]),  # square, ellipse, heart, as stored by dSprites
        np.linspace(0.5, 1.0, 6),
        np.linspace(0.0, 2.0 * np.pi, 40),
        np.linspace(0.0, 1.0, 32),
        np.linspace(0.0, 1.0, 32),
    )
    label_features = tuple(f"label_{n}" for n in factor_names)

    def _images_at(self, index: np.ndarray) -> np.ndarray:
        return super()._images_at(index) * np.uint8(255)


class SmallNORB(TfdsGridDataset):
    """SmallNORB (TFDS `smallnorb`), train+test joined, 64x64x1 (see module doc)."""

    name = "smallnorb"
    tfds_name = "smallnorb"
    splits = ("train", "test")
    image_shape = (64, 64, 1)
    factor_names = ("category", "instance", "elevation", "azimuth", "lighting")
    factor_sizes = (5, 10, 9, 18, 6)
    factor_values = (
        np.arange(5, dtype=np.float64),  # animal, human, airplane, truck, car
        np.arange(10, dtype=np.float64),
        30.0 + 5.0 * np.arange(9),  # degrees
        20.0 * np.arange(18),  # degrees
        np.arange(6, dtype=np.float64),
    )
    label_features = (
        "label_category", "instance", "label_elevation", "label_azimuth", "label_lighting"
    )
    nuisance_factors = (1,)  # the instance: transitions keep it fixed

    def predefined_split(self) -> None:
        # TFDS's train/test split is by instance, which is a factor here; the
        # library's seeded image-level split applies instead.
        return None


# --------------------------------------------------------------------------- #
# Datasets built by this package's builders (Reed et al. 2015 archive)
# --------------------------------------------------------------------------- #
class Cars3D(TfdsGridDataset):
    """Cars3D (Reed et al. 2015): 183 cars x 24 azimuths x 4 elevations, 64x64x3."""

    name = "cars3d"
    tfds_name = "cars3d"
    image_shape = (64, 64, 3)
    factor_names = ("elevation", "azimuth", "object")
    factor_sizes = (4, 24, 183)
    factor_values = (
        np.arange(4, dtype=np.float64),
        np.arange(24, dtype=np.float64) * 15.0,  # degrees, 24 evenly spaced views
        np.arange(183, dtype=np.float64),
    )
    label_features = ("label_elevation", "label_azimuth", "label_object")

    def _import_builder(self) -> None:
        from causal_disent.data.tfds_builders import cars3d  # noqa: F401  (registers it)

    def _how_to_prepare(self, data_dir: str) -> str:
        from causal_disent.data.tfds_builders import reed2015

        return reed2015.build_command("cars3d", data_dir)


class Sprites(TfdsGridDataset):
    """Sprites (Reed et al. 2015): 7 character attributes, action and view.

    Each (character, action, view) is an animation of 6-13 frames; the frame is
    not a grid factor (its count depends on the action), so one frame per
    animation is used, `frame` (default 0, present in every animation).
    The attribute cardinalities are assumptions (see tfds_builders/sprites.py);
    loading checks them and names any label out of range or missing tuple.
    """

    name = "sprites"
    tfds_name = "sprites"
    image_shape = (64, 64, 3)
    factor_names = (
        "body", "sex", "hair", "armor", "arm", "greaves", "weapon", "action", "view"
    )
    factor_sizes = (3, 2, 7, 2, 2, 2, 2, 5, 4)
    factor_values = tuple(np.arange(s, dtype=np.float64) for s in factor_sizes)
    label_features = tuple(f"label_{n}" for n in factor_names)

    def __init__(self, data_dir: str | None = None, frame: int = 0) -> None:
        if isinstance(frame, bool) or not isinstance(frame, (int, np.integer)) or frame < 0:
            raise ValueError(f"frame must be a non-negative integer, got {frame!r}")
        self.frame = int(frame)
        self.cache_file = f"causal_disent_factor_index_frame{self.frame}.npy"
        super().__init__(data_dir)

    def _factors_of(self, example: dict) -> list[int]:
        if int(example["frame"]) != self.frame:
            return [-1] * len(self.label_features)
        return super()._factors_of(example)

    def _import_builder(self) -> None:
        from causal_disent.data.tfds_builders import sprites  # noqa: F401  (registers it)

    def _how_to_prepare(self, data_dir: str) -> str:
        from causal_disent.data.tfds_builders import reed2015

        return reed2015.build_command("sprites", data_dir)


# --------------------------------------------------------------------------- #
# MPI3D (Gondal et al. 2019), built by this package's builders from the release's .npz
# --------------------------------------------------------------------------- #
class MPI3D(TfdsGridDataset):
    """MPI3D (Gondal et al., NeurIPS 2019): a robot arm moving an object, 64x64x3.

    Factors, in the file's row-major order: object_color, object_shape, object_size
    (2), camera_height (3), background_color (3), horizontal_axis and vertical_axis
    (40 each, the arm's two degrees of freedom). The current release has 6 colours
    and 6 shapes (1 036 800 images, the class's grid); a file of the earlier release
    has 4 and 4 (460 800), and the prepared record count picks the grid. Factor values
    are the indices; the value names are in `tfds_builders/mpi3d_release.py`.
    The variants (`MPI3DToy`, `MPI3DRealistic`, `MPI3DReal`) set the name.
    """

    grids: tuple[tuple[int, ...], ...] = mpi3d_release.KNOWN_GRIDS
    image_shape = mpi3d_release.IMAGE_SHAPE
    factor_names = mpi3d_release.FACTOR_NAMES
    factor_sizes = mpi3d_release.GRID_SIZES
    factor_values = tuple(np.arange(s, dtype=np.float64) for s in factor_sizes)
    label_features = tuple(f"label_{n}" for n in factor_names)

    def _choose_grid(self, num_records: int) -> None:
        sizes = next((g for g in self.grids if math.prod(g) == num_records), None)
        if sizes is None:
            raise DatasetNotPreparedError(
                f"{self.tfds_name} in {self.data_path} holds {num_records:,} images, but "
                f"MPI3D has {mpi3d_release.describe_grids(self.grids)}: it was not built "
                f"from an MPI3D release file. Delete that folder and prepare it again "
                f"with:\n{self._how_to_prepare(self.data_dir)}"
            )
        self.factor_sizes = tuple(sizes)
        self.factor_values = tuple(np.arange(s, dtype=np.float64) for s in sizes)

    def _import_builder(self) -> None:
        from causal_disent.data.tfds_builders import mpi3d  # noqa: F401  (registers them)

    def _how_to_prepare(self, data_dir: str) -> str:
        return mpi3d_release.build_command(self.tfds_name, data_dir)


class MPI3DToy(MPI3D):
    """MPI3D's simple renders (`mpi3d_toy.npz`)."""

    name = tfds_name = "mpi3d_toy"


class MPI3DRealistic(MPI3D):
    """MPI3D's realistic renders (`mpi3d_realistic.npz`)."""

    name = tfds_name = "mpi3d_realistic"


class MPI3DReal(MPI3D):
    """MPI3D's photographs of the real platform (`mpi3d_real.npz`)."""

    name = tfds_name = "mpi3d_real"


# --------------------------------------------------------------------------- #
# CelebA
# --------------------------------------------------------------------------- #
CELEBA_ATTRIBUTE_NAMES = (
    "5_o_Clock_Shadow Arched_Eyebrows Attractive Bags_Under_Eyes Bald Bangs Big_Lips "
    "Big_Nose Black_Hair Blond_Hair Blurry Brown_Hair Bushy_Eyebrows Chubby Double_Chin "
    "Eyeglasses Goatee Gray_Hair Heavy_Makeup High_Cheekbones Male Mouth_Slightly_Open "
    "Mustache Narrow_Eyes No_Beard Oval_Face Pale_Skin Pointy_Nose Receding_Hairline "
    "Rosy_Cheeks Sideburns Smiling Straight_Hair Wavy_Hair Wearing_Earrings Wearing_Hat "
    "Wearing_Lipstick Wearing_Necklace Wearing_Necktie Young"
).split()


class CelebA:
    """CelebA (TFDS `celeb_a`): 202 599 faces, 218x178x3, 40 binary attributes.

    Images are numbered over the splits train, validation, test in that order;
    `predefined_split()` gives the published split in that numbering.
    """

    name = "celeb_a"
    tfds_name = "celeb_a"
    splits = ("train", "validation", "test")
    image_shape = (218, 178, 3)
    attribute_names: tuple[str, ...] = tuple(CELEBA_ATTRIBUTE_NAMES)

    def __init__(self, data_dir: str | None = None) -> None:
        self.data_dir = os.fspath(data_dir) if data_dir is not None else default_data_dir()
        command = official_build_command(self.tfds_name, self.data_dir)
        opened = [open_split(self.tfds_name, s, self.data_dir, command) for s in self.splits]
        self._sources = [source for source, _ in opened]
        self.data_path = opened[0][1]
        lengths = [len(source) for source in self._sources]
        self._offsets = np.cumsum([0] + lengths[:-1]).astype(np.int64)
        self._lengths = lengths
        self.num_images = int(sum(lengths))
        self.cache_path = os.path.join(self.data_path, ATTRIBUTES_FILE)
        self._attributes = self._load_or_read_attributes()

    def _load_or_read_attributes(self) -> np.ndarray:
        cached = load_cache(self.cache_path)
        shape = (self.num_images, len(self.attribute_names))
        if cached is not None and cached.shape == shape and cached.dtype == np.bool_:
            return cached
        names = self.attribute_names
        table = scan_records(
            self._sources, lambda e: [bool(e["attributes"][n]) for n in names]
        ).astype(bool)
        save_cache(self.cache_path, table)
        return table

    def check_index(self, index: np.ndarray) -> np.ndarray:
        """Validated int64 [B] copy of `index`; ValueError naming the problem."""
        return check_image_index(index, self.num_images)

    def attributes(self, index: np.ndarray) -> np.ndarray:
        """[B] image indices -> [B, 40] bool attributes (`attribute_names` order)."""
        return self._attributes[self.check_index(index)]

    def images(self, index: np.ndarray) -> np.ndarray:
        """[B] image indices -> [B, 218, 178, 3] uint8."""
        index = self.check_index(index)
        examples = read_records(self._sources, self._offsets, index)
        return decode_images([e["image"] for e in examples], CelebA.image_shape)

    def predefined_split(self) -> dict[str, np.ndarray]:
        """The published train/validation/test split as {name: int64 indices}."""
        return {
            split: np.arange(offset, offset + length, dtype=np.int64)
            for split, offset, length in zip(self.splits, self._offsets, self._lengths)
        }


class CelebA64(CelebA):
    """CelebA as the models take it: the central 178x178 square (rows 20..197, the
    face) resized to 64x64 with Lanczos, the usual CelebA-64 preprocessing."""

    image_shape = (64, 64, 3)
    _CROP_TOP = (218 - 178) // 2

    def images(self, index: np.ndarray) -> np.ndarray:
        """[B] image indices -> [B, 64, 64, 3] uint8."""
        full = super().images(index)
        square = full[:, self._CROP_TOP : self._CROP_TOP + 178]
        resized = [
            np.asarray(Image.fromarray(image).resize((64, 64), Image.Resampling.LANCZOS))
            for image in square
        ]
        return np.stack(resized) if resized else np.zeros((0, *self.image_shape), np.uint8)
