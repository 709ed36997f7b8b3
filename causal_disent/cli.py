"""One-line errors for the command lines' flags and config files.

absl and ml_collections report a bad flag with a traceback: an unknown override
field takes 55 lines (its "did you mean" at the very end), a config file that does
not exist 41, with the cause in the middle. `parse_flags_or_exit` (the
`flags_parser` of `app.run`) and `loaded_config_or_exit` turn each into one
`error: ...` line naming the problem and the fix, and exit with status 1.

`load_config_file` loads a config the way `--config=FILE.py[:variant]` does, for
Python callers (notebooks, scripts) that train or inspect a config without flags.

Configs build on one another (`from configs import betavae_dsprites_synth`); both
loaders first make `configs` name the library's own configs/ directory
(`make_configs_importable`), so a config file runs from any working directory and
from a copy anywhere.
"""

from __future__ import annotations

import difflib
import functools
import importlib.machinery
import importlib.util
import os
import re
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

import ml_collections
from absl import flags

from causal_disent.runs import config_schema

CONFIG_FLAG = "config"
# The repository's configs/, beside the package (a clone, installed with pip install -e).
LIBRARY_CONFIGS = Path(__file__).resolve().parents[1] / "configs"
_OVERRIDE = re.compile(rf"^--{CONFIG_FLAG}\.([\w.]+)=")
_ERROR_LINE = re.compile(r"^\s*(?:\w+\.)*\w*(?:Error|Exception): (.+)$")
_NO_GET_CONFIG = "has no attribute 'get_config'"


def import_jax_or_exit() -> None:
    """Imports JAX, or exits with one `error:` line when an environment variable gives
    one of JAX's options a value it refuses (e.g. JAX_DEFAULT_MATMUL_PRECISION=tf32):
    JAX reads them all while it is imported and raises a ValueError there."""
    try:
        import jax  # noqa: F401  # pylint: disable=import-outside-toplevel,unused-import
    except ValueError as error:
        found = _JAX_OPTION.search(str(error))
        if found is None:
            raise
        name = (found.group(1) or found.group(2)).upper()
        sys.exit(f"error: the environment variable {name}={os.environ.get(name, '')!r} is "
                 f"not a value JAX accepts ({error}); fix it (JAX's configuration options "
                 f"list the values) or unset it")


# How JAX names the option whose environment variable it refused.
_JAX_OPTION = re.compile(r"for JAX flag (\w+)|for environment '(\w+)'")


def stop_at_once_on_signals(what_is_left: str) -> None:
    """From now on Ctrl-C or SIGTERM ends this command at once, even inside native code,
    with one `stopped:` line that says `what_is_left` and the shell's status (130, 143),
    not a KeyboardInterrupt traceback. For the commands that do not train
    (causal_disent.main has a step to save first)."""
    import signal  # pylint: disable=import-outside-toplevel
    from causal_disent.train import interrupts  # pylint: disable=import-outside-toplevel

    def line(stopped: interrupts.Interrupted) -> str:
        return (f"stopped: {signal.Signals(stopped.signal_number).name} received; "
                f"{what_is_left}")
    interrupts.stop_at_once_outside_training(line)
    for number in interrupts.HANDLED_SIGNALS:
        # A Python-level handler, so that the signal reaches the watchdog's wakeup
        # fd (SIGTERM's default would end the process silently, SIGINT's raise).
        signal.signal(number, lambda number, frame: None)


