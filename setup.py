"""Installs causal_disent: `pip install -e .[test]`."""

import re
from pathlib import Path

from setuptools import find_packages, setup

_VERSION = re.search(
    r'__version__ = "([^"]+)"', Path("causal_disent/__init__.py").read_text()
).group(1)

setup(
    name="causal_disent",
    version=_VERSION,
    description=(
        "Causal disentanglement of images in JAX/Flax: CT-VAE, CausalVAE, "
        "disentanglement baselines, ground-truth datasets and metrics."
    ),
    long_description=Path("README.md").read_text(),
    long_description_content_type="text/markdown",
    packages=find_packages(include=["causal_disent", "causal_disent.*"]),
    python_requires=">=3.11",
    install_requires=[
        "absl-py>=2.1",
        "chex>=0.1.87",
        "filelock>=3.12",  # JAX locks its compilation cache with it (utils/compilation_cache.py)
        "flax>=0.10.4",
        "google-crc32c>=1.5",  # the checksums of TensorBoard's event records (utils/record_file.py)
        "importlib_resources>=6.0",  # tensorflow-datasets imports it without declaring it
        "jax>=0.5",
        "jraph>=0.0.6.dev0",
        "matplotlib>=3.8",
        "ml-collections>=0.1.1",
        "numpy>=1.26",
        "optax>=0.2.5",  # optax.tree.norm
        "orbax-checkpoint>=0.11",
        "pillow>=10.0",
        "scikit-learn>=1.4",  # disentanglement-metric classifiers and mutual information
        "scipy>=1.11",  # reads the Reed et al. (2015) .mat archives
        "tensorboardX>=2.6",  # TensorBoard event files without TensorFlow
        "tensorflow-datasets>=4.9.7",
        "tensorstore",  # (orbax-checkpoint sets its version) reads a checkpoint's values before orbax does (runs/checkpoint.py)
    ],
    extras_require={
        # nbclient and ipykernel run the notebooks; tensorboard reads event files back;
        # pytest-xdist runs the suite on two workers.
        "test": ["pytest>=8.0", "pytest-xdist>=3.8", "nbclient>=0.10", "nbformat>=5.10",
                 "ipykernel>=6.29", "tensorboard>=2.16"],
        # Sprites' .mat files are MATLAB v7.3 (HDF5).
        "sprites": ["h5py>=3.9"],
    },
)
