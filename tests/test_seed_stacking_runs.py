"""benchmarks/seed_stacking_runs.py's arguments: `--config.X=V` reaches every run,
anything else is one `error:` line before any run (the runs themselves are faked);
and how it splits a run's time at its log lines."""

import datetime
import importlib
import json
import logging
import sys
import types

import jax
import ml_collections
import numpy as np
import pytest

from causal_disent.data import pipeline, registry
from causal_disent.train import image_stages, runner
from causal_disent.utils.sharding import make_data_mesh

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
    assert all("--compilation_cache=off" in command for command in started)  # cold runs
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


def test_a_stacked_runs_setup_and_seeds_are_split_at_its_own_lines(tmp_path):
    (tmp_path / "log.txt").write_text("\n".join([
        "2026-11-27 19:31:58,500 INFO console: [vae] initialising the model (compiling...",
        "2026-11-27 19:32:05,000 INFO console: [vae] 690,517 parameters; training 100 steps",
        "2026-11-27 19:32:05,100 INFO console: [vae] training data on the devices (2717.9 MB)",
        "2026-11-27 19:32:15,100 INFO image_stages: [vae] 663552 training images read or "
        "rendered in 10.0 s",
        "2026-11-27 19:32:19,400 INFO runner: [vae] training data placed on the devices in 4.3 s",
        "2026-11-27 19:32:21,900 INFO console: [vae] step 0: test NLL 2839.14 (512 images)",
        "2026-11-27 19:33:00,000 INFO image_stages: [vae] evaluating on 2048 test images",
        "2026-11-27 19:33:03,000 INFO image_stages: [vae] results: {'inv': [[1, 2],",
        " [3, 4]]}",
        "2026-11-27 19:33:03,250 INFO image_stages: [vae] evaluating on 2048 test images",
        "2026-11-27 19:33:04,000 INFO image_stages: [vae] results: {}",
        "2026-11-27 19:33:05,000 INFO vae_stage: [vae] seed 0's figures: 1.25 s here",
        "2026-11-27 19:33:05,200 INFO vae_stage: [vae] seed 1's figures: 0.20 s here",
    ]))
    details = stacking_runs.setup_and_seed_seconds(tmp_path)
    rounded = {name: [round(item, 3) for item in value] if isinstance(value, list)
               else round(value, 3) for name, value in details.items()}
    assert rounded == {"init": 6.5, "images": 10.0, "placing": 4.3, "step-0 point": 2.5,
                       "scores": [3.0, 0.75], "between": [0.25], "figures": [1.25, 0.2]}
    assert stacking_runs.format_details(details) == (
        "init 6.5, images 10.0, placing 4.3, step-0 point 2.5, scores [3.00 0.75], "
        "between [0.25], figures [1.25 0.20]")
    assert stacking_runs.setup_and_seed_seconds(tmp_path / "no_run") == {}


def test_each_parts_compiling_is_summed_from_the_lines_jax_logs(tmp_path):
    compiled = "WARNING dispatch: Finished XLA compilation of jit({}) in {} sec"
    (tmp_path / "log.txt").write_text("\n".join([
        "2026-11-27 19:31:58,500 INFO console: workdir /tmp/w2; 1 gpu device on 1 host",
        "2026-11-27 19:32:05,000 " + compiled.format("create_state", "1.5"),
        "2026-11-27 19:32:24,500 INFO console: [vae] compiling the 10-step call...",
        "2026-11-27 19:32:30,000 " + compiled.format("call", "5.25"),
        "2026-11-27 19:33:21,500 INFO console: [vae] ## 100/100 (100%) | 2.93 steps/s",
        "2026-11-27 19:33:30,000 " + compiled.format("<lambda>", "0.5"),
        "2026-11-27 19:33:31,000 " + compiled.format("outputs", "2.5e-01"),
        "2026-11-27 19:33:50,500 INFO image_stages: [vae] results: {}",
        "2026-11-27 19:33:52,000 " + compiled.format("decoded_pixels", "0.75"),
        "2026-11-27 19:33:57,500 INFO console: ",
        "summary",
        "2026-11-27 19:33:58,000 " + compiled.format("late", "0.125"),
    ]))
    assert stacking_runs.compile_seconds(tmp_path) == {
        "imports": 0.0, "setup": 1.5, "training": 5.25, "evaluation": 0.75, "figures": 0.75,
        "exit": 0.125}
    (tmp_path / "log.txt").write_text("2026-11-27 19:31:58,500 INFO console: workdir /tmp/w2")
    assert stacking_runs.compile_seconds(tmp_path) == {}  # markers missing


def test_the_parts_are_read_from_the_messages_a_run_logs(tmp_path, caplog):
    """The markers above against the messages the library logs: the device table's
    images (image_stages) and its placing (runner)."""
    dataset = registry.get_dataset("dsprites_synth")
    batcher = pipeline.EpochShuffledBatches(np.arange(40), 8, seed=0)
    section = ml_collections.ConfigDict({"prefetch_batches": 0, "device_data": "on",
                                         "device_data_max_gb": 1.0})
    with caplog.at_level(logging.INFO):
        data = image_stages.image_device_data("vae", dataset, [batcher], 0, 4, section)
        training = runner.Training(steps={"fit": lambda state, batch, rng: (state, {})},
                                   rng=jax.random.key(0), batches=[], device_data=data)
        runner.compiled_step_fn(training, make_data_mesh(), "vae")
    (tmp_path / "log.txt").write_text("".join(
        f"2026-11-27 19:31:58,500 INFO x: {record.getMessage()}\n" for record in caplog.records))
    details = stacking_runs.setup_and_seed_seconds(tmp_path)
    assert set(details) == {"images", "placing"}
    assert all(0 <= seconds < 60 for seconds in details.values())


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
