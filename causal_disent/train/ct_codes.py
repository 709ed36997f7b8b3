"""Where stage 2 gets each batch's codes: the frozen MCQ-VAE's encoder on the
batch's images, or the code cache of the whole dataset (`code_cache.py`), chosen by
`config.ct.train.code_source`."""

import math
from pathlib import Path

import numpy as np
from absl import logging

from causal_disent.runs import checkpoint_paths
from causal_disent.runs import mcqvae as mcqvae_run
from causal_disent.runs import stage_one_record
from causal_disent.train import code_cache

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
    return code_cache.CacheIdentity(
        dataset=config.data.name,
        num_images=int(dataset.num_images),
        num_nodes=math.prod(mcqvae.code_grid_shape(dataset.image_shape)),
        num_codes=config.mcqvae.model.num_codes,
        stage1_step=max(steps),
        params_hash=stage_one_record.params_hash(mcqvae_params),
    )


def use_code_cache(train_config, batch_size: int, total_steps: int,
                   identity: code_cache.CacheIdentity) -> bool:
    """Whether stage 2 reads codes from the cache. "auto" caches when training would
    encode more images on the fly (2 per pair) than the dataset holds and the cache
    fits in `code_cache_max_gb`: on 2 CPU cores the small MCQ-VAE encodes 32 images in
    0.025 s and the paper-size one in 0.11 s, so the cache pays when it saves encodes
    (benchmarks/ct_step_time.py prints both paths)."""
    fits = code_cache.cache_bytes(identity) <= train_config.code_cache_max_gb * 1e9
    if train_config.code_source == "cache" and not fits:
        raise code_cache.CodeCacheError(
            f"the code cache of {identity.dataset} would take "
            f"{code_cache.cache_bytes(identity) / 1e9:.1f} GB, over "
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
    return code_cache.load_or_build(
        code_cache.cache_dir(workdir), identity, encode=encode, params=mcqvae_params,
        images=dataset.images, mesh=mesh, batch_size=train.code_cache_batch_size,
    )
