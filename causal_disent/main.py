r"""Trains a config's stages.

  python -m causal_disent.main --config=configs/ctvae_shapes3d.py:small --workdir=W
  python -m causal_disent.main --config=configs/ctvae_shapes3d.py \
      --config.mcqvae.optim.learning_rate=1e-3

Logic lives in `causal_disent.train`, which the tests exercise directly.
"""

import sys
from pathlib import Path

import jax
from absl import app, flags, logging
from ml_collections import config_flags

from causal_disent.train import stages
from causal_disent.train.reporting import quiet_orbax_info

_CONFIG = config_flags.DEFINE_config_file(
    "config", None, "Config file, optionally with a variant: FILE.py:small.",
    lock_config=True,
)
_WORKDIR = flags.DEFINE_string(
    "workdir", None,
    "Directory for checkpoints, metrics and figures; a rerun resumes from it. "
    "Default: workdirs/<config name>[_<variant>].",
)
_DISTRIBUTED = flags.DEFINE_bool(
    "distributed", False,
    "Call jax.distributed.initialize() first (multi-host TPU pods and clusters).",
)
flags.mark_flags_as_required(["config"])


def default_workdir(config_argument: str) -> Path:
    """workdirs/ctvae_shapes3d_small for configs/ctvae_shapes3d.py:small."""
    path, _, variant = config_argument.partition(":")
    name = Path(path).stem + (f"_{variant}" if variant else "")
    return Path("workdirs") / name


def main(argv):
    if len(argv) > 1:
        raise app.UsageError(f"unexpected arguments: {' '.join(argv[1:])}")
    logging.get_absl_handler().addFilter(quiet_orbax_info)
    if _DISTRIBUTED.value:
        jax.distributed.initialize()
    workdir = _WORKDIR.value
    if workdir is None:
        workdir = default_workdir(config_flags.get_config_filename(flags.FLAGS["config"]))
        print(f"workdir: {workdir.absolute()}")
    try:
        stages.run(_CONFIG.value, workdir)
    except stages.InvalidRunError as error:
        sys.exit(f"error: {error}")


if __name__ == "__main__":
    app.run(main)
