"""The command line, end to end, as a user runs it."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from tensorboard.backend.event_processing import event_accumulator

from causal_disent.main import EXIT_PAUSED, default_workdir
from tests.helpers import REPO_ROOT
from tests.test_docs_commands import readme_first_command, run_documented


def run_cli(*args, cwd):
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT), JAX_PLATFORMS="cpu")
    return subprocess.run(
        [sys.executable, "-m", "causal_disent.main", *args],
        env=env, capture_output=True, text=True, timeout=600, cwd=cwd,
    )


def test_the_readmes_first_command_from_a_fresh_directory(tmp_path):
    """Both stages as a new user runs them, the README's first command as written:
    progress, compile notices, validation points and the summary on stdout; stderr
    quiet; the whole log in log.txt; the records in metrics.jsonl and TensorBoard."""
    [result] = run_documented(readme_first_command(), tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    workdir = tmp_path / "workdirs" / "ctvae_shapes3d_tiny"
    assert f"workdir: {workdir}" in result.stdout
    assert json.loads((workdir / "results.json").read_text())["mcqvae"]["steps"] == 6
    out = result.stdout
    for expected in ("[mcqvae] initialising the model (compiling its first state)...",
                     "[mcqvae] compiling the training step...",
                     "[ct] compiling the standard step...", "images/s", "pairs/s", "ETA",
                     "[ct] step 3: test action accuracy", "[mcqvae] evaluating step 6"):
        assert expected in out, out
    assert re.search(r"^  mcqvae +test PSNR \d+\.\d\d dB, MSE \d\.\d{4}, codebook perplexity "
                     r"\d+\.\d +\d+m\d\ds$", out, re.MULTILINE), out
    assert re.search(r"^  ct +test action accuracy \d\.\d{3} \(chance 0\.083\), factor "
                     r"accuracy \d\.\d{3} \(chance 0\.167\), most likely structure; over 2 "
                     r"Gumbel draws \d\.\d{3} ± \d\.\d{3} / \d\.\d{3} ± \d\.\d{3} \(10 test pairs\) "
                     r"+\d+m\d\ds$",
                     out, re.MULTILINE), out
    assert f"tensorboard --logdir {workdir}" in out
    # No third-party noise: no INFO lines (the TPU probe, Orbax's chatter), no untrue
    # "Given directory is read only" warning when stage 2 restores stage 1.
    assert not re.search(r"^I\d{4} ", result.stderr, re.MULTILINE), result.stderr[-3000:]
    assert "orbax" not in result.stderr.lower() and "read only" not in result.stderr
    log = (workdir / "log.txt").read_text()
    assert "[ct] 4,077 parameters; training 6 steps" in log and "INFO" in log
    rows = [json.loads(line) for line in (workdir / "metrics.jsonl").read_text().splitlines()]
    assert [row["step"] for row in rows if row["stage"] == "ct" and "split" in row] == [0, 3, 6]
    events = event_accumulator.EventAccumulator(
        str(workdir / "tensorboard" / "ct"), size_guidance={event_accumulator.IMAGES: 0})
    events.Reload()
    assert [event.step for event in events.Scalars("train/loss")] == [1, 2, 3, 4, 5, 6]
    assert [event.step for event in events.Scalars("test/action_accuracy")] == [0, 3, 6]
    assert "results/action_accuracy" in events.Tags()["scalars"]
    assert {"figures/ct_interventions", "figures/ct_confusion"} <= set(events.Tags()["images"])
    # --workdir alone resumes the run with its own config.json (here: both stages are
    # finished, so nothing runs); command.txt holds both commands, rerunnable anywhere;
    # --record writes the finished run's record.
    record_path = tmp_path / "results" / "tiny.json"
    again = run_cli(f"--workdir={workdir}", f"--record={record_path}", cwd=REPO_ROOT)
    assert again.returncode == 0, again.stderr[-3000:]
    assert f"resuming {workdir} with its own config.json" in again.stdout
    assert "[ct] already finished at step 6; skipped" in again.stdout
    commands = (workdir / "command.txt").read_text().splitlines()
    assert len(commands) == 2
    assert commands[0].endswith(f"UTC  cd {tmp_path} && {sys.executable} -m causal_disent.main "
                                f"--config=configs/ctvae_shapes3d.py:tiny")
    assert commands[1].endswith(f"-m causal_disent.main --workdir={workdir} "
                                f"--record={record_path}")
    record = json.loads(record_path.read_text())
    interpreter = Path(sys.executable)  # written as typed: relative under the cwd
    if interpreter.is_relative_to(REPO_ROOT):
        interpreter = interpreter.relative_to(REPO_ROOT)
    assert record["command"] == (f"{interpreter} -m causal_disent.main "
                                 f"--workdir={workdir} --record={record_path}")
    assert record["figures"] == json.loads((workdir / "results.json").read_text())
    history = record["runs"][0]
    assert [c["command"] for c in history["commands"]] == [c.split("UTC  ", 1)[1] for c in commands]
    assert history["log_sessions"][0]["stage_seconds"].keys() == {"mcqvae", "ct"}


def test_bad_override_fails_with_a_clear_message(tmp_path):
    config = str(REPO_ROOT / "configs" / "ctvae_shapes3d.py") + ":tiny"
    result = run_cli(f"--config={config}", "--config.data.name=shapes_3d", f"--workdir={tmp_path}", cwd=tmp_path)
    assert result.returncode != 0
    assert "unknown dataset 'shapes_3d'" in result.stderr


def test_default_workdir_names_config_and_variant():
    assert str(default_workdir("configs/ctvae_shapes3d.py:small")) == "workdirs/ctvae_shapes3d_small"
    assert str(default_workdir("configs/ctvae_shapes3d.py")) == "workdirs/ctvae_shapes3d"


def test_spent_time_budget_pauses_with_status_3(tmp_path):
    """A budget spent before training starts (0.06 s) pauses stage 1 at step 0,
    saving nothing; the status tells a shell loop to rerun."""
    config = str(REPO_ROOT / "configs" / "ctvae_shapes3d.py") + ":tiny"
    result = run_cli(f"--config={config}", f"--workdir={tmp_path}", "--max_minutes=0.001",
                     cwd=tmp_path)
    assert result.returncode == EXIT_PAUSED == 3, result.stderr[-3000:]
    # Nothing was trained, so the same budget could pause there again: the line says so.
    assert re.search(r"^paused: stage mcqvae at step 0 of 6 after \d+\.\d minutes, before "
                     r"this command trained a step \(starting up took its --max_minutes="
                     r"0.001\); rerun with a larger --max_minutes to continue$", result.stdout,
                     re.MULTILINE)
    assert not (tmp_path / "results.json").exists()
