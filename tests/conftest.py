"""Shared fixtures: a tiny CT-VAE config so compilation stays cheap on 2 cores.

Compilation dominates the suite on a CPU, and many tests (in this process and in the
command-line runs they start) compile the same tiny programs again. A persistent JAX
compilation cache, in a temporary folder that every subprocess inherits through the
environment, compiles each program once: a `:tiny` CT-VAE run takes 18 s instead of
40 with it warm. It caches every program, however quick: a tiny run compiles dozens
of small ones, and a warm `:tiny` CT-VAE run then spends another 15 % less CPU.

pytest.ini runs the suite on two workers (pytest-xdist), a test file per worker at a
time, so module fixtures are built once: most tests compile or wait on one core.
Each worker has a cache folder of its own: JAX writes an entry without a lock (it
locks only a cache with a size limit, and then rescans the whole folder at every
write, which made the suite 60 % slower), so two processes compiling the same
program at once could read each other's partial entry. For the same reason tests
that start several processes at once or kill one mid-run keep them off the worker's
cache (tests/train/test_multiprocess.py, tests/test_bad_input.py,
tests/train/test_faults.py); tests/crash_resume.py gives its runs a cache of their own.
The command line's default cache in ~/.cache is off throughout
($CAUSAL_DISENT_COMPILATION_CACHE=off), so no test writes outside its folders.

The tests also compile with JAX's `jax_disable_most_optimizations` (XLA's backend
optimisation level 0, LLVM's expensive passes off), which the command-line runs
inherit: the programs are tiny and run for a few steps, so LLVM's optimisation was
most of their cost (tests/models/test_transition_gnn.py: 55 s of CPU instead of 85).
For the same reason they set XLA's `--xla_cpu_use_fusion_emitters=false`: XLA:CPU
then emits each fused kernel with its older elemental emitters, which compile these
small programs faster than the newer fusion emitters (a `:tiny` CT-VAE run: 64 s of
CPU instead of 89; tests/models/test_transition_gnn.py: 34 instead of 53; docs/benchmarks.md
has the whole suite's figures).
Both change how fast the code runs, not what it computes (up to float rounding);
the benchmarks, which time and fingerprint the code as users run it, leave them off.
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
    os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0")
# The command line's own cache (utils/compilation_cache.py, in ~/.cache by default)
# stays off: runs use the worker's folder above, or none where a test removes it.
os.environ["CAUSAL_DISENT_COMPILATION_CACHE"] = "off"
os.environ.setdefault("JAX_DISABLE_MOST_OPTIMIZATIONS", "1")
if "xla_cpu_use_fusion_emitters" not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = (
        f"{os.environ.get('XLA_FLAGS', '')} --xla_cpu_use_fusion_emitters=false".strip())
if os.environ.get("PYTEST_XDIST_WORKER"):  # a worker: its own folder in the session's
    os.environ["JAX_COMPILATION_CACHE_DIR"] = os.path.join(
        os.environ["JAX_COMPILATION_CACHE_DIR"], os.environ["PYTEST_XDIST_WORKER"])

from tests import helpers  # noqa: E402


@pytest.fixture
def tiny():
    return helpers.tiny_config()


@pytest.fixture(autouse=True)
def _event_files_closed():
    """Tests that drive the loop or write curve points without the stage runner leave
    open the TensorBoard event files the runner would close (a ResourceWarning each
    at the worker's exit)."""
    yield
    from causal_disent.runs import tensorboard  # pylint: disable=import-outside-toplevel
    tensorboard.close_all()


# Files that take a minute or more, longest first (from `pytest --durations`). Each
# worker takes the next file when it is free, so these go first and the short files
# fill in at the end, instead of one worker finishing alone on a long file. xdist
# (>= 3.5) would otherwise sort the files by their number of tests, which put the
# one-test tests/train/test_multidevice.py (1.5 minutes) last: pytest.ini keeps this
# order with --no-loadscope-reorder (xdist >= 3.8).
_LONG_FILES_FIRST = (
    "train/test_ct_stage.py", "train/test_multiprocess.py", "test_main.py",
    "test_notebooks.py", "train/test_crash_resume.py", "test_bad_input.py",
    "train/test_causalvae_stage.py", "train/test_vae_stage.py", "train/test_seed_stacking.py",
    "train/test_multidevice.py", "train/test_code_cache.py", "models/test_ct_layer.py",
    "train/test_faults.py", "objectives/test_ct_objectives.py", "evaluation/test_card.py",
    "discovery/test_discovery.py", "models/test_transition_gnn.py",
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