def run_script(main: Callable[[], object]) -> None:
    """Runs a script's main (the benchmarks') as causal_disent.main ends: the project's
    own errors about its input (a workdir without a run, a config that cannot train, an
    unreadable checkpoint, a dataset not prepared, a record that cannot be written)
    become one `error:` line, and SIGTERM or Ctrl-C during training one `stopped:` line.
    Anything else keeps its traceback: in a benchmark it is a bug to see."""
    # pylint: disable=import-outside-toplevel  # the scripts' layers, not cli's
    from causal_disent.data.tfds_reading import DatasetNotPreparedError, IncompleteGridError
    from causal_disent.evaluation.trained_runs import RunError
    from causal_disent.runs.checkpoint import CheckpointError
    from causal_disent.runs.config_file import RunConfigError
    from causal_disent.runs.records import RecordError
    from causal_disent.runs.results import ResultsError
    from causal_disent.train.ct_codes import CodeCacheError
    from causal_disent.train.interrupts import Interrupted
    from causal_disent.train.stages import InvalidRunError
    try:
        main()
    except (RunError, InvalidRunError, CheckpointError, RunConfigError, RecordError,
            ResultsError, CodeCacheError, DatasetNotPreparedError,
            IncompleteGridError) as error:
        sys.exit(f"error: {error}")
    except Interrupted as stopped:
        print(f"stopped: {stopped}", file=sys.stderr)
        sys.exit(stopped.exit_status)


class PathParser(flags.ArgumentParser):
    """The parser of a file or folder flag, `flags.DEFINE(cli.PathParser(), name, ...)`:
    "~" expanded (the shell leaves `--workdir=~/x` alone, which would make a folder
    named "~"), an empty value refused (it would mean the current directory)."""

    def parse(self, argument):
        if not isinstance(argument, str) or not argument.strip():
            raise ValueError("is empty; give a path")
        return os.path.expanduser(argument)

    def flag_type(self) -> str:
        return "path"


def parse_flags_or_exit(argv: Sequence[str]) -> list[str]:
    """flags.FLAGS(argv), or exit with one `error:` line saying what is wrong."""
    make_configs_importable()
    argv = [_home_expanded(argument) for argument in argv]
    try:
        return flags.FLAGS(argv)
    except Exception as error:  # absl's flags.Error, ml_collections' Key/AttributeError
        sys.exit(f"error: {explain(error, argv)}")


def _home_expanded(argument: str) -> str:
    """`--config=~/x.py` as the shell expands `--config ~/x.py` (it leaves a `~` after
    `=` alone, and the config flag reads the file itself)."""
    prefix = f"--{CONFIG_FLAG}="
    if argument.startswith(prefix + "~"):
        return prefix + os.path.expanduser(argument[len(prefix):])
    return argument


def loaded_config_or_exit(config) -> ml_collections.ConfigDict:
    """`config` (a config flag's value); ml_collections defers a config file's load
    error until first use, so this uses it and exits with one line if it failed."""
    try:
        config.keys()
    except OSError as error:
        sys.exit(f"error: {_config_file_problem(str(error))}")
    except AttributeError:  # get_config() returned something without keys
        pass
    try:
        check_is_config(config)
    except TypeError as error:
        sys.exit(f"error: {error}")
    if problem := config_schema.field_problem(config, library_configs()):
        sys.exit(f"error: {problem}")
    return config


def check_is_config(config) -> None:
    """TypeError unless a config file's get_config() gave an ml_collections.ConfigDict
    (a plain dict has no locking, no references and no overrides)."""
    if not isinstance(config, ml_collections.ConfigDict):
        raise TypeError(
            f"the config file's get_config() returned a {type(config).__name__}, not an "
            f"ml_collections.ConfigDict; return one, as the files in configs/ do")


