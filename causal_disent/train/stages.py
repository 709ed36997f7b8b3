"""The stages a config can list, and running them in order."""

import logging
import os
import tempfile
import time
from pathlib import Path

import jax
import ml_collections

from causal_disent.data import registry, splits
from causal_disent.evaluation import trained_runs
from causal_disent.runs import causalvae as causalvae_run
from causal_disent.runs import checkpoint, checkpoint_paths
from causal_disent.runs import ct as ct_run
from causal_disent.runs import mcqvae as mcqvae_run
from causal_disent.runs import orbax_noise, seeds
from causal_disent.runs import summary
from causal_disent.runs import vae as vae_run
from causal_disent.runs import workdir_lock
from causal_disent.runs.config_file import record_command, with_absolute_paths, write_config
from causal_disent.runs.results import read_results
from causal_disent.train import causalvae_stage, config_ranges, ct_codes, ct_stage
from causal_disent.train import deadline as deadline_lib
from causal_disent.train import device_data, mcqvae_stage, multi_step, out_of_memory, runner
from causal_disent.train import resumed_config, split_sizes, vae_stage
from causal_disent.utils import console
from causal_disent.utils.sharding import make_data_mesh

# The registration of a stage: name -> (its training module, with validate(config,
# mesh, workdir) and run(config, workdir, mesh, mode); its run-format module, with
# signature(config), build_model and load_trained).
STAGES = {
    mcqvae_run.STAGE: (mcqvae_stage, mcqvae_run),
    ct_run.STAGE: (ct_stage, ct_run),
    causalvae_run.STAGE: (causalvae_stage, causalvae_run),
    vae_run.STAGE: (vae_stage, vae_run),
}


class InvalidRunError(ValueError):
    """The config or workdir cannot be used; raised before anything compiles."""


def validate(config: ml_collections.ConfigDict, workdir: Path, mesh) -> None:
    """Every check that needs no compilation: names, sizes, divisibility, the workdir
    and the compatibility of checkpoints already in it. Raises InvalidRunError."""
    try:
        _validate(config, Path(workdir), mesh)
    except (ValueError, checkpoint.CheckpointError) as error:
        raise InvalidRunError(str(error)) from error


def _validate(config: ml_collections.ConfigDict, workdir: Path, mesh) -> None:
    if not config.stages:
        raise ValueError(f"config.stages is empty; known stages: {', '.join(STAGES)}")
    for index, stage in enumerate(config.stages):
        if stage not in STAGES:
            raise ValueError(
                f"unknown stage {stage!r} in config.stages; known stages: "
                f"{', '.join(STAGES)}"
            )
        if stage in config.stages[:index]:
            raise ValueError(f"config.stages {tuple(config.stages)} names {stage!r} twice; "
                             f"name each stage once (a finished stage is skipped when "
                             f"the command runs again)")
    config_ranges.check_ranges(config)
    multi_step.check_config(config)
    device_data.check_config(config)
    split_sizes.check_curve_sizes(config)
    registry.check_dataset_name(config.data.name)
    try:  # opening is cheap (procedural: nothing rendered; TFDS: file handles)
        dataset = registry.dataset_from_config(config.data)
    except OSError as error:  # a real dataset not prepared: its message says how
        raise ValueError(str(error)) from error
    splits.check_split_fractions(config.data.split_fractions)
    for stage in config.stages:
        training, run_format = STAGES[stage]
        if config.get("num_seeds", 1) != 1 and not getattr(training, "TRAINS_MANY_SEEDS", False):
            raise ValueError(f"num_seeds {config.num_seeds} is not supported by stage "
                             f"{stage!r} (only by: {', '.join(many_seed_stages())}); "
                             "set num_seeds = 1 and run one seed per process")
        training.validate(config, mesh, workdir)
        checkpoint.check_workdir_compatible(workdir, stage, run_format.signature(config))
    resumed_config.check_same_run(config, workdir, frozenset(STAGES))
    split_sizes.check_split_sizes(config, dataset)
    check_workdir_writable(workdir)  # last: it creates the workdir


