"""What the TFDS builders of the two datasets in Reed et al.'s archive ("Deep Visual
Analogy-Making", NeurIPS 2015) share: version, manual-download instructions,
dataset info and the one split read from the archive in the manual directory."""

from __future__ import annotations

import abc
import sys

import tensorflow_datasets as tfds

from causal_disent.data.tfds_builders import reed2015


class Reed2015Builder(tfds.core.GeneratorBasedBuilder, skip_registration=True):
    """A builder of one dataset of the archive. Subclasses set `name` and
    `MANUAL_DOWNLOAD_INSTRUCTIONS` (`reed2015.manual_download_instructions(name)`),
    and define `features()` (the feature dict) and `_generate_examples(archive)`.
    The dataset's description is its module's docstring."""

    VERSION = tfds.core.Version("1.0.0")
    RELEASE_NOTES = {"1.0.0": "Initial release."}

    @abc.abstractmethod
    def features(self) -> dict:
        """The dataset's feature dict (names -> TFDS features)."""

    def _info(self) -> tfds.core.DatasetInfo:
        return tfds.core.DatasetInfo(
            builder=self,
            description=sys.modules[type(self).__module__].__doc__,
            features=tfds.features.FeaturesDict(self.features()),
            homepage=reed2015.ARCHIVE_URL,
        )

    def _split_generators(self, dl_manager: tfds.download.DownloadManager):
        archive = dl_manager.manual_dir / reed2015.ARCHIVE_NAME
        return {"train": self._generate_examples(archive)}