def load_config_file(argument: str, lock: bool = True,
                     check_fields: bool = True) -> ml_collections.ConfigDict:
    """The config that `--config=FILE.py[:variant]` names: FILE's `get_config(variant)`,
    or `get_config()` without a variant. A relative FILE is read from the current
    directory (the repository root for `configs/...`).

    Locked by default, as the command line locks it: assigning a field that does not
    exist raises (a misspelt override fails instead of adding a field). Raises
    FileNotFoundError when FILE does not exist, TypeError when its get_config()
    returns no ConfigDict and, with `check_fields`, ValueError when its fields are not
    those of the library's configs (runs/config_schema.py); the config file's own
    errors (an unknown variant: ValueError) propagate.
    """
    path, separator, variant = os.path.expanduser(argument).partition(":")
    if not Path(path).is_file():
        raise FileNotFoundError(
            f"config file {path} does not exist (looked in {Path.cwd()}); pass "
            f"configs/<name>.py[:variant] from the repository root (see configs/)")
    make_configs_importable()
    spec = importlib.util.spec_from_file_location(f"_config_{Path(path).stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    config = module.get_config(variant) if separator else module.get_config()
    check_is_config(config)
    if check_fields and (problem := config_schema.field_problem(config, library_configs())):
        raise ValueError(problem)
    if lock:
        config.lock()
    return config


@functools.cache
def library_configs() -> dict[str, ml_collections.ConfigDict]:
    """"configs/<name>.py" -> its default config, for every experiment config of the
    library (the fields its stages read); empty without configs/."""
    found = {}
    for path in sorted(LIBRARY_CONFIGS.glob("[a-z]*.py")):
        try:
            found[f"configs/{path.name}"] = load_config_file(str(path), lock=False,
                                                             check_fields=False)
        except Exception:  # an edited library config is reported when it is used
            continue
    return found


def make_configs_importable() -> None:
    """Registers the library's configs/ as the package `configs`, unless a `configs`
    is imported already: otherwise `from configs import ...` resolves only with the
    repository root as the working directory."""
    if "configs" in sys.modules or not LIBRARY_CONFIGS.is_dir():
        return
    spec = importlib.machinery.ModuleSpec("configs", None, is_package=True)
    spec.submodule_search_locations = [str(LIBRARY_CONFIGS)]
    sys.modules["configs"] = importlib.util.module_from_spec(spec)


def explain(error: Exception, argv: Sequence[str]) -> str:
    """One line for a flag-parsing failure: an unknown config field with the fields
    that exist, a config file's own error, else the error's last message line."""
    config = _config_if_loaded() or _load_config_of(argv)
    if config is not None:
        for argument in argv:
            match = _OVERRIDE.match(argument)
            if match and (problem := unknown_field(config, match.group(1))):
                return problem
    elif problem := _override_without_config(argv):
        return problem
    text = str(error)
    if isinstance(error, (SyntaxError, ImportError)):  # raised by the config file itself
        text = f"Error whilst parsing config file\n{type(error).__name__}: {text}"
    if ("Error whilst parsing config file" in text or "Failed loading config" in text
            or _NO_GET_CONFIG in text):
        return _config_file_problem(text)
    return _last_message(text)


def start_devices_or_exit() -> None:
    """Starts JAX's devices; one `error:` line when the platform asked for cannot start,
    e.g. JAX_PLATFORMS=cuda with a JAX built without CUDA (JAX fails on an assertion
    with no message then). A multi-process run calls it after jax.distributed."""
    import jax  # here: `--help` and flag errors answer before JAX starts

    try:
        jax.devices()
    except (RuntimeError, AssertionError) as error:
        reason = (str(error).strip().splitlines() or ["no such platform is installed"])[0]
        asked = os.environ.get("JAX_PLATFORMS") or os.environ.get("JAX_PLATFORM_NAME")
        which = f"JAX_PLATFORMS={asked!r} asks for" if asked else "JAX chose"
        sys.exit(f"error: JAX cannot start the devices {which} ({reason}); install JAX for "
                 f"that accelerator (docs/accelerators.md: pip install -U \"jax[cuda12]\" "
                 f"or \"jax[tpu]\") or unset JAX_PLATFORMS to use this machine's devices")


def unknown_field(config: ml_collections.ConfigDict, dotted: str) -> str | None:
    """None if `dotted` names a field of `config`; else a line saying which part is
    unknown, what exists there, and the closest names."""
    node, walked = config, []
    for part in dotted.split("."):
        if not isinstance(node, (ml_collections.ConfigDict, dict)) or part not in node:
            where = ".".join(walked) or "the config"
            known = sorted(node.keys()) if isinstance(node, (ml_collections.ConfigDict, dict)) else []
            guesses = difflib.get_close_matches(part, known, n=1)
            elsewhere = [path for path in _leaf_paths(config)
                         if path.rsplit(".", 1)[-1] == part and path != dotted]
            hint = ""
            if guesses:
                hint = f"; did you mean {'.'.join([*walked, guesses[0]])}?"
            elif elsewhere:
                hint = f"; did you mean {' or '.join(elsewhere[:3])}?"
            return (f"--{CONFIG_FLAG}.{dotted}: {where} has no field {part!r}"
                    f"{hint} (its fields: {', '.join(known) or 'none'})")
        node, walked = node[part], [*walked, part]
    return None


def _leaf_paths(node, prefix: str = ""):
    for key, value in node.items():
        path = f"{prefix}{key}"
        yield path
        if isinstance(value, (ml_collections.ConfigDict, dict)):
            yield from _leaf_paths(value, path + ".")


def _override_without_config(argv: Sequence[str]) -> str | None:
    """The line for `--config.FIELD=V` given with no `--config=FILE.py` (absl calls it an
    unknown flag): typed to change a run resumed with `--workdir=W` alone."""
    overrides = [argument for argument in argv if _OVERRIDE.match(argument)]
    if (not overrides or CONFIG_FLAG not in flags.FLAGS
            or any(argument.startswith(f"--{CONFIG_FLAG}=") for argument in argv)):
        return None
    return (f"{overrides[0]} changes a field of the config that --{CONFIG_FLAG}=FILE.py "
            f"loads, and there is no --{CONFIG_FLAG}; add the run's config file "
            f"(--{CONFIG_FLAG}=configs/<name>.py[:variant], as the run's command.txt has it). "
            f"--workdir=W alone resumes the run in W with its own config.json, unchanged")


def _config_if_loaded():
    try:
        config = flags.FLAGS[CONFIG_FLAG].value
        config.keys()
    except Exception:  # no such flag, not parsed yet, or its file failed to load
        return None
    return config


def _load_config_of(argv: Sequence[str]):
    """The config that `--config=FILE.py[:variant]` in `argv` names, loaded as
    ml_collections loads it (absl may not have stored it when an override failed);
    None if there is none or it does not load."""
    paths = [argument.split("=", 1)[1] for argument in argv
             if argument.startswith(f"--{CONFIG_FLAG}=")]
    if not paths:
        return None
    try:
        return load_config_file(paths[-1], lock=False, check_fields=False)
    except Exception:  # the file's own problem is reported elsewhere
        return None


def _config_file_problem(text: str) -> str:
    missing = re.search(r"No such file or directory: '([^']+)'", text)
    if missing:
        return (f"config file {missing.group(1)} does not exist; pass "
                f"--{CONFIG_FLAG}=configs/<name>.py[:variant] (see configs/)")
    directory = re.search(r"Is a directory: '([^']+)'", text)
    if directory:
        return (f"--{CONFIG_FLAG}={directory.group(1)} is a directory; pass one of its "
                f"files, --{CONFIG_FLAG}=configs/<name>.py[:variant]")
    if re.search(r"No module named '?configs\b", text):
        return (f"the config file builds on the library's configs/ (`from configs import "
                f"...`), which this installation lacks ({LIBRARY_CONFIGS} does not exist): "
                f"install from a clone of the repository with pip install -e .")
    if _NO_GET_CONFIG in text:
        return (f"the config file defines no get_config(); pass an experiment's config, "
                f"--{CONFIG_FLAG}=configs/<name>.py[:variant] (configs/ files whose names "
                f"start with \"_\" are parts the configs share)")
    return f"the config file failed to load: {_last_message(text)}"


def _last_message(text: str) -> str:
    """The message of the last `SomethingError: message` line (a traceback's cause),
    else the first non-empty line."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    for line in reversed(lines):
        match = _ERROR_LINE.match(line)
        if match:
            return match.group(1)
    return lines[0] if lines else "invalid flags"