def check_outside_other_runs(workdir: Path) -> None:
    """InvalidRunError for training inside another run's folder. One model's folder
    of a many-seed run is written by that run from its own checkpoints: training it
    there would leave it disagreeing with the run's results over the seeds (it can be
    evaluated). A folder inside one of a run's own folders (RUN_FOLDERS) would mix a
    second run into the first one's files."""
    stacked = seeds.stacked_run_of(workdir)
    if stacked is not None:
        seed = workdir.name.removeprefix("seed_")  # stacked_run_of checked the name
        raise InvalidRunError(
            f"{workdir} is one model of the many-seed run in {stacked}, which trains it and "
            f"writes it from its own checkpoints: train or resume that run with "
            f"--workdir={stacked}, or this seed alone in a new --workdir with "
            f"--config.seed={seed}")
    normal = Path(os.path.abspath(workdir))  # "a/figures/../.." is not in a/figures
    for folder in normal.parents:
        inside = normal.relative_to(folder).parts[0]
        if inside in RUN_FOLDERS and (folder / "config.json").is_file():
            raise InvalidRunError(
                f"--workdir={workdir} is inside the {inside}/ folder of the run in {folder}, "
                f"whose files it would mix with its own; give the run a folder outside any "
                f"other run's")


# The folders a run writes inside its workdir. Another run may live beside them (a
# run trained into /tmp once leaves every later run under /tmp alone), not in them.
RUN_FOLDERS = frozenset({"checkpoints", "curves", "figures", "interventions", "seeds",
                         "tensorboard"})


def many_seed_stages() -> list[str]:
    """The stages that can train `num_seeds` > 1 models in one step."""
    return [name for name, (training, _) in STAGES.items()
            if getattr(training, "TRAINS_MANY_SEEDS", False)]


def check_workdir_writable(workdir: Path) -> None:
    try:
        workdir.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=workdir):
            pass
    except OSError as error:
        raise ValueError(
            f"workdir {workdir} is not writable ({error.strerror}); pass a directory "
            f"you can write to with --workdir"
        ) from error


def check_finished(config: ml_collections.ConfigDict, workdir: Path) -> None:
    """InvalidRunError unless every stage of `config` finished training in `workdir`
    (its results recorded at a step whose checkpoint is there): what re-evaluating
    or redrawing needs."""
    unfinished = _first_unfinished_stage(config, workdir)
    if unfinished is not None:
        raise InvalidRunError(f"{unfinished}; finish it first by rerunning its training "
                              f"command with --workdir={workdir}")


def _first_unfinished_stage(config: ml_collections.ConfigDict, workdir: Path) -> str | None:
    """"stage 'S' in W has not finished training (where it is)", or None when every
    stage recorded its results at a step whose checkpoint is there."""
    recorded = read_results(workdir)
    for stage in stages_to_run(config):
        step = recorded.get(stage, {}).get("steps")
        saved = checkpoint_paths.saved_steps(workdir, stage)
        if step is not None and step in saved:
            continue
        where = f"its latest checkpoint is step {saved[-1]}" if saved else "it has no checkpoint"
        return f"stage {stage!r} in {workdir} has not finished training ({where})"
    return None


def training_progress(config: ml_collections.ConfigDict, workdir: Path,
                      unfinished: bool = False) -> dict:
    """What a metric card of the run in `workdir` records of its training: `finished`,
    and `checkpoint_steps` (each stage's latest checkpoint, the one scored). A run
    that has not finished is refused (InvalidRunError) unless `unfinished`: its
    scores are not the trained model's, and a card left in the workdir would outlive
    the run; with `unfinished` the reason is kept under "unfinished". Empty for a
    stacked-seed workdir, whose seeds are scored one by one."""
    if seeds.num_seeds(config) > 1:
        return {}
    steps = {stage: checkpoint_paths.latest_saved_step(workdir, stage)
             for stage in stages_to_run(config)}
    reason = _first_unfinished_stage(config, workdir)
    if reason is None:
        return {"finished": True, "checkpoint_steps": steps}
    if not unfinished:
        raise InvalidRunError(f"{reason}; finish it first by rerunning its training command "
                              f"with --workdir={workdir}, or pass --unfinished to score its "
                              f"latest checkpoints")
    return {"finished": False, "checkpoint_steps": steps, "unfinished": reason}


def open_scored_run(workdir: Path, mesh, unfinished: bool = False, attempts: int = 3):
    """(the trained run in `workdir`, its `training_progress`), the progress naming the
    checkpoints whose parameters were restored. A run still training (scored with
    `unfinished`) can save between listing its steps and restoring the latest, and its
    card would then name a step it did not score: the steps are listed again after
    the restore and, if they moved, both are done again."""
    config = trained_runs.load_config(workdir)
    for _ in range(attempts):
        progress = training_progress(config, workdir, unfinished)
        run = trained_runs.open_run(workdir, mesh)
        after = training_progress(config, workdir, unfinished=True)
        if after.get("checkpoint_steps") == progress.get("checkpoint_steps"):
            return run, progress
    raise InvalidRunError(
        f"{workdir} saved a new checkpoint during each of {attempts} reads of its latest "
        f"ones (it is still training); score it when it stops, or a copy of its workdir")


