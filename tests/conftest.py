"""Shared fixtures: a tiny CT-VAE config so compilation stays cheap on 2 cores.

Compilation dominates the suite on a CPU, and many tests (in this process and in the
command-line runs they start) compile the same tiny programs again. One persistent
JAX compilation cache for the session, in a temporary folder that every subprocess
inherits through the environment, compiles each program once: a `:tiny` CT-VAE run
takes 18 s instead of 40 with it warm. Tests that start several processes at once
or stop one mid-run take it out of their environment (tests/train/test_multiprocess.py,
tests/test_bad_input.py, tests/crash_resume.py, tests/train/test_faults.py): the
cache writes its files without a lock, so a reader could meet a partial entry.
"""

import atexit
import os
import shutil
import sys
import tempfile
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))  # `configs` and `tests` are folders, not packages

if "JAX_COMPILATION_CACHE_DIR" not in os.environ:  # before anything imports jax
    _CACHE = tempfile.mkdtemp(prefix="causal_disent_tests_jax_cache_")
    atexit.register(shutil.rmtree, _CACHE, ignore_errors=True)
    os.environ["JAX_COMPILATION_CACHE_DIR"] = _CACHE
    os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0.5")

from tests import helpers  # noqa: E402


@pytest.fixture
def tiny():
    return helpers.tiny_config()
