"""benchmarks/seed_stacking_runs.py's arguments: `--config.X=V` reaches every run,
anything else is one `error:` line before any run (the runs themselves are faked)."""

import importlib
import sys
import types

import pytest

stacking_runs = importlib.import_module("benchmarks.seed_stacking_runs")


def test_config_overrides_reach_every_sequential_and_the_stacked_run(monkeypatch, tmp_path):
    commands = []
    monkeypatch.setattr(stacking_runs, "timed_run",
                        lambda config, workdir, overrides: commands.append(overrides) or 1.0)
    monkeypatch.setattr(stacking_runs, "test_nll", lambda run_dir: 70.0)
    monkeypatch.setattr(sys, "argv", ["seed_stacking_runs.py", "--seeds=2", f"--root={tmp_path}",
                                      "--config.vae.train.steps_per_call=10"])
    stacking_runs.main()
    assert commands == [["--config.seed=0", "--config.vae.train.steps_per_call=10"],
                        ["--config.seed=1", "--config.vae.train.steps_per_call=10"],
                        ["--config.num_seeds=2", "--config.vae.train.steps_per_call=10"]]


def test_an_unknown_argument_is_one_error_line_before_any_run(monkeypatch):
    monkeypatch.setattr(stacking_runs, "timed_run",
                        lambda *args: pytest.fail("a run started despite a bad argument"))
    with pytest.raises(SystemExit) as stop:
        stacking_runs.parse_args(["--seeds=2", "--steps_per_call=10"])
    assert str(stop.value) == ("error: unrecognised arguments --steps_per_call=10; give a "
                               "run's settings as --config.X=V")


def test_a_rerun_with_the_same_root_times_only_the_runs_not_finished(monkeypatch, tmp_path):
    started = []

    def fake_run(command, cwd, stdout, stderr):
        started.append(command)
        return types.SimpleNamespace(returncode=0)

    monkeypatch.setattr(stacking_runs.subprocess, "run", fake_run)
    config = "configs/betavae_dsprites_synth.py:small"
    finished, cut_short = tmp_path / "seed_0", tmp_path / "seed_1"
    seconds = stacking_runs.timed_run(config, finished, ["--config.seed=0"])
    cut_short.mkdir()
    (cut_short / "leftover_checkpoint").write_text("")  # killed by a time limit
    assert stacking_runs.timed_run(config, finished, ["--config.seed=0"]) == seconds
    stacking_runs.timed_run(config, cut_short, ["--config.seed=1"])
    assert [command[-1] for command in started] == ["--config.seed=0", "--config.seed=1"]
    assert not (cut_short / "leftover_checkpoint").exists()  # started from nothing
    with pytest.raises(SystemExit, match=r"^error: .*seed_0 holds a run of another command"):
        stacking_runs.timed_run(config, finished, ["--config.seed=5"])