def stages_to_run(config: ml_collections.ConfigDict) -> list[str]:
    """config.stages less stage 1 when stage 2 takes it from another run's workdir
    (`ct.mcqvae_workdir`): training it again here would be wasted."""
    return [stage for stage in config.stages
            if not (stage == mcqvae_run.STAGE and ct_run.stage_one_elsewhere(config))]


def run(
    config: ml_collections.ConfigDict,
    workdir: str | os.PathLike,
    max_minutes: float = 0.0,
    deadline: deadline_lib.Deadline | None = None,
    pause_at_step: int = 0,
    mode: str = "train",
    log_file: bool = False,
    command: str | None = None,
) -> dict:
    """Validates, then runs config.stages in order; returns {stage: results}.

    `max_minutes` > 0 bounds the run's wall-clock time (from this call), and
    `pause_at_step` > 0 stops each stage once it reaches that step; `deadline`,
    when given, replaces both (tests pass one with a fake clock). It is the
    process's current deadline while the stages run, so every stage's `loop.fit`
    honours it: when it expires, the stage training checkpoints and
    deadline.TimeBudgetExhausted propagates; rerunning resumes there.

    `mode` "eval" evaluates every stage of a finished run again (results.json and
    figures rewritten, checkpoints untouched); "figures" only redraws the figures.
    `log_file`: append the whole log to WORKDIR/log.txt while the stages run (the
    command line's; tests leave it off). `command`: the shell line that started the
    run, appended with the time to WORKDIR/command.txt.
    """
    if mode not in runner.MODES:
        raise InvalidRunError(f"mode must be one of {', '.join(runner.MODES)}, got {mode!r}")
    orbax_noise.quiet_console()  # called from a notebook, too: what main's console shows
    deadline = deadline if deadline is not None else deadline_lib.Deadline(
        max_minutes, pause_at_step=pause_at_step)
    workdir = Path(workdir).absolute()
    if mode == "train":  # a finished run's config.json holds absolute paths already
        config = with_absolute_paths(config)
    mesh = make_data_mesh()
    if mode == "train":  # before validate, which creates the workdir
        check_outside_other_runs(workdir)
    validate(config, workdir, mesh)
    if mode != "train":
        check_finished(config, workdir)
    try:
        with workdir_lock.held(workdir):
            if command is not None and jax.process_index() == 0:
                record_command(workdir, command)
            return _run_logged(config, workdir, mesh, mode, deadline, log_file)
    except workdir_lock.WorkdirBusy as error:
        raise InvalidRunError(str(error)) from None


def _run_logged(config, workdir: Path, mesh, mode: str, deadline, log_file: bool) -> dict:
    handler = console.log_to_file(workdir / "log.txt") if log_file else None
    if handler is not None:
        handler.addFilter(orbax_noise.quiet_orbax_info)
    try:
        return _run_stages(config, workdir, mesh, mode, deadline)
    finally:
        if handler is not None:
            logging.getLogger().removeHandler(handler)
            handler.close()


def _run_stages(config, workdir: Path, mesh, mode: str, deadline) -> dict:
    """Runs the stages in order after validation; prints the summary at the end."""
    console.say(f"workdir {workdir}; {mesh.size} {jax.devices()[0].platform} device"
                f"{'s' if mesh.size > 1 else ''} on {jax.process_count()} "
                f"host{'s' if jax.process_count() > 1 else ''}")
    if jax.process_index() == 0 and mode == "train":
        write_config(workdir, config)
    recorded_before = read_results(workdir)
    results, seconds = {}, {}
    if ct_run.stage_one_elsewhere(config) and mcqvae_run.STAGE in config.stages:
        console.say(f"[{mcqvae_run.STAGE}] not trained here: stage 2 uses the finished "
                    f"stage 1 in ct.mcqvae_workdir ({config.ct.mcqvae_workdir})")
    with deadline_lib.active(deadline):
        for stage in stages_to_run(config):
            started = time.perf_counter()
            try:
                results[stage] = STAGES[stage][0].run(config, workdir, mesh, mode)
            except ct_codes.CodeCacheError as error:  # found once stage 1 is loaded
                raise InvalidRunError(str(error)) from error
            except (MemoryError, jax.errors.JaxRuntimeError) as error:
                if not out_of_memory.is_out_of_memory(error):
                    raise
                raise InvalidRunError(out_of_memory.explain(stage, config, error)) from error
            seconds[stage] = time.perf_counter() - started
    skipped = {stage for stage in results if mode == "train"
               and recorded_before.get(stage) is not None
               and recorded_before[stage] == results[stage]}
    console.say(summary.format_summary(workdir, results, seconds, skipped))
    return results
