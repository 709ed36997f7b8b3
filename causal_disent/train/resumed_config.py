"""Training in a workdir that already holds a run: which config changes it can take.

A workdir's config.json is the config its checkpoints and results were made with,
and every later command (evaluate, summarize, `--mode=eval`, intervene) reads it as
such. Each training command rewrites it, so a command with another config used to
relabel the run: a finished β-VAE of β = 4 rerun with β = 7 was skipped as finished
and its config.json then said β = 7; an unfinished one went on training with the new
β. Now a started stage (one with checkpoints or results) may differ from the saved
config only in how the run executes, in how long it trains (until a later stage that
reads its parameters has begun) and, until it has been scored, in how it is scored
(the learning curve's sizes only until its first point);
anything else (the data, the seed, a started stage's model, objective or optimiser)
is refused before anything compiles, naming the fields and the fix. Which field
changes what: runs/config_fields.py.
"""

from pathlib import Path

import ml_collections

from causal_disent.runs import checkpoint_paths, config_fields
from causal_disent.runs.config_file import RunConfigError, read_config
from causal_disent.runs.results import curve_path, read_results


class ChangedRunError(ValueError):
    """The config differs from the workdir's run where the run cannot take it."""


def check_same_run(config: ml_collections.ConfigDict, workdir: Path,
                   stage_names: frozenset[str]) -> None:
    """ChangedRunError when `config` changes what the run in `workdir` trained or
    scored (module docstring); nothing when the workdir holds no run yet.
    `stage_names`: the config sections that are stages."""
    if not (workdir / "config.json").exists():
        return
    try:
        saved = read_config(workdir)
    except RunConfigError:
        return  # its labels are lost already; the run writes a readable one
    results = read_results(workdir)
    started = {stage for stage in stage_names
               if stage in results or checkpoint_paths.saved_steps(workdir, stage)}
    if not started:
        return  # nothing trained yet: the new config simply replaces the old one
    refused = [(path, old, new) for path, old, new in config_fields.differences(saved, config)
               if not _allowed(path, workdir, stage_names, started, saved, config, results)]
    if not refused:
        return
    raise ChangedRunError(
        f"{workdir} holds a run of another config: "
        f"{config_fields.describe(refused, 'there', 'here')}. Resume it with "
        f"--workdir={workdir} alone (its own config.json), or train this config in a new "
        f"--workdir")


def _allowed(path: str, workdir: Path, stage_names, started: set, saved, config,
             results: dict) -> bool:
    section, field = config_fields.section_and_field(path)
    if config_fields.only_execution(path):
        return True
    if section in stage_names and section not in started:
        return True  # nothing of that stage exists yet
    if section in stage_names and field in config_fields.LENGTH_FIELDS:
        # Training on changes what the later stages (which read this one's
        # parameters: CT-VAE's stage 2) were trained on.
        order = tuple(saved.stages)
        later = order[order.index(section) + 1:] if section in order else ()
        return not started.intersection(later)
    if section in stage_names and field in config_fields.CURVE_SIZE_FIELDS:
        return not curve_path(workdir, section).exists()  # no point of the old size yet
    if section in stage_names and config_fields.only_scoring(field):
        # Free until the stage is scored; then only with a new length, which trains it
        # on and scores it again.
        return section not in results or _new_length(section, saved, config)
    return False


def _new_length(stage: str, saved, config) -> bool:
    names = [field.removeprefix("train.") for field in config_fields.LENGTH_FIELDS]
    return any(saved[stage].train.get(name) != config[stage].train.get(name) for name in names)

