"""TFDS builders for MPI3D (Gondal et al., NeurIPS 2019), one per variant:
`mpi3d_toy`, `mpi3d_realistic` and `mpi3d_real`, each from its manually downloaded
`.npz` (the files and their layout: mpi3d_release.py).

Every image becomes one record with its seven factor indices, `label_<factor>`,
those of its flat index in the file (row-major, the last factor fastest). The grid,
6 or 4 object colours and shapes, is the one the file's image count gives. Images are
stored as PNG (lossless: the pixels read back are the file's).

Build (no TensorFlow needed):
  python -m causal_disent.data.tfds_builders.build_mpi3d mpi3d_real --data_dir=DATA_DIR
or
  tfds build mpi3d_real --imports=causal_disent.data.tfds_builders.mpi3d \
      --data_dir=DATA_DIR --file_format=array_record
"""

from __future__ import annotations

import numpy as np
import tensorflow_datasets as tfds
from PIL import Image

from causal_disent.data.tfds_builders import mpi3d_release as release

_DESCRIPTION = __doc__

class Mpi3dBuilder(tfds.core.GeneratorBasedBuilder, skip_registration=True):
    """A builder of one variant. Subclasses set `name`, `MANUAL_DOWNLOAD_INSTRUCTIONS`
    and `variant_description`; `grids` are the grids a file may hold (tests shrink
    them)."""

    VERSION = tfds.core.Version("1.0.0")
    RELEASE_NOTES = {"1.0.0": "Initial release."}
    grids: tuple[tuple[int, ...], ...] = release.KNOWN_GRIDS
    variant_description = ""

    def _info(self) -> tfds.core.DatasetInfo:
        label = tfds.features.ClassLabel
        features = {
            "image": tfds.features.Image(shape=release.IMAGE_SHAPE),
            # 6 colours and shapes in the current release, 4 in the earlier one, whose
            # value names this library does not know: plain indices.
            "label_object_color": np.int64,
            "label_object_shape": np.int64,
            "label_object_size": label(names=release.SIZE_NAMES),
            "label_camera_height": label(names=release.CAMERA_HEIGHT_NAMES),
            "label_background_color": label(names=release.BACKGROUND_NAMES),
            "label_horizontal_axis": label(num_classes=release.AXIS_STEPS),
            "label_vertical_axis": label(num_classes=release.AXIS_STEPS),
        }
        return tfds.core.DatasetInfo(
            builder=self,
            description=f"MPI3D, {self.variant_description}. {_DESCRIPTION}",
            features=tfds.features.FeaturesDict(features),
            homepage=release.RELEASE_URL,
        )

    def _split_generators(self, dl_manager: tfds.download.DownloadManager):
        path = dl_manager.manual_dir / release.file_name(self.name)
        return {"train": self._generate_examples(path)}

    def _generate_examples(self, path):
        checked = release.check_file(path, self.name, self.grids)
        sizes = checked.factor_sizes
        for start, images in release.iter_images(checked):
            for offset, image in enumerate(images):
                index = start + offset
                factors = np.unravel_index(index, sizes)  # row-major, as the file
                record = {f"label_{n}": int(v) for n, v in zip(release.FACTOR_NAMES, factors)}
                record["image"] = Image.fromarray(image, "RGB")
                yield index, record


class Mpi3dToy(Mpi3dBuilder):
    name = "mpi3d_toy"
    variant_description = "simple renders (mpi3d_toy.npz)"
    MANUAL_DOWNLOAD_INSTRUCTIONS = release.manual_download_instructions(name)


class Mpi3dRealistic(Mpi3dBuilder):
    name = "mpi3d_realistic"
    variant_description = "realistic renders (mpi3d_realistic.npz)"
    MANUAL_DOWNLOAD_INSTRUCTIONS = release.manual_download_instructions(name)


class Mpi3dReal(Mpi3dBuilder):
    name = "mpi3d_real"
    variant_description = "photographs of the real platform (mpi3d_real.npz)"
    MANUAL_DOWNLOAD_INSTRUCTIONS = release.manual_download_instructions(name)


BUILDERS = {cls.name: cls for cls in (Mpi3dToy, Mpi3dRealistic, Mpi3dReal)}
