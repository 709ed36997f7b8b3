"""TFDS builder for Sprites (Reed et al. 2015), from the manually downloaded archive.

Layout of the archive, as read by the public loaders of these files (Reed et al.'s
data used by visual-analogy-tensorflow and edflow; nothing here was checked
against the real files, which this project cannot download):
  data/sprites/sprites_<k>.mat, k = 0..671, one character each, MATLAB v7.3
  (HDF5, so h5py is needed), with
    sprites: 1x21 cell; cell a is double [60*60*3, T] in [0, 1], frame t being
      column t reshaped in MATLAB (column-major) order to 60x60x3;
    masks:   1x21 cell of [60*60, T] (not used);
    labels:  1x7, the character's attributes (body, sex, hair, armor, arm,
      greaves, weapon), stored here as they are in the file.
  data/sprites/sprites_splits.mat: trainidx / validx / testidx (1-based; unused).
Cells 0-19 are 5 actions (spellcast, thrust, walk, slash, shoot) x 4 views with
the view fastest (assumed from the loaders' "5 actions, each from 4 views");
cell 20 is an extra animation and is skipped. Frames are resized from 60x60 to
64x64 (Lanczos). Every frame is stored, with its index; `Sprites` in
tfds_datasets picks one frame per animation to form a grid.

Build (no TensorFlow needed; h5py for the v7.3 files):
  tfds build sprites --imports=causal_disent.data.tfds_builders.sprites \
      --data_dir=DATA_DIR --file_format=array_record
"""

from __future__ import annotations

import re

import numpy as np
import tensorflow_datasets as tfds

from causal_disent.data.tfds_builders import reed2015
from causal_disent.data.tfds_builders.reed2015_builder import Reed2015Builder

ATTRIBUTE_NAMES = ("body", "sex", "hair", "armor", "arm", "greaves", "weapon")
ACTION_NAMES = ("spellcast", "thrust", "walk", "slash", "shoot")
NUM_VIEWS = 4
NUM_ANIMATIONS = len(ACTION_NAMES) * NUM_VIEWS  # cells used; the 21st is skipped
FRAME_SIZE = 60
_FOLDER = "data/sprites/"
_CHARACTER_FILE = re.compile(r"sprites_(\d+)\.mat$")


class Sprites(Reed2015Builder):
    """Sprites: every frame of 5 actions x 4 views of each character, 64x64x3."""

    name = "sprites"
    MANUAL_DOWNLOAD_INSTRUCTIONS = reed2015.manual_download_instructions("sprites")

    def features(self) -> dict:
        features = {"image": tfds.features.Image(shape=(64, 64, 3))}
        features.update({f"label_{n}": np.int64 for n in ATTRIBUTE_NAMES})
        features.update(
            {
                "label_action": tfds.features.ClassLabel(names=ACTION_NAMES),
                "label_view": tfds.features.ClassLabel(num_classes=NUM_VIEWS),
                "character": np.int64,
                "frame": np.int64,
                "num_frames": np.int64,
            }
        )
        return features

    def _generate_examples(self, archive):
        for name, data in reed2015.iter_mat_files(archive, _FOLDER, "sprites"):
            match = _CHARACTER_FILE.search(name)
            if match is None:  # sprites_splits.mat
                continue
            character = int(match.group(1))
            labels, animations = character_animations(name, reed2015.load_mat(name, data))
            for animation, frames in enumerate(animations):
                action, view = divmod(animation, NUM_VIEWS)
                for frame, image in enumerate(frames):
                    record = {f"label_{n}": int(v) for n, v in zip(ATTRIBUTE_NAMES, labels)}
                    record.update(
                        image=reed2015.resize_rgb(image),
                        label_action=action,
                        label_view=view,
                        character=character,
                        frame=frame,
                        num_frames=len(frames),
                    )
                    yield f"{character:03d}_{animation:02d}_{frame:02d}", record


def character_animations(name: str, variables: dict) -> tuple[np.ndarray, list[np.ndarray]]:
    """(labels [7] int64, 20 arrays [T, 60, 60, 3] uint8) of one character file."""
    def bad(what: str) -> reed2015.CorruptArchiveError:
        return reed2015.CorruptArchiveError(
            f"{name}: {what}; re-download {reed2015.ARCHIVE_NAME} from {reed2015.ARCHIVE_URL}"
        )

    labels = np.asarray(variables.get("labels", np.empty(0))).reshape(-1)
    if labels.shape != (len(ATTRIBUTE_NAMES),):
        raise bad(f"expected 'labels' with {len(ATTRIBUTE_NAMES)} entries, got {labels.shape}")
    cells = np.asarray(variables.get("sprites", np.empty(0, object)), object).reshape(-1)
    if len(cells) < NUM_ANIMATIONS:
        raise bad(f"expected a cell 'sprites' of >= {NUM_ANIMATIONS} animations, got {len(cells)}")
    animations = []
    for cell in cells[:NUM_ANIMATIONS]:
        columns = np.asarray(cell, np.float64)
        if columns.ndim != 2 or columns.shape[0] != FRAME_SIZE * FRAME_SIZE * 3:
            raise bad(f"expected animations of shape [{FRAME_SIZE**2 * 3}, T], got {columns.shape}")
        # Column-major (MATLAB) reshape of each column to 60x60x3: [T, H, W, C].
        frames = columns.T.reshape(-1, 3, FRAME_SIZE, FRAME_SIZE).transpose(0, 3, 2, 1)
        animations.append(np.clip(np.rint(frames * 255.0), 0, 255).astype(np.uint8))
    return np.rint(labels).astype(np.int64), animations
