"""The run format of a run that trained `config.num_seeds` = S models at once
(train/seed_stacking.py): model k has seed config.seed + k and is written as a run of
its own, with num_seeds = 1, in WORKDIR/seeds/seed_<seed>."""

import json
import os
from pathlib import Path

import ml_collections

SEED_WORKDIR = "seeds/seed_{seed}"


def num_seeds(config: ml_collections.ConfigDict) -> int:
    """S, the number of models the run trains at once (1 when unset)."""
    return int(config.get("num_seeds", 1))


def run_seeds(config: ml_collections.ConfigDict) -> list[int]:
    """The seeds of the run's models: config.seed, config.seed + 1, ..."""
    return [config.seed + k for k in range(num_seeds(config))]


def seed_config(config: ml_collections.ConfigDict, seed: int) -> ml_collections.ConfigDict:
    """The config of one of the models as a run of its own: `seed`, num_seeds = 1."""
    single = ml_collections.ConfigDict(config.to_dict())
    single.seed = seed
    single.num_seeds = 1
    return single


def seed_workdir(workdir: str | Path, seed: int) -> Path:
    """Where the model of `seed` is written inside the workdir of a many-seed run."""
    return Path(workdir) / SEED_WORKDIR.format(seed=seed)


def stacked_run_of(workdir: str | Path) -> Path | None:
    """The many-seed run that `workdir` is one model of (its WORKDIR/seeds/seed_<seed>,
    by the run's config.json), or None. Such a folder is written from that run's
    checkpoints, never trained on its own."""
    workdir = Path(os.path.abspath(workdir))  # ".." resolved, links kept
    stacked = workdir.parent.parent
    if workdir.parent.name != Path(SEED_WORKDIR).parent.name:
        return None
    try:
        # Read here, not with config_file.read_config: that module imports records,
        # which imports this one.
        trained = run_seeds(ml_collections.ConfigDict(
            json.loads((stacked / "config.json").read_text())))
    except (OSError, ValueError, AttributeError, TypeError):  # no run there, or not ours
        return None
    if len(trained) > 1 and any(seed_workdir(stacked, seed) == workdir for seed in trained):
        return stacked
    return None
