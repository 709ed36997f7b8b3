"""Shared fixtures: a tiny CT-VAE config so compilation stays cheap on 2 cores.

Compilation dominates the suite on a CPU, and many tests (in this process, in the
other pytest worker and in the command-line runs they start) compile the same tiny
programs again. One persistent JAX compilation cache for the session, in a temporary
folder that every worker and subprocess inherits through the environment, compiles
each program once: a `:tiny` CT-VAE run takes 18 s instead of 40 with it warm. A
size limit turns on the cache's file lock (JAX locks only a cache it may evict
from), so processes running at once never read an entry still being written. Runs
that are killed stay off it, since a killed writer leaves a partial entry behind:
tests/crash_resume.py gives its runs a cache of their own, tests/train/test_faults.py
none.

pytest.ini runs the suite on two workers (pytest-xdist), a test file per worker at a
time, so module fixtures are built once: most tests compile or wait on one core.
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
    # Every program, however quick: a tiny run compiles dozens of small ones, and a
    # warm :tiny CT-VAE run spends 15 % less CPU when they are cached too.
    os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0")
    os.environ.setdefault("JAX_COMPILATION_CACHE_MAX_SIZE", str(32 << 30))  # the lock

from tests import helpers  # noqa: E402


@pytest.fixture
def tiny():
    return helpers.tiny_config()


# Files that take a minute or more, longest first (from `pytest --durations`). Each
# worker takes the next file when it is free, so these go first and the short files
# fill in at the end, instead of one worker finishing alone on a long file.
_LONG_FILES_FIRST = (
    "train/test_multiprocess.py", "train/test_crash_resume.py", "train/test_multidevice.py",
    "train/test_seed_stacking.py", "test_main.py", "train/test_ct_stage.py",
    "test_bad_input.py", "train/test_faults.py", "test_notebooks.py",
    "train/test_code_cache.py", "train/test_causalvae_stage.py", "train/test_vae_stage.py",
    "train/test_consistency_stage.py",
)


def pytest_collection_modifyitems(items):
    missing = [path for path in _LONG_FILES_FIRST if not (REPO_ROOT / "tests" / path).exists()]
    if missing:
        raise pytest.UsageError(f"tests/conftest.py lists test files that do not exist: {missing}")

    def rank(item):
        path = item.path.relative_to(REPO_ROOT / "tests").as_posix()
        in_list = path in _LONG_FILES_FIRST
        return _LONG_FILES_FIRST.index(path) if in_list else len(_LONG_FILES_FIRST)

    items.sort(key=rank)  # stable: the order within each file stays
