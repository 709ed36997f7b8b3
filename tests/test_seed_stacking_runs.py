"""benchmarks/seed_stacking_runs.py's arguments: `--config.X=V` reaches every run,
anything else is one `error:` line before any run (the runs themselves are faked)."""

import datetime
import importlib
import json
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


def test_a_runs_time_is_split_at_its_log_lines(tmp_path):
    started = datetime.datetime(2026, 11, 27, 19, 31, 55, 500000).timestamp()
    (tmp_path / stacking_runs.TIMING_FILE).write_text(json.dumps(
        {"command": [], "seconds": 130.0, "started_at": started}))
    (tmp_path / "log.txt").write_text("\n".join([
        "2026-11-27 19:31:58,500 INFO console: workdir /tmp/w2; 1 cpu device on 1 host",
        "2026-11-27 19:32:09,397 INFO console: [vae] 690,517 parameters; training 100 steps",
        "2026-11-27 19:32:24,500 INFO console: [vae] compiling the 10-step call...",
        "2026-11-27 19:32:50,000 WARNING loop: [vae] something to say",
        "2026-11-27 19:33:00,500 INFO console: [vae] ## 50/100 (50%) | 2.93 steps/s",
        "2026-11-27 19:33:21,500 INFO console: [vae] ## 100/100 (100%) | 2.93 steps/s",
        "2026-11-27 19:33:50,500 INFO image_stages: [vae] results: {'inv': [[1, 2],",
        " [3, 4]]}",
        "2026-11-27 19:33:57,500 INFO console: ",
        "summary",
        "2026-11-27 19:33:57,600 INFO console: workdir /tmp/w2",
    ]))
    phases = stacking_runs.phase_seconds(tmp_path)
    assert list(phases) == ["imports", "setup", "training", "evaluation", "figures", "exit"]
    assert [round(value, 3) for value in phases.values()] == [3.0, 26.0, 57.0, 29.0, 7.0, 8.0]
    assert sum(phases.values()) == pytest.approx(130.0)


def test_a_run_timed_before_its_start_was_kept_has_no_split(tmp_path):
    (tmp_path / stacking_runs.TIMING_FILE).write_text(json.dumps({"command": [], "seconds": 5.0}))
    assert stacking_runs.phase_seconds(tmp_path) == {}


def test_fewer_sequential_runs_project_the_seeds_time_from_their_mean(monkeypatch, tmp_path,
                                                                       capsys):
    commands = []
    monkeypatch.setattr(stacking_runs, "timed_run", lambda config, workdir, overrides: (
        commands.append(overrides) or {"seed_0": 50.0, "seed_1": 70.0, "stacked": 80.0}[workdir.name]))
    monkeypatch.setattr(stacking_runs, "test_nll", lambda run_dir: 70.0)
    monkeypatch.setattr(sys, "argv", ["seed_stacking_runs.py", "--seeds=4",
                                      "--sequential_runs=2", f"--root={tmp_path}"])
    stacking_runs.main()
    assert commands == [["--config.seed=0"], ["--config.seed=1"], ["--config.num_seeds=4"]]
    figures = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert figures["sequential_total_s"] == 240.0 and figures["sequential_projected"]
    assert figures["speedup"] == 3.0
    assert len(figures["stacked_test_nll"]) == 4 and len(figures["sequential_test_nll"]) == 2


@pytest.mark.parametrize("flags, message", [
    (["--seeds=1"], "error: --seeds=1: a stacked run needs at least 2 seeds"),
    (["--seeds=4", "--sequential_runs=5"],
     "error: --sequential_runs=5 must lie in 1..--seeds (4), or be 0 for all of them"),
])
def test_impossible_run_counts_are_one_error_line(flags, message):
    with pytest.raises(SystemExit) as stop:
        stacking_runs.parse_args(flags)
    assert str(stop.value) == message
