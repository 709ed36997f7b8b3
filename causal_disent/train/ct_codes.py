"""Where stage 2 gets each batch's codes: the frozen MCQ-VAE's encoder on the
batch's images, or the code cache of the whole dataset, chosen by
`config.ct.train.code_source` (`use_code_cache`).

The code cache holds the frozen MCQ-VAE's codes of every image of the dataset,
encoded once. Stage 1 is frozen during stage 2, so an image's codes never change: a
long stage-2 run encodes each image hundreds of times on the fly (every step encodes
X and Y). The cache encodes the whole dataset once, in jitted batches over all
devices, and stage 2 then reads codes by image index: no rendering, no encoder in
the step.

On disk (`<workdir>/code_cache/`): `codes.npy`, uint8 (uint16 when K > 256)
[num_images, N] in the CT layer's node order, and `codes.json`, written last, which
names what the codes belong to: the dataset, N, K, the stage-1 step and a hash of
the stage-1 parameters, and a checksum of the array. A cache that does not match the
run (another stage-1 checkpoint, another dataset or encoder) or whose file is cut
short or damaged is refused with a CodeCacheError naming the fix; it is never used
silently and never overwritten.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import time
import zlib
from collections.abc import Callable
from pathlib import Path

import jax
import numpy as np
from absl import logging
from jax.experimental import multihost_utils
from jax.sharding import Mesh

from causal_disent.runs import checkpoint_paths
from causal_disent.runs import mcqvae as mcqvae_run
from causal_disent.runs import stage_one_record
from causal_disent.utils import json_values
from causal_disent.utils.sharding import padded_global_batches

SOURCES = ("auto", "cache", "encode")


def batch_codes(batch: dict, encode, mcqvae_params) -> dict:
    """A global batch as the CT objectives take it, {x_codes, y_codes, action}:
    cached codes pass through, images are encoded by the frozen MCQ-VAE."""
    if "x_codes" in batch:
        return {key: batch[key] for key in ("x_codes", "y_codes", "action")}
    return {
        "x_codes": encode(mcqvae_params, batch["x"]),
        "y_codes": encode(mcqvae_params, batch["y"]),
        "action": batch["action"],
    }


def cache_identity(config, dataset, mcqvae, mcqvae_params, stage1_workdir: Path):
    """What a code cache for this run must have been built from."""
    steps = checkpoint_paths.saved_steps(stage1_workdir, mcqvae_run.STAGE)
    return CacheIdentity(
        dataset=config.data.name,
        num_images=int(dataset.num_images),
        num_nodes=math.prod(mcqvae.code_grid_shape(dataset.image_shape)),
        num_codes=config.mcqvae.model.num_codes,
        stage1_step=max(steps),
        params_hash=stage_one_record.params_hash(mcqvae_params),
    )


def use_code_cache(train_config, batch_size: int, total_steps: int,
                   identity: CacheIdentity) -> bool:
    """Whether stage 2 reads codes from the cache. "auto" caches when training would
    encode more images on the fly (2 per pair) than the dataset holds and the cache
    fits in `code_cache_max_gb`: encoding is a large share of a stage-2 step, so the
    cache pays when it saves encodes (benchmarks/ct_step_time.py prints both paths)."""
    fits = cache_bytes(identity) <= train_config.code_cache_max_gb * 1e9
    if train_config.code_source == "cache" and not fits:
        raise CodeCacheError(
            f"the code cache of {identity.dataset} would take "
            f"{cache_bytes(identity) / 1e9:.1f} GB, over "
            f"ct.train.code_cache_max_gb = {train_config.code_cache_max_gb}: raise it or "
            f"encode on the fly with --config.ct.train.code_source=encode"
        )
    if train_config.code_source != "auto":
        return train_config.code_source == "cache"
    return fits and 2 * batch_size * total_steps > identity.num_images


def training_codes(config, dataset, mcqvae, mcqvae_params, encode, mesh, workdir: Path,
                   total_steps: int, stage1_workdir: Path) -> np.ndarray | None:
    """The code cache [num_images, N] when this run reads one (built on first use),
    else None: training encodes each batch's images."""
    train = config.ct.train
    identity = cache_identity(config, dataset, mcqvae, mcqvae_params, stage1_workdir)
    if not use_code_cache(train, config.ct.optim.batch_size, total_steps, identity):
        logging.info("[ct] encoding each batch's images on the fly")
        return None
    return load_or_build(
        cache_dir(workdir), identity, encode=encode, params=mcqvae_params,
        images=dataset.images, mesh=mesh, batch_size=train.code_cache_batch_size,
    )


# The cache on disk --------------------------------------------------------------

FORMAT_VERSION = 1
CODES_FILE = "codes.npy"
META_FILE = "codes.json"


class CodeCacheError(ValueError):
    """A code cache exists but cannot be used for this run."""


@dataclasses.dataclass(frozen=True)
class CacheIdentity:
    """What a cache's codes belong to; every field must match to use it."""

    dataset: str
    num_images: int
    num_nodes: int
    num_codes: int
    stage1_step: int
    params_hash: str


def cache_dir(workdir: Path) -> Path:
    return Path(workdir) / "code_cache"


def code_dtype(num_codes: int) -> np.dtype:
    return np.dtype(np.uint8 if num_codes <= 256 else np.uint16)


def cache_bytes(identity: CacheIdentity) -> int:
    return identity.num_images * identity.num_nodes * code_dtype(identity.num_codes).itemsize


