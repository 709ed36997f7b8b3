r"""Trains a config's stages.

  python -m causal_disent.main --config=configs/ctvae_shapes3d.py:small --workdir=W
  python -m causal_disent.main --config=configs/ctvae_shapes3d.py \
      --config.mcqvae.optim.learning_rate=1e-3

With --max_minutes=M the run stops itself after about M minutes: the stage training
then checkpoints the step it has reached, the command prints a `paused: ...` line
and exits with status 3 (EXIT_PAUSED). Rerunning the same command resumes there, so
a shell loop can rerun while the status is 3 (launch/gpu_reproduce.sh --until-done);
0 means every stage is finished. SIGTERM (preemption) or Ctrl-C during training
saves the step in flight, prints a `stopped: ...` line and exits with 128 + the
signal's number (143, 130); rerunning resumes there. A diverged run (a NaN or
infinite loss, gradient or parameter) stops with an `error:` line naming the step
and the last good checkpoint, having saved nothing non-finite. Leave a margin for interpreter start, compilation
of the first step, the final checkpoint and a stage's final evaluation, which runs
to the end once training has finished.

Logic lives in `causal_disent.train`, which the tests exercise directly.
"""

import sys
from pathlib import Path

import jax
from absl import app, flags, logging
from ml_collections import config_flags

from causal_disent import cli
from causal_disent.runs.checkpoint import CheckpointError, quiet_orbax_info
from causal_disent.train import interrupts, stages
from causal_disent.train.deadline import TimeBudgetExhausted
from causal_disent.train.finite_guard import NonFiniteTraining

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
    "Call jax.distributed.initialize() first (multi-host TPU pods and clusters). On "
    "TPU VMs, SLURM, Open MPI and Kubernetes it finds its peers itself; elsewhere "
    "pass --coordinator_address, --num_processes and --process_id.",
)
_COORDINATOR = flags.DEFINE_string(
    "coordinator_address", None,
    "With --distributed: host:port of process 0's coordinator (default: detected).")
_NUM_PROCESSES = flags.DEFINE_integer(
    "num_processes", None, "With --distributed: how many processes (default: detected).",
    lower_bound=1)
_PROCESS_ID = flags.DEFINE_integer(
    "process_id", None, "With --distributed: this process's index (default: detected).",
    lower_bound=0)
_MAX_MINUTES = flags.DEFINE_float(
    "max_minutes", 0.0,
    "Wall-clock budget of this command in minutes (0 = unlimited). When it is spent, "
    "the run checkpoints and exits with status 3; rerun the same command to continue.",
    lower_bound=0.0,
)
flags.mark_flags_as_required(["config"])

# Exit status of a run that stopped at its --max_minutes budget: rerun to continue.
EXIT_PAUSED = 3


def default_workdir(config_argument: str) -> Path:
    """workdirs/ctvae_shapes3d_small for configs/ctvae_shapes3d.py:small."""
    path, _, variant = config_argument.partition(":")
    name = Path(path).stem + (f"_{variant}" if variant else "")
    return Path("workdirs") / name


def main(argv):
    if len(argv) > 1:
        sys.exit(f"error: unexpected arguments {' '.join(argv[1:])}; every option is "
                 "a --flag (--config=FILE.py[:variant], --config.<field>=VALUE, --workdir)")
    config = cli.loaded_config_or_exit(_CONFIG.value)
    logging.get_absl_handler().addFilter(quiet_orbax_info)
    if _DISTRIBUTED.value:
        jax.distributed.initialize(coordinator_address=_COORDINATOR.value,
                                   num_processes=_NUM_PROCESSES.value,
                                   process_id=_PROCESS_ID.value)
    workdir = _WORKDIR.value
    if workdir is None:
        workdir = default_workdir(config_flags.get_config_filename(flags.FLAGS["config"]))
        print(f"workdir: {workdir.absolute()}")
    try:
        with interrupts.handled():
            stages.run(config, workdir, max_minutes=_MAX_MINUTES.value)
    except (stages.InvalidRunError, CheckpointError, NonFiniteTraining) as error:
        sys.exit(f"error: {error}")
    except TimeBudgetExhausted as paused:
        print(f"paused: {paused}; rerun the same command to continue", flush=True)
        sys.exit(EXIT_PAUSED)
    except interrupts.Interrupted as stopped:
        print(f"stopped: {stopped}; rerun the same command to resume", flush=True)
        sys.exit(stopped.exit_status)


if __name__ == "__main__":
    app.run(main, flags_parser=cli.parse_flags_or_exit)
