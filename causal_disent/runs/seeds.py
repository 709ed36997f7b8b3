"""The run format of a run that trained `config.num_seeds` = S models at once
(train/seed_stacking.py): model k has seed config.seed + k and is written as a run of
its own, with num_seeds = 1, in WORKDIR/seeds/seed_<seed>."""

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
