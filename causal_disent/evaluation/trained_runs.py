"""A finished training run (a workdir of `causal_disent.main`) as something to score:
its config, dataset, representations and model-specific causal scores.

  run = open_run(workdir, mesh)
  run.representations        {name: ImageRepresentation}, default first
  run.causal_scores()        MIC/TIC/SHD (CausalVAE) or action/factor accuracy (CT-VAE)

The run's model family comes from its stages: "causalvae" -> the CausalVAE (or the
baseline variant it was trained as); "ct" or "mcqvae" -> the MCQ-VAE of stage 1,
whose codes are the CT-VAE's causal variables (with the CT layer's action and
factor accuracy when stage 2 is trained).
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Callable

import jax
import ml_collections
import numpy as np
from jax.sharding import Mesh

from causal_disent.data import registry, splits, transitions
from causal_disent.evaluation import representations
from causal_disent.train import causalvae_stage, ct_codes, ct_stage, mcqvae_stage
from causal_disent.train.checkpoint import CheckpointError


class RunError(ValueError):
    """The workdir is not a finished run this module can score."""


@dataclasses.dataclass
class TrainedRun:
    workdir: Path
    config: ml_collections.ConfigDict
    family: str  # "causalvae" or "ctvae"
    dataset: object
    representations: dict  # name -> ImageRepresentation; the first is the default
    causal_scores: Callable[[], dict]


def load_config(workdir: Path) -> ml_collections.ConfigDict:
    """The config the run saved (WORKDIR/config.json), JSON lists back as tuples."""
    path = Path(workdir) / "config.json"
    if not path.exists():
        raise RunError(
            f"{path} not found: --workdir must be the directory of a run of "
            f"causal_disent.main (it writes config.json there)"
        )
    try:
        raw = json.loads(path.read_text())
    except json.JSONDecodeError as error:
        raise RunError(f"{path} is not valid JSON ({error}); was the run's workdir "
                       f"overwritten?") from error
    return ml_collections.ConfigDict(_lists_to_tuples(raw))


def _lists_to_tuples(value):
    if isinstance(value, dict):
        return {key: _lists_to_tuples(item) for key, item in value.items()}
    if isinstance(value, list):
        return tuple(_lists_to_tuples(item) for item in value)
    return value


def open_run(workdir: str | Path, mesh: Mesh, batch_size: int = 256) -> TrainedRun:
    """The run in `workdir` with its latest checkpoint's parameters restored."""
    workdir = Path(workdir).absolute()
    config = load_config(workdir)
    stages = tuple(config.stages)
    dataset = registry.dataset_from_config(config.data)
    try:
        if causalvae_stage.STAGE in stages:
            return _causalvae_run(workdir, config, dataset, mesh, batch_size)
        if mcqvae_stage.STAGE in stages or ct_stage.STAGE in stages:
            return _ctvae_run(workdir, config, dataset, mesh, batch_size)
    except CheckpointError as error:
        raise RunError(str(error)) from error
    raise RunError(f"{workdir}: config.stages {stages} has no stage with a representation "
                   f"to score")


def _causalvae_run(workdir, config, dataset, mesh, batch_size) -> TrainedRun:
    model, params = causalvae_stage.load_trained(config, workdir, mesh, dataset)
    params = jax.device_get(params)

    def causal_scores() -> dict:
        split = splits.dataset_split(dataset, config.data.split_fractions,
                                     config.data.split_seed)
        test = causalvae_stage.evaluation_indices(config, split)
        return causalvae_stage.evaluate(
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
    stage1_dir = (ct_stage.mcqvae_workdir(config, workdir)
                  if ct_stage.STAGE in config.stages else workdir)
    mcqvae, mcqvae_params = mcqvae_stage.load_trained(config, stage1_dir, mesh, dataset)
    mcqvae_params = jax.device_get(mcqvae_params)

    def causal_scores() -> dict:
        if ct_stage.STAGE not in config.stages:
            return {}
        model, params = ct_stage.load_trained(config, workdir, mesh, dataset)
        split = splits.dataset_split(dataset, config.data.split_fractions,
                                     config.data.split_seed)
        return ct_stage.evaluate_on_test(
            config, model, params, mcqvae, mcqvae_params, ct_codes.make_encoder(mcqvae, mesh),
            dataset, transitions.sampler_for(dataset, split, seed=config.seed), mesh)

    return TrainedRun(workdir, config, "ctvae", dataset,
                      representations.mcqvae_representations(mcqvae, mcqvae_params, batch_size),
                      causal_scores)
