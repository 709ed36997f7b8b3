"""JAX's persistent cache of compiled programs, for `causal_disent.main` and
`causal_disent.evaluate`.

Compiling is most of a short run and part of every restart: a rerun, a resume after a
preemption or a time limit, the next seed of the same model. With the cache a program
compiled once is read back from disk, and a second `:tiny` run takes well under half
the first's time (docs/measured_choices.md); results.json stays the same to the byte,
since the cache holds the compiled executable itself.

Where: `--compilation_cache=FOLDER`, else $CAUSAL_DISENT_COMPILATION_CACHE, else
~/.cache/causal_disent/compiled/<machine> ($XDG_CACHE_HOME when set); "off" compiles
everything afresh. A cache set through JAX's own $JAX_COMPILATION_CACHE_DIR is left as
it is, unless `--compilation_cache` names another folder or "off". The entries are
native code for the machine that compiled them, so the default folder is named after
the machine's architecture and CPU features: machines sharing a home directory (a
cluster's nodes) keep apart. The folder is held to MAX_BYTES, the
least recently used entries evicted; that bound also makes JAX lock the folder around
each read and write, so concurrent runs share one folder safely. Only programs that
took at least a second to compile are kept (JAX's default). Without the filelock
package (a --no-deps install) the cache stays off.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import platform
import tempfile
from pathlib import Path

import jax
from absl import logging
from jax.experimental.compilation_cache import compilation_cache as jax_cache

ENVIRONMENT_VARIABLE = "CAUSAL_DISENT_COMPILATION_CACHE"
OFF = "off"
MAX_BYTES = 4 * 2**30  # a :tiny CT-VAE run keeps 11 programs in 2.3 MB


class CacheFolderError(ValueError):
    """A cache folder given by name cannot be used."""


def machine_name() -> str:
    """<architecture>-<hash of the CPU's feature flags> (the flags from /proc/cpuinfo,
    or what `platform` says elsewhere): one folder per kind of machine."""
    features = platform.processor()
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            features = next((line for line in cpuinfo if line.startswith("flags")), features)
    except OSError:
        pass
    digest = hashlib.sha256(features.encode()).hexdigest()[:12]
    return f"{platform.machine() or 'unknown'}-{digest}"


def default_folder() -> Path:
    """~/.cache/causal_disent/compiled/<machine> ($XDG_CACHE_HOME for ~/.cache)."""
    root = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(root) / "causal_disent" / "compiled" / machine_name()


def enable(setting: str | None = None) -> Path | None:
    """Turns the cache on for this process, before anything compiles; returns its
    folder, or None when off. `setting`: a folder, "off", or None for
    $CAUSAL_DISENT_COMPILATION_CACHE or else `default_folder()`.

    A folder named in `setting` or the environment that cannot be made or written
    raises CacheFolderError; the default folder in that case leaves the cache off
    (a read-only home directory should not stop a run)."""
    if setting == OFF:  # even a cache of JAX's own
        jax.config.update("jax_enable_compilation_cache", False)
        return None
    if jax.config.jax_compilation_cache_dir and not setting:  # the user set JAX's own
        return Path(jax.config.jax_compilation_cache_dir)
    named = setting or os.environ.get(ENVIRONMENT_VARIABLE)
    if named == OFF:
        return None
    if importlib.util.find_spec("filelock") is None:
        # JAX locks a bounded cache with it, and fails at the first compile without it:
        # an environment that skipped the package (a --no-deps install) compiles afresh.
        logging.info("no compilation cache: the filelock package is not installed")
        return None
    folder = Path(named).expanduser() if named else default_folder()
    problem = _unwritable(folder)
    if problem is not None:
        if not named:
            return None
        source = "--compilation_cache" if setting else f"${ENVIRONMENT_VARIABLE}"
        raise CacheFolderError(f"the compilation cache {folder} ({source}) cannot be used: "
                               f"{problem}; give a writable folder, or 'off'")
    jax_cache.reset_cache()  # the folder is read when the first program compiles
    jax.config.update("jax_compilation_cache_dir", str(folder))
    jax.config.update("jax_compilation_cache_max_size", MAX_BYTES)
    return folder


def _unwritable(folder: Path) -> str | None:
    """Why `folder` cannot hold the cache, or None when it can (made if missing)."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError as error:
        return error.strerror or str(error)
    return None
