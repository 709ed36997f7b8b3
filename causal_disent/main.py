r"""Trains a config's stages, or visits a finished run again.

  python -m causal_disent.main --config=configs/ctvae_shapes3d.py:small --workdir=W
  python -m causal_disent.main --config=configs/ctvae_shapes3d.py \
      --config.mcqvae.optim.learning_rate=1e-3
  python -m causal_disent.main --workdir=W --mode=eval      # evaluate again
  python -m causal_disent.main --workdir=W --mode=figures   # redraw the figures

The console shows progress, learning-curve points and a summary at the end; the
full log (every library's INFO lines) goes to WORKDIR/log.txt, and --show_log
prints it on stderr too. With --mode=eval or figures the config is the run's own
(WORKDIR/config.json); the run must have finished training.

With --max_minutes=M the run stops itself after about M minutes: the stage training
then checkpoints the step it has reached, the command prints a `paused: ...` line
and exits with status 3 (EXIT_PAUSED). Rerunning the same command resumes there, so
a shell loop can rerun while the status is 3 (launch/gpu_reproduce.sh --until-done);
a pause before the command trained any step says so (starting up took the budget, and
the same budget may get no further); --pause_at_step=S pauses each stage in the same
way once it reaches step S (to read a long run's first steps and continue it later);
0 means every stage is finished. SIGTERM (preemption) or Ctrl-C during training
saves the step in flight, prints a `stopped: ...` line and exits with 128 + the
signal's number (143, 130); rerunning resumes there. A diverged run (a NaN or
infinite loss, gradient or parameter) stops with an `error:` line naming the step
and the last good checkpoint, having saved nothing non-finite. Leave a margin for interpreter start, compilation
of the first step, the final checkpoint and a stage's final evaluation, which runs
to the end once training has finished.

With --record=results/NAME.json a finished command writes a record of the run (its
command, commit, machine, date, wall time and results.json) for the report
(`python -m report`, report/ beside results/).

Compiled programs are kept in a persistent cache (--compilation_cache, default
~/.cache/causal_disent/compiled/<machine>; 'off' to compile afresh), so a rerun or a
resume skips most of its compilation (utils/compilation_cache.py).

Logic lives in `causal_disent.train`, which the tests exercise directly.
"""

import math
import os
import shlex
import signal
import sys
from pathlib import Path

if __name__ == "__main__":
    # Until main() installs the run's own handling, Ctrl-C or SIGTERM during the slow
    # imports below ends the process with the shell's status, without a traceback.
    for _number in (signal.SIGINT, signal.SIGTERM):
        signal.signal(_number, lambda number, frame: os._exit(128 + number))
    from causal_disent import cli as _cli
    _cli.import_jax_or_exit()  # a bad JAX_* variable is one line, not an import traceback

import jax  # noqa: E402 (after the handlers above)
from absl import app, flags  # noqa: E402
from ml_collections import config_flags  # noqa: E402

from causal_disent import cli  # noqa: E402
from causal_disent.runs import orbax_noise, records  # noqa: E402
from causal_disent.runs.checkpoint import CheckpointError  # noqa: E402
from causal_disent.runs.config_file import RunConfigError, read_config  # noqa: E402
from causal_disent.runs.results import ResultsError, read_results  # noqa: E402
from causal_disent.train import interrupts  # noqa: E402
from causal_disent.train.deadline import TimeBudgetExhausted  # noqa: E402
from causal_disent.train.finite_guard import NonFiniteTraining  # noqa: E402
from causal_disent.utils import (  # noqa: E402
    compilation_cache,
    console,
    coordinator,
    peer_watch,
)

_CONFIG = config_flags.DEFINE_config_file(
    "config", None, "Config file, optionally with a variant: FILE.py:small (training "
    "only: --mode=eval and figures use the run's own config).",
    lock_config=True,
)
_MODE = flags.DEFINE_enum(
    "mode", "train", ["train", "eval", "figures"],
    "train: train the config's stages (resuming); eval: evaluate the finished run in "
    "--workdir again (results.json and figures rewritten); figures: only redraw its "
    "figures.")
