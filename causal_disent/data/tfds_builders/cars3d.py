"""TFDS builder for Cars3D (Reed et al. 2015), from the manually downloaded archive.

Each `data/cars/*.mat` holds one car model as `im`, uint8 [128, 128, 3, 24, 4]:
128x128 RGB renders over 24 azimuths (4th axis) and 4 elevations (5th axis), the
layout disentanglement_lib reads. Cars are numbered by sorted file name (a stable
order, unlike a directory listing). Images are resized to 64x64 (Lanczos).

Build (no TensorFlow needed):
  tfds build cars3d --imports=causal_disent.data.tfds_builders.cars3d \
      --data_dir=DATA_DIR --file_format=array_record
"""

from __future__ import annotations

import numpy as np
import tensorflow_datasets as tfds

from causal_disent.data.tfds_builders import reed2015
from causal_disent.data.tfds_builders.reed2015_builder import Reed2015Builder

NUM_ELEVATIONS, NUM_AZIMUTHS, NUM_CARS = 4, 24, 183
_FOLDER = "data/cars/"


class Cars3d(Reed2015Builder):
    """Cars3D: 183 cars x 24 azimuths x 4 elevations, 64x64x3."""

    name = "cars3d"
    MANUAL_DOWNLOAD_INSTRUCTIONS = reed2015.manual_download_instructions("cars3d")

    def features(self) -> dict:
        return {
            "image": tfds.features.Image(shape=(64, 64, 3)),
            "label_elevation": tfds.features.ClassLabel(num_classes=NUM_ELEVATIONS),
            "label_azimuth": tfds.features.ClassLabel(num_classes=NUM_AZIMUTHS),
            "label_object": tfds.features.ClassLabel(num_classes=NUM_CARS),
        }

    def _generate_examples(self, archive):
        names = sorted(n for n, _ in reed2015.iter_mat_files(archive, _FOLDER, "cars3d", True))
        if len(names) > NUM_CARS:
            raise reed2015.CorruptArchiveError(
                f"{archive} has {len(names)} car files, more than {NUM_CARS}: not the "
                f"expected {reed2015.ARCHIVE_NAME}"
            )
        car_of = {name: car for car, name in enumerate(names)}
        for name, data in reed2015.iter_mat_files(archive, _FOLDER, "cars3d"):
            renders = car_renders(name, reed2015.load_mat(name, data))
            car = car_of[name]
            for azimuth in range(NUM_AZIMUTHS):
                for elevation in range(NUM_ELEVATIONS):
                    yield f"{car:03d}_{azimuth:02d}_{elevation}", {
                        "image": reed2015.resize_rgb(renders[:, :, :, azimuth, elevation]),
                        "label_elevation": elevation,
                        "label_azimuth": azimuth,
                        "label_object": car,
                    }


def car_renders(name: str, variables: dict) -> np.ndarray:
    """The validated `im` array of one car file: uint8 [H, W, 3, 24, 4]."""
    renders = np.asarray(variables.get("im", np.empty(0)))
    if renders.ndim != 5 or renders.shape[2:] != (3, NUM_AZIMUTHS, NUM_ELEVATIONS):
        raise reed2015.CorruptArchiveError(
            f"{name}: expected a variable 'im' of shape [H, W, 3, {NUM_AZIMUTHS}, "
            f"{NUM_ELEVATIONS}], got shape {renders.shape}; re-download "
            f"{reed2015.ARCHIVE_NAME} from {reed2015.ARCHIVE_URL}"
        )
    if renders.dtype != np.uint8:
        renders = np.clip(np.rint(renders), 0, 255).astype(np.uint8)
    return renders
