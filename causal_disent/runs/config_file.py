"""A run's config: written to WORKDIR/config.json when the run starts, read back by
whatever uses the run later (evaluation, the CT-VAE and CausalVAE interventions, a
compared run)."""

import json
from pathlib import Path

import ml_collections

from causal_disent.utils import json_values


# Config fields that name files or directories (a path or a sequence of paths;
# "" = unset).
PATH_FIELDS = ("data.data_dir", "data.path", "ct.mcqvae_workdir",
               "causalvae.train.compare_workdirs")


class RunConfigError(ValueError):
    """WORKDIR/config.json is missing or unreadable; the message names the fix."""


def with_absolute_paths(config: ml_collections.ConfigDict) -> ml_collections.ConfigDict:
    """A copy of `config` whose PATH_FIELDS are absolute (`~` expanded, relative ones
    taken from the current directory): a run stores it, so that its config.json means
    the same thing to a command started from any other directory."""
    config = config.copy_and_resolve_references()
    for dotted in PATH_FIELDS:
        *parents, name = dotted.split(".")
        section = config
        for part in parents:
            section = section.get(part) if section is not None else None
        if section is None or name not in section:
            continue
        value = section[name]
        if isinstance(value, str):
            section[name] = _absolute(value)
        elif isinstance(value, (tuple, list)):
            section[name] = tuple(_absolute(item) for item in value)
    return config


def _absolute(path: str) -> str:
    return str(Path(path).expanduser().absolute()) if path else path


COMMAND_FILE = "command.txt"


def record_command(workdir: Path, command: str) -> None:
    """Appends `command` (a shell line) with the UTC time to WORKDIR/command.txt: the
    history of the commands that ran on the workdir; and the same with the commit and
    the machine to WORKDIR/provenance.jsonl, which records of the run
    (runs/records.py) quote."""
    from causal_disent.runs import records

    line = records.provenance_line(command)
    with (Path(workdir) / COMMAND_FILE).open("a") as f:
        f.write(f"{line['date']}  {command}\n")
    with (Path(workdir) / records.PROVENANCE_FILE).open("a") as f:
        f.write(json.dumps(line) + "\n")


def write_config(workdir: Path, config: ml_collections.ConfigDict) -> None:
    (Path(workdir) / "config.json").write_text(config.to_json_best_effort(indent=2) + "\n")


def read_config(workdir: str | Path) -> ml_collections.ConfigDict:
    """The config the run saved, with JSON lists read back as tuples (as configs
    write sequences)."""
    path = Path(workdir) / "config.json"
    if not path.exists():
        raise RunConfigError(
            f"{path} not found: pass the --workdir of a run of causal_disent.main "
            f"(it writes config.json there)"
        )
    try:
        raw = json_values.read_json(path)
    except ValueError as error:  # names the file; not JSON, or not UTF-8
        raise RunConfigError(f"{error}; was the run's workdir overwritten?") from error
    return ml_collections.ConfigDict(_lists_to_tuples(upgraded(raw)))


# A config.json written before a field moved to a section of its own, or before it
# existed, still reads as today's config: old dotted path -> new one, and the value
# that a run made before a field existed used. A field is only added to a section the
# run has (a β-VAE run gets no `ct`).
MOVED_FIELDS = {
    "ct.train.num_eval_pairs": "ct.eval.num_test_pairs",
    "ct.train.headline": "ct.eval.headline",
    "ct.train.num_eval_draws": "ct.eval.num_draws",
}
LATER_FIELDS = {"data.path": "", "ct.eval.headline": "most_likely", "ct.eval.num_draws": 8}


def upgraded(raw: dict) -> dict:
    """`raw` (a config.json's contents) with MOVED_FIELDS moved and LATER_FIELDS
    filled in; a config of today's layout comes back unchanged."""
    for old, new in MOVED_FIELDS.items():
        section, name = _section(raw, old)
        if section is not None and name in section:
            target, new_name = _section(raw, new, create=True)
            target.setdefault(new_name, section.pop(name))
    for path, value in LATER_FIELDS.items():
        section, name = _section(raw, path, create=True)
        if section is not None:
            section.setdefault(name, value)
    return raw


def _section(raw: dict, path: str, create: bool = False):
    """(the dict that holds `path`'s last name, that name), None for the dict when the
    run lacks `path`'s top-level section; `create` adds the sections below it."""
    top, *middle, name = path.split(".")
    section = raw.get(top)
    if not isinstance(section, dict):
        return None, name
    for part in middle:
        if not isinstance(section.get(part), dict):
            if not create:
                return None, name
            section[part] = {}
        section = section[part]
    return section, name


def _lists_to_tuples(value):
    if isinstance(value, dict):
        return {key: _lists_to_tuples(item) for key, item in value.items()}
    if isinstance(value, list):
        return tuple(_lists_to_tuples(item) for item in value)
    return value