_SHOW_LOG = flags.DEFINE_bool(
    "show_log", False,
    "Also print the INFO log lines on stderr (they always go to WORKDIR/log.txt).")
_WORKDIR = flags.DEFINE(
    cli.PathParser(), "workdir", None,
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
_DISTRIBUTED_TIMEOUT = flags.DEFINE_integer(
    "distributed_timeout", 300,
    "With --distributed: seconds to wait for the coordinator and every process to "
    "join (JAX's default); a process whose peers have not all met in that time "
    "stops with one line naming the missing ones.", lower_bound=1)
_MAX_MINUTES = flags.DEFINE_float(
    "max_minutes", 0.0,
    "Wall-clock budget of this command in minutes (0 = unlimited). When it is spent, "
    "the run checkpoints and exits with status 3; rerun the same command to continue.",
    lower_bound=0.0,
)
flags.register_validator(
    "max_minutes", lambda minutes: not math.isnan(minutes),
    "not a number of minutes; give 0 (no budget) or more")
_PAUSE_AT_STEP = flags.DEFINE_integer(
    "pause_at_step", 0,
    "Pause each stage this command trains once it reaches this step (0 = never), "
    "as --max_minutes does when its budget is spent: checkpoint, exit status 3. Rerun "
    "without it (or with a later step) to continue to the uninterrupted result; "
    "for reading a long run's first steps (early probes of its metrics).",
    lower_bound=0,
)

_COMPILATION_CACHE = flags.DEFINE_string(
    "compilation_cache", None,
    "Folder of the persistent cache of compiled programs, which reruns and resumes "
    "read instead of compiling again (default: $CAUSAL_DISENT_COMPILATION_CACHE, else "
    "~/.cache/causal_disent/compiled/<machine>); 'off' compiles everything afresh "
    "(causal_disent/utils/compilation_cache.py).")

_RECORD = flags.DEFINE_string(
    "record", None,
    "Write a record of this command to this .json file when it ends with every stage "
    "finished (e.g. results/<name>.json): the command, commit, machine, date, wall "
    "time and the run's results.json, with the workdir's history "
    "(causal_disent/runs/records.py). `python -m report` renders tables from them.")

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
    interrupts.stop_at_once_outside_training(_stopped_line)
    try:
        with interrupts.handled():
            try:
                _run()
            except interrupts.Interrupted as stopped:
                interrupts.exit_now(stopped.exit_status, _stopped_line(stopped))
    except SystemExit as leaving:  # the other --distributed processes hear how
        # A pause falls on the same step everywhere (train/deadline.py): nothing to tell.
        peer_watch.note_exit(0 if leaving.code == EXIT_PAUSED else leaving.code)
        raise
    except BaseException:
        peer_watch.explain_failure()  # another process's end, if that is the cause
        peer_watch.note_exit(peer_watch.ERROR_STATUS)
        raise


def _run() -> None:
    try:
        recorder = records.Recorder("-m causal_disent.main", _RECORD.value)
    except records.RecordError as error:
        sys.exit(f"error: {error}")
    config, workdir = _config_and_workdir()
    orbax_noise.quiet_console()
    if not _SHOW_LOG.value:  # before JAX's first INFO lines (its cache's reset)
        console.quiet_stderr()
    try:
        compilation_cache.enable(_COMPILATION_CACHE.value)
    except compilation_cache.CacheFolderError as error:
        sys.exit(f"error: {error}")
    # Imported once the flags are known good: the stages bring in every model and
    # metric (sklearn, matplotlib), seconds that a mistyped flag should not wait for.
    from causal_disent.train import stages
    _start_distributed()
    cli.start_devices_or_exit()  # after --distributed, which must come first
    try:
        stages.run(config, workdir, max_minutes=_MAX_MINUTES.value,
                   pause_at_step=_PAUSE_AT_STEP.value, mode=_MODE.value,
                   log_file=True, command=_command_line())
        if jax.process_index() == 0:
            recorder.write(read_results(workdir),
                           runs=[records.workdir_history(workdir)])
    except (stages.InvalidRunError, CheckpointError, NonFiniteTraining,
            records.RecordError, ResultsError) as error:
        sys.exit(f"error: {error}")
    except TimeBudgetExhausted as paused:
        if paused.at_pause_step:
            print(f"paused: {paused}, at its --pause_at_step={_PAUSE_AT_STEP.value}; "
                  f"rerun without it (or with a later step) to continue", flush=True)
        elif paused.trained:
            print(f"paused: {paused}; rerun the same command to continue", flush=True)
        else:  # a rerun with the same budget may get no further
            print(f"paused: {paused}, before this command trained a step (starting up "
                  f"took its --max_minutes={_MAX_MINUTES.value:g}); rerun with a larger "
                  f"--max_minutes to continue", flush=True)
        sys.exit(EXIT_PAUSED)
    except OSError as error:  # the workdir's disk full or read-only, late in a run
        sys.exit(f"error: {file_failure(error, workdir)}")


def file_failure(error: OSError, workdir: Path) -> str:
    """One line for a file the run could not write once it had started (a figure, a
    metrics row, an event file: checkpoints name their step, runs/checkpoint.py)."""
    where = error.filename or f"in {workdir}"
    redraw = ""
    if error.filename and Path(error.filename).parent.name == "figures":
        # Its stage's results are recorded: the rerun skips the stage, figures and all.
        redraw = f", then draw the figures again with --workdir={workdir} --mode=figures"
    return (f"cannot write {where} ({error.strerror or error}); the checkpoints saved so "
            f"far are intact: free space (or fix the permissions) and rerun the same "
            f"command to resume from the last one{redraw}")


def _start_distributed() -> None:
    """jax.distributed.initialize with the flags, when --distributed asks for it; one
    `error:` line when the processes cannot be set up (before the workdir is touched)."""
    given = [f"--{flag.name}" for flag in (_COORDINATOR, _NUM_PROCESSES, _PROCESS_ID,
                                           _DISTRIBUTED_TIMEOUT)
             if flags.FLAGS[flag.name].present]
    if not _DISTRIBUTED.value:
        if given:
            sys.exit(f"error: {', '.join(given)} {'applies' if len(given) == 1 else 'apply'} "
                     f"only with --distributed; add it, or drop "
                     f"{'it' if len(given) == 1 else 'them'} to train on this process's "
                     f"devices alone")
        return
    if _COORDINATOR.value and coordinator.split_address(_COORDINATOR.value) is None:
        sys.exit(f"error: --coordinator_address={_COORDINATOR.value} is not HOST:PORT; "
                 f"give process 0's host and a free port, e.g. 10.0.0.1:1234")
    timeout = _DISTRIBUTED_TIMEOUT.value
    address, count, index = _COORDINATOR.value, _NUM_PROCESSES.value, _PROCESS_ID.value
    origin = coordinator.FLAGS
    watch_server = watch_port = None
    try:
        if None in (address, count, index):  # SLURM, Open MPI, Kubernetes, TPU VMs
            cluster = coordinator.detect_cluster(address, count, index, timeout)
            if cluster is not None:
                address, count, index = (cluster.address, cluster.num_processes,
                                         cluster.process_id)
                origin = cluster.origin
        if None not in (address, count, index):
            if index == 0 and count > 1:
                watch_server = peer_watch.listen()
            # see utils/coordinator: JAX itself ends in a fatal log when they cannot meet
            watch_port = coordinator.meet(address, count, index, timeout, origin,
                                          watch_port=peer_watch.port_of(watch_server))
    except coordinator.RendezvousError as error:
        sys.exit(f"error: --distributed: {error}")
    if None not in (address, count, index):
        hung = (f"error: --distributed: the processes met, but JAX's coordination service "
                f"at {address} did not join all {count} in {timeout} s: a process may have "
                f"ended after the meeting (see its output), or the port is blocked between "
                f"hosts; start every process again, or raise --distributed_timeout")
    else:
        hung = (f"error: --distributed: JAX's coordination service did not join every "
                f"process in {timeout} s; check that every process started (see their "
                f"output), or raise --distributed_timeout")
    try:
        with coordinator.ends_unless_done_within(timeout, hung):
            jax.distributed.initialize(
                coordinator_address=address, num_processes=count, process_id=index,
                initialization_timeout=timeout + coordinator.JAX_GRACE_S)
    except Exception as error:  # pylint: disable=broad-except  # XLA's, or a cluster API's
        reason = (str(error).strip().splitlines() or [repr(error)])[0].rstrip(".")
        sys.exit(f"error: --distributed could not start ({reason}). On TPU VMs, SLURM, "
                 f"Open MPI and Kubernetes the processes find each other; elsewhere give "
                 f"every process --coordinator_address=HOST:PORT (process 0's), "
                 f"--num_processes=N and its own --process_id (0 to N - 1)")
    if None not in (address, count, index):  # see utils/peer_watch: a peer's death
        peer_watch.start(index, count, address, watch_server, watch_port, timeout)


def _stopped_line(stopped: interrupts.Interrupted) -> str:
    return f"stopped: {stopped}; rerun the same command to resume"


def _config_and_workdir():
    """(config, workdir) from the flags: the --config file for training (or, with
    --workdir alone, the run's own config.json, to resume it), the run's own
    config.json for --mode=eval / figures; exits with one line when they are missing."""
    if _MODE.value == "train" and flags.FLAGS["config"].present:
        config = cli.loaded_config_or_exit(_CONFIG.value)
        workdir = _WORKDIR.value
        if workdir is None:
            workdir = default_workdir(config_flags.get_config_filename(flags.FLAGS["config"]))
            print(f"workdir: {workdir.absolute()}")
        return config, Path(workdir)
    if _MODE.value == "train" and (_WORKDIR.value is None
                                   or not (Path(_WORKDIR.value) / "config.json").exists()):
        where = "" if _WORKDIR.value is None else f" ({_WORKDIR.value} holds no run to resume)"
        sys.exit(f"error: --config=FILE.py[:variant] is required to train{where}; see "
                 "configs/. --workdir=W alone resumes the run in W; to evaluate a finished "
                 "run use --workdir=W --mode=eval")
    if _WORKDIR.value is None:
        sys.exit(f"error: --mode={_MODE.value} needs --workdir=W, the workdir of a finished run")
    if flags.FLAGS["config"].present:
        sys.exit(f"error: --mode={_MODE.value} uses the run's own config "
                 f"({_WORKDIR.value}/config.json); drop --config")
    try:
        config = read_config(_WORKDIR.value)
    except RunConfigError as error:
        sys.exit(f"error: {error}")
    if _MODE.value == "train":
        commands = Path(_WORKDIR.value) / "command.txt"
        print(f"resuming {Path(_WORKDIR.value).absolute()} with its own config.json"
              + (" (its commands: command.txt)" if commands.is_file() else ""))
    config.lock()  # as the command line's: a misspelt field fails
    return config, Path(_WORKDIR.value)


def _command_line() -> str:
    """This command as a shell line that reruns it from anywhere."""
    return (f"cd {shlex.quote(os.getcwd())} && {shlex.quote(sys.executable)} -m "
            f"causal_disent.main {shlex.join(sys.argv[1:])}")


if __name__ == "__main__":
    app.run(main, flags_parser=cli.parse_flags_or_exit)
