"""Loading a config file from Python as `--config=FILE.py[:variant]` loads it."""

import argparse
import importlib
import os
import shutil
import subprocess
import sys

import pytest

from causal_disent import cli
from causal_disent.utils import arguments
from configs import ctvae_shapes3d
from tests.helpers import REPO_ROOT


def test_load_config_file_picks_the_variant_relative_to_the_working_directory(monkeypatch):
    monkeypatch.chdir(REPO_ROOT)
    tiny = cli.load_config_file("configs/ctvae_shapes3d.py:tiny")
    assert tiny.to_dict() == ctvae_shapes3d.get_config("tiny").to_dict()
    base = cli.load_config_file(str(REPO_ROOT / "configs" / "ctvae_shapes3d.py"))
    assert base.to_dict() == ctvae_shapes3d.get_config().to_dict()


def test_loaded_config_is_locked_like_the_command_line_one(monkeypatch):
    monkeypatch.chdir(REPO_ROOT)
    config = cli.load_config_file("configs/ctvae_shapes3d.py:tiny")
    config.ct.train.num_steps = 3  # an existing field: fine
    with pytest.raises(AttributeError):
        config.ct.train.num_stepz = 3  # a misspelt one is refused, not added
    assert cli.load_config_file("configs/ctvae_shapes3d.py:tiny", lock=False).is_locked is False


def test_load_config_file_errors_name_the_problem(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(FileNotFoundError, match="configs/nope.py does not exist.*repository root"):
        cli.load_config_file("configs/nope.py:tiny")
    with pytest.raises(ValueError, match="unknown config variant 'huge'"):
        cli.load_config_file(str(REPO_ROOT / "configs" / "ctvae_shapes3d.py") + ":huge")


COPIED_CONFIG_CHECK = """
import sys
from causal_disent import cli
config = cli.load_config_file(sys.argv[1])
print(config.stages, config.data.name)
"""


def python_without_the_repository_on_its_path(tmp_path):
    """(env, cwd) for a subprocess that imports causal_disent (through a link) but
    does not find the repository root on sys.path, as for a user's own directory."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "causal_disent").symlink_to(REPO_ROOT / "causal_disent")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update(PYTHONPATH=str(site), JAX_PLATFORMS="cpu")
    workdir = tmp_path / "elsewhere"
    workdir.mkdir()
    return env, workdir


def test_a_config_copied_anywhere_loads_from_any_working_directory(tmp_path):
    """configs build on one another (`from configs import betavae_dsprites_synth`)."""
    env, cwd = python_without_the_repository_on_its_path(tmp_path)
    copy = cwd / "my_betavae.py"
    shutil.copy(REPO_ROOT / "configs" / "betavae_shapes3d_synth.py", copy)
    loaded = subprocess.run([sys.executable, "-c", COPIED_CONFIG_CHECK, f"{copy}:tiny"],
                            env=env, cwd=cwd, capture_output=True, text=True, timeout=300)
    assert loaded.returncode == 0, loaded.stderr[-2000:]
    assert loaded.stdout.split()[-1] == "shapes3d_synth"
    # The command line's loader (ml_collections' config flag) too: the config loads,
    # and the run stops at the bad dataset name given with it. A `~` after `=`, which
    # the shell leaves alone, is the home folder.
    ran = subprocess.run(
        [sys.executable, "-m", "causal_disent.main", "--config=~/my_betavae.py:tiny",
         "--config.data.name=no_such_dataset", f"--workdir={tmp_path / 'w'}"],
        env={**env, "HOME": str(cwd)}, cwd=cwd, capture_output=True, text=True,
        timeout=300)
    assert ran.returncode == 1
    assert ran.stderr.strip().splitlines()[-1].startswith("error: unknown dataset"), ran.stderr


def test_the_commands_that_are_not_absl_apps_end_a_bad_command_line_in_one_line(capsys):
    parser = arguments.OneLineArgumentParser()
    parser.add_argument("--steps", type=int)
    with pytest.raises(SystemExit) as bad:
        parser.parse_args(["--steps=many"])
    assert str(bad.value) == "error: argument --steps: invalid int value: 'many' (see --help)"
    assert capsys.readouterr().err == ""  # no usage block
    # Every benchmark and the report parse their command lines so.
    scripts = [*(REPO_ROOT / "benchmarks").glob("*.py"),
               *(REPO_ROOT / "causal_disent").rglob("*.py")]
    plain = [script.name for script in scripts
             if "argparse.ArgumentParser(" in script.read_text()]
    assert not plain, f"{plain} print argparse's usage block on a bad command line"


def test_a_scripts_errors_about_its_input_are_one_line_and_its_bugs_keep_their_traceback(
        capsys):
    from causal_disent.evaluation.trained_runs import RunError
    from causal_disent.train.interrupts import Interrupted

    def raises(error):
        def main():
            raise error
        return main
    with pytest.raises(SystemExit) as bad_input:
        cli.run_script(raises(RunError("/tmp/x/config.json not found")))
    assert str(bad_input.value) == "error: /tmp/x/config.json not found"
    with pytest.raises(SystemExit) as stopped:
        cli.run_script(raises(Interrupted(15, "vae", 84)))
    assert stopped.value.code == 143
    assert capsys.readouterr().err == "stopped: SIGTERM received: stage vae saved at step 84\n"
    with pytest.raises(ZeroDivisionError):
        cli.run_script(raises(ZeroDivisionError("a bug")))


def test_a_path_flag_expands_the_home_folder_and_refuses_an_empty_value(monkeypatch):
    monkeypatch.setenv("HOME", "/home/researcher")
    parser = cli.PathParser()
    assert parser.parse("~/runs/a") == "/home/researcher/runs/a"  # not ./~/runs/a
    assert parser.parse("runs/~a") == "runs/~a"
    for empty in ("", "  "):  # would be the current directory
        with pytest.raises(ValueError, match="is empty; give a path"):
            parser.parse(empty)


def test_the_step_time_benchmark_refuses_an_unknown_path_or_mode():
    benchmark = importlib.import_module("benchmarks.ct_step_time")
    parse_paths = benchmark._names_of(benchmark.PATHS)
    assert parse_paths("encode,cache") == "encode,cache"
    with pytest.raises(argparse.ArgumentTypeError, match=r"unknown 'nope'; give some of "
                                                          r"cache, encode, comma-separated"):
        parse_paths("cache,nope")
    from causal_disent.objectives import ct
    assert benchmark.MODES == tuple(ct.MODES)  # named before the script's children start JAX
