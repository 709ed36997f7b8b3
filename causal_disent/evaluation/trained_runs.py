"""A finished training run (a workdir of `causal_disent.main`) as something to score:
its config, dataset, representations and model-specific causal scores.

  run = open_run(workdir, mesh)
  run.representations        {name: ImageRepresentation}, default first
  run.causal_scores()        MIC/TIC/SHD (CausalVAE) or action/factor accuracy (CT-VAE)

The run's model family comes from its stages: "causalvae" -> the CausalVAE (or the
baseline variant it was trained as); "ct" or "mcqvae" -> the MCQ-VAE of stage 1,
whose codes are the CT-VAE's causal variables (with the CT layer's action and
factor accuracy when stage 2 is trained); "vae" -> the VAE family (β-VAE, ..., the
AE and the X-models), whose causal scores are the interventional-consistency scores
INV / EQV / SCN (evaluation/consistency_scores.py).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Callable

import jax
import ml_collections
import numpy as np
from jax.sharding import Mesh

from causal_disent.data import registry, splits, transitions
from causal_disent.evaluation import (
    causalvae_evaluation,
    consistency_scores,
    ct_evaluation,
    representations,
)
from causal_disent.evaluation.ct_retrieval import make_encoder
from causal_disent.runs import causalvae as causalvae_run
from causal_disent.runs import ct as ct_run
from causal_disent.runs import mcqvae as mcqvae_run
from causal_disent.runs import seeds
from causal_disent.runs import vae as vae_run
from causal_disent.runs.checkpoint import CheckpointError
from causal_disent.runs.config_file import RunConfigError, read_config


class RunError(ValueError):
    """The workdir is not a finished run this module can score."""


@dataclasses.dataclass
class TrainedRun:
    workdir: Path
    config: ml_collections.ConfigDict
    family: str  # "causalvae", "ctvae" or "vae"
    dataset: object
    representations: dict  # name -> ImageRepresentation; the first is the default
    causal_scores: Callable[[], dict]


def load_config(workdir: Path) -> ml_collections.ConfigDict:
    """The config the run saved (WORKDIR/config.json); RunError if it is missing."""
    try:
        return read_config(workdir)
    except RunConfigError as error:
        raise RunError(str(error)) from error


def open_run(workdir: str | Path, mesh: Mesh, batch_size: int = 256) -> TrainedRun:
    """The run in `workdir` with its latest checkpoint's parameters restored."""
    workdir = Path(workdir).absolute()
    config = load_config(workdir)
    if seeds.num_seeds(config) > 1:
        raise RunError(
            f"{workdir} trained {seeds.num_seeds(config)} models at once (num_seeds); score "
            f"each in its own run: --workdir={seeds.seed_workdir(workdir, config.seed)} "
            f"(seeds {', '.join(map(str, seeds.run_seeds(config)))})")
    stages = tuple(config.stages)
    dataset = registry.dataset_from_config(config.data)
    try:
        if causalvae_run.STAGE in stages:
            return _causalvae_run(workdir, config, dataset, mesh, batch_size)
        if mcqvae_run.STAGE in stages or ct_run.STAGE in stages:
            return _ctvae_run(workdir, config, dataset, mesh, batch_size)
        if vae_run.STAGE in stages:
            return _vae_run(workdir, config, dataset, mesh, batch_size)
    except CheckpointError as error:
        raise RunError(str(error)) from error
    raise RunError(f"{workdir}: config.stages {stages} has no stage with a representation "
                   f"to score")


def _restored(stage_run, config, workdir, mesh, dataset):
    """(model, parameters on the host) of the latest checkpoint of `stage_run`'s stage
    (a runs.* module with `load_trained`) in `workdir`."""
    model, params = stage_run.load_trained(config, workdir, mesh, dataset)
    return model, jax.device_get(params)


def _causalvae_run(workdir, config, dataset, mesh, batch_size) -> TrainedRun:
    model, params = _restored(causalvae_run, config, workdir, mesh, dataset)

    def causal_scores() -> dict:
        split = splits.configured_split(dataset, config.data)
        test = causalvae_run.evaluation_indices(config, split)
        return causalvae_evaluation.evaluate(
            model=model, params=params, dataset=dataset, indices=test,
            labels=dataset.labels(test).astype(np.float32), mesh=mesh,
            batch_size=config.causalvae.train.eval_batch_size,
            graph_threshold=config.causalvae.train.graph_threshold,
            dag_c=config.causalvae.objective.dag_c,
        )

    return TrainedRun(workdir, config, "causalvae", dataset,
                      representations.causalvae_representations(model, params, batch_size),
                      causal_scores)


def _ctvae_run(workdir, config, dataset, mesh, batch_size) -> TrainedRun:
    stage1_dir = (ct_run.mcqvae_workdir(config, workdir)
                  if ct_run.STAGE in config.stages else workdir)
    mcqvae, mcqvae_params = _restored(mcqvae_run, config, stage1_dir, mesh, dataset)

    def causal_scores() -> dict:
        if ct_run.STAGE not in config.stages:
            return {}
        model, params = ct_run.load_trained(config, workdir, mesh, dataset,
                                            stage1_params=mcqvae_params)
        split = splits.configured_split(dataset, config.data)
        return ct_evaluation.evaluate_test_pairs(
            model=model, params=params, mcqvae=mcqvae, mcqvae_params=mcqvae_params,
            encode=make_encoder(mcqvae, mesh), dataset=dataset,
            sampler=transitions.sampler_for(dataset, split, seed=config.seed), mesh=mesh,
            batch_size=config.ct.train.eval_batch_size, rng=ct_run.stage_rngs(config)[2],
            **config.ct.eval)

    return TrainedRun(workdir, config, "ctvae", dataset,
                      representations.mcqvae_representations(mcqvae, mcqvae_params, batch_size),
                      causal_scores)


def _vae_run(workdir, config, dataset, mesh, batch_size) -> TrainedRun:
    model, params = _restored(vae_run, config, workdir, mesh, dataset)

    def causal_scores() -> dict:
        split = splits.configured_split(dataset, config.data)
        return {"consistency": consistency_scores.score_test_images(
            model, params, dataset, split["test"], config.seed, batch_size)}

    return TrainedRun(workdir, config, "vae", dataset,
                      representations.vae_representations(model, params, batch_size),
                      causal_scores)