def load(directory: Path, identity: CacheIdentity) -> np.ndarray | None:
    """The cached codes [num_images, N], or None when there is no complete cache.

    Raises CodeCacheError when a cache is there but belongs to something else or is
    damaged."""
    directory = Path(directory)
    meta_path, codes_path = directory / META_FILE, directory / CODES_FILE
    if not meta_path.exists():
        return None  # never built, or a build that stopped before its last write
    fix = f"delete {directory} to rebuild it (it is rebuilt from the current stage 1)"
    try:
        meta = json.loads(meta_path.read_text())
        stored = CacheIdentity(**{f.name: meta[f.name] for f in dataclasses.fields(CacheIdentity)})
    except (ValueError, KeyError, TypeError) as error:
        raise CodeCacheError(f"code cache metadata {meta_path} is unreadable ({error}): {fix}") from error
    if stored.dataset != identity.dataset or stored.num_images != identity.num_images:
        raise CodeCacheError(
            f"code cache {directory} holds codes of dataset {stored.dataset!r} "
            f"({stored.num_images} images) but this run uses {identity.dataset!r} "
            f"({identity.num_images} images): use another --workdir, or {fix}"
        )
    if (stored.num_nodes, stored.num_codes) != (identity.num_nodes, identity.num_codes):
        raise CodeCacheError(
            f"code cache {directory} has N={stored.num_nodes}, K={stored.num_codes} but "
            f"this run's MCQ-VAE has N={identity.num_nodes}, K={identity.num_codes}: {fix}"
        )
    if (stored.stage1_step, stored.params_hash) != (identity.stage1_step, identity.params_hash):
        raise CodeCacheError(
            f"code cache {directory} was built from stage-1 step {stored.stage1_step} "
            f"(params {stored.params_hash}) but this run's stage 1 is step "
            f"{identity.stage1_step} (params {identity.params_hash}): {fix}"
        )
    expected_shape = (identity.num_images, identity.num_nodes)
    try:
        codes = np.load(codes_path, mmap_mode="r", allow_pickle=False)
        if codes.shape != expected_shape or codes.dtype != code_dtype(identity.num_codes):
            raise ValueError(f"shape {codes.shape} {codes.dtype}, expected {expected_shape}")
        codes = np.array(codes)  # into memory: training reads rows at random
    except (OSError, ValueError, EOFError) as error:
        raise CodeCacheError(f"code cache {codes_path} is truncated or corrupt ({error}): {fix}") from error
    if _checksum(codes) != meta.get("checksum"):
        raise CodeCacheError(f"code cache {codes_path} is corrupt (checksum mismatch): {fix}")
    return codes


def build(
    *,
    encode: Callable,
    params,
    images: Callable[[np.ndarray], np.ndarray],
    identity: CacheIdentity,
    mesh: Mesh,
    batch_size: int,
) -> np.ndarray:
    """Codes [num_images, N] of every image, encoded in global batches over all
    devices (each host renders its slice of each batch); every host gets them all.

    `encode(params, images)` -> [B, N] is the jitted, batch-sharded stage-2 encoder;
    `images(index)` renders or reads uint8 images.
    """
    num_images = identity.num_images
    codes = np.empty((num_images, identity.num_nodes), code_dtype(identity.num_codes))
    start_time, last_log = time.perf_counter(), 0.0
    batches = padded_global_batches(num_images, batch_size, mesh,
                                    lambda index: {"images": images(index)})
    for start, batch, keep in batches:
        encoded = multihost_utils.process_allgather(encode(params, batch["images"]), tiled=True)
        codes[start:start + keep] = np.asarray(encoded)[:keep]
        elapsed = time.perf_counter() - start_time
        if elapsed - last_log > 30 or start + keep == num_images:
            last_log = elapsed
            logging.info("[code cache] %d / %d images encoded (%.0f images/s)",
                         start + keep, num_images, (start + keep) / max(elapsed, 1e-9))
    return codes


def save(directory: Path, identity: CacheIdentity, codes: np.ndarray) -> None:
    """Writes the codes, then the metadata that makes them valid (process 0 only)."""
    if jax.process_index() != 0:
        return
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    partial = directory / (CODES_FILE + ".partial")
    with open(partial, "wb") as handle:
        np.save(handle, codes)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(partial, directory / CODES_FILE)
    meta = {**dataclasses.asdict(identity), "format_version": FORMAT_VERSION,
            "dtype": str(codes.dtype), "checksum": _checksum(codes)}
    (directory / META_FILE).write_text(json_values.dumps(meta, indent=2) + "\n")


def load_or_build(directory: Path, identity: CacheIdentity, **build_args) -> np.ndarray:
    """The cache in `directory` when it is valid for `identity`; else builds and saves
    it (`build_args` as for `build`). Hosts agree on whether to build, since building
    runs collectives."""
    codes = load(directory, identity)
    if jax.process_count() > 1:
        everyone_has = multihost_utils.process_allgather(np.array(codes is not None))
        if not np.all(everyone_has):
            codes = None
    if codes is None:
        logging.info("[code cache] encoding %d images of %s into %s (%.1f MB)",
                     identity.num_images, identity.dataset, directory,
                     cache_bytes(identity) / 1e6)
        codes = build(identity=identity, **build_args)
        save(directory, identity, codes)
    return codes


def _checksum(codes: np.ndarray) -> str:
    return f"{zlib.crc32(np.ascontiguousarray(codes).data) & 0xFFFFFFFF:08x}"
