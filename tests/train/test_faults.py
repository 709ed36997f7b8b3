"""Faults during training: divergence (NaN guard), signals (SIGTERM / SIGINT),
unreadable checkpoints, repeated metric rows, and records that strict JSON parsers
accept. Unit tests with fakes first, then tiny real runs of stage 1."""

import gc
import itertools
import json
import logging
import os
import re
import shutil
import signal
import subprocess
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from causal_disent.runs import checkpoint, tensorboard
from causal_disent.train import finite_guard, interrupts, loop, reporting, stages
from causal_disent.utils import json_values
from tests.helpers import REPO_ROOT, truncate_data_files
from tests.train.test_deadline import FakeCheckpoints
from tests.train.test_training import final_params, tiny_config


@pytest.fixture(autouse=True)
def event_files_closed(tmp_path):
    """The fakes here drive `loop.fit` without a stage runner, which would close the
    stage's TensorBoard event file: closed after each test instead."""
    yield
    for stage in ("fake", "a", "b"):
        tensorboard.close(tmp_path, stage)


def strict_json(text: str):
    """json.loads that rejects NaN and Infinity, as strict parsers do."""
    def refuse(constant):
        raise ValueError(f"non-standard JSON constant {constant}")
    return json.loads(text, parse_constant=refuse)


# The NaN guard -----------------------------------------------------------------------


def test_first_non_finite_names_the_row_and_prefers_the_loss():
    rows = [(1, {"loss": 1.0, "grad_norm": 2.0, "mode": "a"}),
            (2, {"kl": np.nan, "loss": np.inf}),
            (3, {"loss": np.nan})]
    assert finite_guard.first_non_finite(rows) == (2, "loss = inf")
    assert finite_guard.first_non_finite(rows[:1]) is None
    assert finite_guard.first_non_finite([(4, {"per_unit": np.array([1.0, np.nan])})]) == (
        4, "per_unit = 1 non-finite of 2 values")


def test_state_is_finite_looks_at_every_float_leaf():
    state = {"params": jnp.ones(3), "step": jnp.array(2), "moments": (jnp.zeros(2),)}
    assert finite_guard.state_is_finite(state)
    state["moments"] = (jnp.array([0.0, -jnp.inf]),)
    assert not finite_guard.state_is_finite(state)


def test_only_a_train_states_trained_fields_must_be_finite():
    """CausalVAE's Lagrangian keeps H_prev = +inf until its first outer step."""
    import optax

    from causal_disent.train.state import TrainState

    class LagrangianState(TrainState):
        previous_constraint: jax.Array = jnp.inf

    state = LagrangianState.create(apply_fn=None, params={"w": jnp.ones(2)}, tx=optax.adam(1.0))
    assert finite_guard.state_is_finite(state)
    broken = state.replace(opt_state=jax.tree.map(lambda x: x * jnp.nan, state.opt_state))
    assert not finite_guard.state_is_finite(broken)


def blowing_up_fit(tmp_path, events, *, loss_at, state_at=lambda step: 1.0):
    """fit on a fake whose loss and state at each step come from the lambdas."""
    return loop.fit(
        stage="fake", state=jnp.array(0.0),
        step_fn=lambda state, batch, step: (jnp.array(state_at(step + 1)),
                                            {"loss": jnp.array(loss_at(step + 1))}),
        local_batches=itertools.repeat({}), first_step=0, last_step=9,
        global_batch_size=1, checkpoints=FakeCheckpoints(events, every=2),
        writer=reporting.MetricsWriter(tmp_path), log_every_steps=4,
    )


def test_a_non_finite_loss_stops_before_the_next_save(tmp_path):
    events = []
    with pytest.raises(finite_guard.NonFiniteTraining,
                       match=r"diverged: loss = nan at step 3.*last good checkpoint is save 2"):
        blowing_up_fit(tmp_path, events, loss_at=lambda step: np.nan if step >= 3 else 1.0)
    assert [event[1] for event in events] == [2]  # step 4's save never happened
    rows = [strict_json(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert [row["step"] for row in rows] == [1, 2, 3]  # up to the bad row, for the record
    assert rows[-1]["loss"] is None and rows[-1]["loss_not_finite"] == "nan"


def test_a_non_finite_state_is_never_saved(tmp_path):
    events = []
    with pytest.raises(finite_guard.NonFiniteTraining, match="parameter or optimiser value"):
        blowing_up_fit(tmp_path, events, loss_at=lambda step: 1.0,
                       state_at=lambda step: np.inf if step >= 5 else 1.0)
    assert [event[1] for event in events] == [2, 4]


def test_a_diverging_run_stops_with_no_checkpoint_and_a_clear_error(tmp_path):
    """A learning rate of 1e6 blows stage 1 up within its six steps (a NaN learning
    rate is refused before compiling: tests/test_bad_input.py)."""
    config = tiny_config()
    config.mcqvae.optim.learning_rate = 1e6
    with pytest.raises(finite_guard.NonFiniteTraining, match="stage mcqvae diverged") as stopped:
        stages.run(config, tmp_path)
    directory = checkpoint.checkpoint_dir(tmp_path, "mcqvae")
    saved = [path.name for path in directory.iterdir()] if directory.exists() else []
    assert not [name for name in saved if name.isdigit()], saved
    assert "no checkpoint of this stage was saved" in str(stopped.value)
    assert not (tmp_path / "results.json").exists()
    for line in (tmp_path / "metrics.jsonl").read_text().splitlines():
        strict_json(line)


# Signals -------------------------------------------------------------------------------


def signalling_fit(tmp_path, events, signal_number, *, at_step, last_step=9, times=1):
    def step_fn(state, batch, step):
        if step + 1 == at_step:
            for _ in range(times):
                os.kill(os.getpid(), signal_number)  # handled before the step returns
        return state + 1, {"loss": state * 1.0}

    return loop.fit(
        stage="fake", state=jnp.array(0), step_fn=step_fn,
        local_batches=itertools.repeat({}), first_step=0, last_step=last_step,
        global_batch_size=1, checkpoints=FakeCheckpoints(events, every=4),
        writer=reporting.MetricsWriter(tmp_path), log_every_steps=4,
    )


@pytest.mark.parametrize("signal_number", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_saves_the_step_in_flight_and_stops(tmp_path, signal_number):
    events = []
    with pytest.raises(interrupts.Interrupted, match="received: stage fake saved at step 3") as stopped:
        signalling_fit(tmp_path, events, signal_number, at_step=3)
    assert events[-1] == ("save", 3, 3)
    assert stopped.value.exit_status == 128 + signal_number
    rows = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert [row["step"] for row in rows] == [1, 2, 3]
    assert signal.getsignal(signal_number) is not interrupts._handle  # restored


def test_a_signal_in_the_last_step_still_stops_after_saving_it(tmp_path):
    events = []
    with pytest.raises(interrupts.Interrupted, match="saved at step 9"):
        signalling_fit(tmp_path, events, signal.SIGTERM, at_step=9)
    assert events[-1] == ("save", 9, 9)


def test_a_copy_of_the_signal_still_saves_and_a_later_one_stops_at_once(tmp_path, monkeypatch):
    """Two signals within interrupts.SAME_REQUEST_SECONDS are one request (a wrapper's
    forward beside the signal itself); further apart, the second stops at once,
    without the save."""
    events = []
    with pytest.raises(interrupts.Interrupted, match="saved at step 3"):
        signalling_fit(tmp_path, events, signal.SIGTERM, at_step=3, times=2)
    assert events[-1] == ("save", 3, 3)
    monkeypatch.setattr(interrupts, "SAME_REQUEST_SECONDS", 0.0)
    events.clear()
    with pytest.raises(interrupts.Interrupted, match="outside training"):
        signalling_fit(tmp_path, events, signal.SIGTERM, at_step=3, times=2)
    assert ("save", 3, 3) not in events


def test_the_watchdog_stops_at_once_only_on_a_signal_a_second_after_the_first(monkeypatch):
    """The command line's watchdog thread (interrupts._watch), fed signal numbers as
    the C-level handler writes them: inside a training window a copy of the first
    signal is let pass, a later one ends the process; outside training, any signal."""
    exits = []
    monkeypatch.setattr(interrupts, "exit_now", lambda status, line: exits.append(status))

    def watched(numbers, *, training=True):
        monkeypatch.setattr(interrupts, "_deferring", training)
        monkeypatch.setattr(interrupts, "_step_done", training)
        exits.clear()
        read_end, write_end = os.pipe()
        os.write(write_end, bytes(numbers))
        os.close(write_end)
        interrupts._watch(read_end, str)  # returns when the pipe is drained and closed
        os.close(read_end)
        return exits

    term = signal.SIGTERM
    assert watched([term, term]) == []  # the loop saves; the copy changes nothing
    assert watched([term], training=False) == [143]
    monkeypatch.setattr(interrupts, "SAME_REQUEST_SECONDS", 0.0)
    assert watched([term, signal.SIGINT]) == [130]


def test_the_host_runs_at_most_two_calls_ahead_of_the_device(tmp_path, monkeypatch):
    """JAX dispatches the calls asynchronously; before each new call, all but the last
    MAX_CALLS_AHEAD have finished (the loop waited on them or fetched them), so a
    signal is acted on within a few calls, not a whole log interval later."""
    synced = set()  # ids of the leaves the loop waited on or fetched

    def marking(function):
        def marked(tree):
            synced.update(id(leaf) for leaf in jax.tree.leaves(tree))
            return function(tree)
        return marked

    monkeypatch.setattr(loop.jax, "block_until_ready", marking(jax.block_until_ready))
    monkeypatch.setattr(loop.jax, "device_get", marking(jax.device_get))
    calls, unfinished_at_dispatch = [], []

    def step_fn(state, batch, step):
        unfinished_at_dispatch.append(sum(id(loss) not in synced for loss in calls))
        calls.append(state * 1.0)
        return state + 1, {"loss": calls[-1]}

    loop.fit(stage="fake", state=jnp.array(0), step_fn=step_fn,
             local_batches=itertools.repeat({}), first_step=0, last_step=24,
             global_batch_size=1, checkpoints=FakeCheckpoints([], every=100),
             writer=reporting.MetricsWriter(tmp_path), log_every_steps=12)
    assert max(unfinished_at_dispatch) == loop.MAX_CALLS_AHEAD == 2


def test_outside_training_a_signal_stops_at_once():
    with pytest.raises(interrupts.Interrupted, match="SIGTERM received: outside training"):
        with interrupts.handled():
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(5)  # interrupted long before


# Caps the size of every file the command writes, then runs it (the limit holds across
# exec; a preexec_fn would fork this multithreaded process instead).
CAPPED = ("import os, resource, sys; "
          "resource.setrlimit(resource.RLIMIT_FSIZE, "
          "(int(sys.argv[1]), resource.getrlimit(resource.RLIMIT_FSIZE)[1])); "
          "os.execv(sys.executable, [sys.executable, *sys.argv[2:]])")


def run_cli(*args, file_size_limit: int | None = None):
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT), JAX_PLATFORMS="cpu")
    # These runs are stopped by signals, perhaps while a compiled program is written
    # to the test worker's compilation cache (tests/conftest.py).
    env.pop("JAX_COMPILATION_CACHE_DIR", None)
    command = [sys.executable, "-m", "causal_disent.main", *args]
    if file_size_limit is not None:
        command = [sys.executable, "-c", CAPPED, str(file_size_limit), *command[1:]]
    return subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, cwd=REPO_ROOT)


def test_sigterm_from_outside_saves_exits_143_and_the_rerun_resumes(tmp_path):
    config = f"--config={REPO_ROOT / 'configs' / 'ctvae_shapes3d.py'}:tiny"
    args = [config, f"--workdir={tmp_path}", "--config.stages=('mcqvae',)",
            "--config.mcqvae.train.num_steps=100000", "--config.mcqvae.train.log_every_steps=1"]
    process = run_cli(*args)
    metrics = tmp_path / "metrics.jsonl"
    deadline = time.monotonic() + 300
    while not (metrics.exists() and len(metrics.read_text().splitlines()) >= 3):
        assert process.poll() is None and time.monotonic() < deadline, process.communicate()
        time.sleep(0.2)
    process.send_signal(signal.SIGTERM)
    stdout, stderr = process.communicate(timeout=120)
    assert process.returncode == 143, stderr[-3000:]
    # The handler itself writes nothing: a write from it could land inside the main
    # thread's own write to stderr ("--- Logging error ---"); the watchdog announces it.
    assert "Traceback" not in stderr and "Logging error" not in stderr, stderr[-3000:]
    assert "SIGTERM received: saving a checkpoint after the current step" in stderr
    checkpoints = checkpoint.StageCheckpoints(tmp_path, "mcqvae", {}, 1, 1)
    saved = checkpoints.latest_step()
    checkpoints.close()
    assert f"stopped: SIGTERM received: stage mcqvae saved at step {saved}; rerun" in stdout
    rows = [json.loads(line) for line in metrics.read_text().splitlines()]
    assert [row["step"] for row in rows] == list(range(1, saved + 1))
    # The same command, shortened to end two steps later, resumes from the saved step.
    args[3] = f"--config.mcqvae.train.num_steps={saved + 2}"
    process = run_cli(*args)
    stdout, stderr = process.communicate(timeout=300)
    assert process.returncode == 0, stderr[-3000:]
    assert f"[mcqvae] resuming from the checkpoint of step {saved} of" in stdout
    assert json.loads((tmp_path / "results.json").read_text())["mcqvae"]["steps"] == saved + 2


def test_a_full_disk_ends_in_one_error_line_and_the_rerun_finishes(tmp_path):
    """Files capped at 32 KiB (RLIMIT_FSIZE: a write past it fails with EFBIG, as one
    on a full disk fails with ENOSPC) fail a checkpoint's background write and the
    log file's. Before, orbax's threads printed about fifty tracebacks and the run
    ended in one of its own, with no `error:` line."""
    config = f"--config={REPO_ROOT / 'configs' / 'ctvae_shapes3d.py'}:tiny"
    args = [config, f"--workdir={tmp_path}", "--config.stages=('mcqvae',)",
            "--compilation_cache=off"]
    process = run_cli(*args, file_size_limit=32 * 1024)
    stdout, stderr = process.communicate(timeout=300)
    assert process.returncode == 1, stderr[-3000:]
    assert "Traceback" not in stdout + stderr and "Logging error" not in stderr, stderr[-3000:]
    errors = [line for line in stderr.splitlines() if line.startswith("error:")]
    # Usually a checkpoint's write fails first; under load orbax can split the state
    # into files under the cap, and then the first write to fail is a figure's.
    assert len(errors) == 1 and re.fullmatch(
        r"error: cannot write .* \(File too large\); .*rerun the same command to resume "
        r"from the last one(\.?|, then draw the figures again with --workdir=.* --mode=figures)",
        errors[0]), stderr[-3000:]
    process = run_cli(*args)  # the limit lifted: the same command finishes the run
    stdout, stderr = process.communicate(timeout=300)
    assert process.returncode == 0, stderr[-3000:]
    assert json.loads((tmp_path / "results.json").read_text())["mcqvae"]["steps"] == 6


def signal_at_startup(tmp_path, marker, signal_number=signal.SIGINT):
    """Starts a :tiny run, sends `signal_number` once a stdout line starts with
    `marker` (None: as soon as the interpreter runs), and returns (status, seconds
    from the signal to the exit, stdout, stderr)."""
    config = f"--config={REPO_ROOT / 'configs' / 'ctvae_shapes3d.py'}:tiny"
    process = run_cli(config, f"--workdir={tmp_path}")
    seen = []
    while marker is not None:
        line = process.stdout.readline()
        assert line, (seen, process.communicate())
        seen.append(line)
        if line.startswith(marker):
            break
    if marker is None:
        time.sleep(0.5)  # importing jax
    signalled = time.monotonic()
    process.send_signal(signal_number)
    stdout, stderr = process.communicate(timeout=120)
    return process.returncode, time.monotonic() - signalled, "".join(seen) + stdout, stderr


@pytest.mark.parametrize("marker", [
    None,  # importing
    "workdir ",  # the model's initial state compiling
    "[mcqvae] compiling the training step",  # the first step compiling, inside the loop
])
def test_a_signal_at_start_up_ends_at_once_with_130_and_no_crash(tmp_path, marker):
    status, seconds, stdout, stderr = signal_at_startup(tmp_path, marker)
    assert status == 130, (stdout, stderr[-3000:])
    assert "Fatal Python error" not in stderr and "Traceback" not in stderr, stderr[-3000:]
    assert seconds < 5, seconds  # not after the compile in flight
    if marker is not None:
        assert stdout.rstrip().endswith("stopped: SIGINT received: outside training; the last "
                                        "checkpoint stands; rerun the same command to resume")


# Unreadable checkpoints ----------------------------------------------------------------


def save_steps(workdir, steps, signature=None):
    checkpoints = checkpoint.StageCheckpoints(workdir, "fake", signature or {"k": 1}, 1, 10)
    for step in steps:
        checkpoints.save({"w": jnp.full(4, float(step))}, step)
    checkpoints.close()
    return checkpoint.checkpoint_dir(workdir, "fake")


def tree_bytes(directory):
    return {path.relative_to(directory): path.read_bytes()
            for path in sorted(directory.rglob("*")) if path.is_file()}


def restore(workdir):
    checkpoints = checkpoint.StageCheckpoints(workdir, "fake", {"k": 1}, 1, 10)
    try:
        return checkpoints.restore_latest({"w": jax.ShapeDtypeStruct((4,), jnp.float32)})
    finally:
        checkpoints.close()


@pytest.mark.parametrize("damage", ["truncated", "deleted", "bad signature"])
def test_an_unreadable_latest_checkpoint_falls_back_and_is_kept_aside(tmp_path, damage, caplog):
    directory = save_steps(tmp_path, [1, 2, 3])
    if damage == "truncated":
        truncate_data_files(directory / "3")
    elif damage == "deleted":
        (directory / "3" / "state" / "manifest.ocdbt").unlink()
    else:
        (directory / "3" / "signature" / "metadata").write_text("{not json")
    damaged = tree_bytes(directory / "3")
    checkpoint.check_workdir_compatible(tmp_path, "fake", {"k": 1})  # not an error
    assert float(restore(tmp_path)["w"][0]) == 2.0
    kept = checkpoint.unreadable_dir(directory) / "3"
    assert tree_bytes(kept) == damaged  # moved, byte for byte, never deleted
    assert not (directory / "3").exists()
    assert f"the checkpoint at {directory / '3'} cannot be read" in caplog.text
    assert f"moved it to {kept} and resumed from step 2" in caplog.text


def test_reading_a_run_never_moves_a_step_nor_falls_back_to_an_older_one(tmp_path):
    """Evaluation, figures and interventions read the latest step or nothing: an older
    step's scores would be labelled with the latest one."""
    directory = save_steps(tmp_path, [1, 2])
    reading = checkpoint.StageCheckpoints(tmp_path, "fake", {"k": 1}, 1, 10, read_only=True)
    abstract = {"w": jax.ShapeDtypeStruct((4,), jnp.float32)}
    assert float(reading.restore_latest(abstract)["w"][0]) == 2.0
    truncate_data_files(directory / "2")
    (tmp_path / "command.txt").write_text("python -m causal_disent.main ...\n")
    before = tree_bytes(tmp_path)
    with pytest.raises(checkpoint.CheckpointError) as raised:
        reading.restore_latest(abstract)
    reading.close()
    assert str(raised.value).startswith(f"the checkpoint at {directory / '2'} cannot be read (")
    assert str(raised.value).endswith(
        f"it is corrupt or incomplete. Nothing was changed; rerun the run's training command "
        f"with --workdir={tmp_path} (its command.txt has it) to move that step to "
        f"{checkpoint.unreadable_dir(directory)} and train again from an earlier checkpoint")
    assert tree_bytes(tmp_path) == before
    missing = checkpoint.StageCheckpoints(tmp_path, "other", {"k": 1}, 1, 10, read_only=True)
    assert missing.latest_step() is None
    missing.close()
    assert not checkpoint.checkpoint_dir(tmp_path, "other").exists()  # not even created


def test_a_step_set_aside_twice_keeps_both_copies(tmp_path):
    directory = save_steps(tmp_path, [1, 2])
    for _ in range(2):
        truncate_data_files(directory / "2")
        assert float(restore(tmp_path)["w"][0]) == 1.0
        save_steps(tmp_path, [2])
    aside = checkpoint.unreadable_dir(directory)
    assert sorted(path.name for path in aside.iterdir()) == ["2", "2-2"]


def test_a_truncated_checkpoint_of_many_arrays_falls_back_without_stray_tracebacks(
        tmp_path, monkeypatch, caplog):
    """Orbax reads a state's arrays in parallel; when one read failed it closed its
    event loop with the others in flight, and each then printed "Event loop is closed"
    (a tiny MCQ-VAE's console got about 140 tracebacks). The values are read first."""
    state = {f"w{i}": jnp.full(4, 1.0) for i in range(40)}
    checkpoints = checkpoint.StageCheckpoints(tmp_path, "fake", {"k": 1}, 1, 10)
    for step in (1, 2):
        checkpoints.save(jax.tree.map(lambda value: value * step, state), step)
    checkpoints.close()
    truncate_data_files(checkpoint.checkpoint_dir(tmp_path, "fake") / "2")
    unraisable = []
    monkeypatch.setattr(sys, "unraisablehook", unraisable.append)
    checkpoints = checkpoint.StageCheckpoints(tmp_path, "fake", {"k": 1}, 1, 10)
    with caplog.at_level(logging.ERROR, logger="asyncio"):
        restored = checkpoints.restore_latest(
            jax.tree.map(lambda value: jax.ShapeDtypeStruct(value.shape, value.dtype), state))
        checkpoints.close()
        time.sleep(0.5)  # the reads left in flight finished within this before the fix
        gc.collect()  # "Future exception was never retrieved" is logged on collection
    assert float(restored["w39"][0]) == 1.0
    assert unraisable == []
    assert [record.getMessage() for record in caplog.records if record.name == "asyncio"] == []


def test_an_intact_steps_values_read_back_and_a_cut_file_is_named(tmp_path):
    directory = save_steps(tmp_path, [1])
    checkpoint.check_arrays_readable(directory / "1")  # no error
    for path in (directory / "1" / "state").rglob("*"):
        if path.is_file() and path.parent.name == "d":
            path.write_bytes(path.read_bytes()[:-1])  # one byte short
    with pytest.raises(checkpoint.UnreadableCheckpoint,
                       match=rf"the checkpoint at {directory / '1'} cannot be read"):
        checkpoint.check_arrays_readable(directory / "1")


def test_a_save_that_fails_in_the_background_is_one_checkpoint_error_once(tmp_path):
    checkpoints = checkpoint.StageCheckpoints(tmp_path, "fake", {"k": 1}, 1, 10)
    checkpoints.save({"w": jnp.zeros(4)}, 1)
    checkpoints.wait()
    directory = checkpoint.checkpoint_dir(tmp_path, "fake")
    # As orbax reports TensorStore's failed write, from the save in flight.
    failure = ValueError(f'RESOURCE_EXHAUSTED: Error writing local file "{directory}/2.orbax-'
                         f'checkpoint-tmp/state/d/1": Failed to write 4913 bytes to file 16: No '
                         f"space left on device [os_error_code='28']")

    def failed_write():
        raise failure

    checkpoints.manager.wait_until_finished = failed_write
    with pytest.raises(checkpoint.CheckpointError,
                       match=rf"cannot write the checkpoint {directory / '2'} \(No space left on "
                             rf"device\); the earlier checkpoints are intact"):
        checkpoints.close()
    checkpoints.close()  # reported once: a stop's cleanup closes again

    def bug():
        raise KeyError("a bug")

    other = checkpoint.StageCheckpoints(tmp_path, "fake", {"k": 1}, 1, 10)
    other.manager.wait_until_finished = bug
    with pytest.raises(KeyError, match="a bug"):  # not a failed write: raised as it is
        other.wait()
    del other.manager.wait_until_finished  # the manager's own again
    other.close()


def test_a_half_written_checkpoint_is_named_and_left_alone(tmp_path, caplog):
    directory = save_steps(tmp_path, [1])
    partial = directory / "2.orbax-checkpoint-tmp-1700000000"
    shutil.copytree(directory / "1", partial)
    assert float(restore(tmp_path)["w"][0]) == 1.0
    assert partial.exists() and f"{partial} is a half-written checkpoint" in caplog.text


def test_when_no_checkpoint_is_readable_nothing_moves(tmp_path):
    directory = save_steps(tmp_path, [1, 2])
    for step in ("1", "2"):
        truncate_data_files(directory / step)
    before = tree_bytes(directory)
    with pytest.raises(checkpoint.CheckpointError, match=r"no checkpoint .* can be read "
                       r"\(steps 2, 1.*Nothing was changed"):
        restore(tmp_path)
    assert tree_bytes(directory) == before
    assert not checkpoint.unreadable_dir(directory).exists()


def test_an_incompatible_older_checkpoint_is_still_an_error(tmp_path):
    save_steps(tmp_path, [1], signature={"k": 2})
    with pytest.raises(checkpoint.CheckpointError, match="incompatible config"):
        restore(tmp_path)


def test_a_failed_write_names_the_step_and_keeps_the_others(tmp_path, monkeypatch):
    directory = save_steps(tmp_path, [1])
    checkpoints = checkpoint.StageCheckpoints(tmp_path, "fake", {"k": 1}, 1, 10)

    def disk_full(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(checkpoints.manager, "save", disk_full)
    with pytest.raises(checkpoint.CheckpointError,
                       match=r"cannot write the checkpoint .*/2 \(No space left on device\); "
                             r"the earlier checkpoints are intact"):
        checkpoints.save({"w": jnp.zeros(4)}, 2)
    checkpoints.close()
    assert float(restore(tmp_path)["w"][0]) == 1.0 and (directory / "1").exists()


def test_a_run_with_a_corrupt_latest_checkpoint_resumes_to_the_same_parameters(tmp_path):
    """Stage 1 to step 6 (checkpoints 3 and 6); step 6 truncated; the rerun falls back
    to 3 and trains again to parameters equal to the uninterrupted ones."""
    stages.run(tiny_config(), tmp_path)
    uninterrupted, _ = final_params(tmp_path)
    directory = checkpoint.checkpoint_dir(tmp_path, "mcqvae")
    truncate_data_files(directory / "6")
    with pytest.raises(checkpoint.CheckpointError, match="rerun the run's training command"):
        stages.run(tiny_config(), tmp_path, mode="eval")  # evaluating it again moves nothing
    assert (directory / "6").exists()
    (tmp_path / "results.json").unlink()  # as if killed before its evaluation
    stages.run(tiny_config(), tmp_path)
    resumed, step = final_params(tmp_path)
    assert step == 6 and (checkpoint.unreadable_dir(directory) / "6").exists()
    jax.tree.map(np.testing.assert_array_equal, resumed, uninterrupted)
    rows = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert [row["step"] for row in rows] == [1, 2, 3, 4, 5, 6]  # each step once


# Records -------------------------------------------------------------------------------


def test_metric_rows_past_the_resumed_step_and_cut_lines_are_dropped(tmp_path):
    writer = reporting.MetricsWriter(tmp_path)
    writer.write("a", [(1, {"loss": 1.0})])
    writer.write("b", [(1, {"loss": 1.0}), (2, {"loss": 2.0}), (3, {"loss": 3.0})])
    writer.flush()  # rows are written in the background
    with writer.path.open("a") as f:
        f.write('{"stage": "b", "st')  # killed mid-line
    writer.discard_after("b", 2)
    assert [(r["stage"], r["step"]) for r in map(json.loads, writer.path.read_text().splitlines())] == [
        ("a", 1), ("b", 1), ("b", 2)]
    mtime = writer.path.stat().st_mtime_ns
    writer.discard_after("b", 2)  # nothing to drop: left untouched
    assert writer.path.stat().st_mtime_ns == mtime


def test_strict_json_of_plain_values_is_that_of_the_strict_record():
    # Plain finite records skip the strict pass; anything else takes it, same text.
    for record in ({"stage": "vae", "step": 3, "loss": 0.25, "kl": [1.0, 2.5], "mode": "action",
                    "none": None, "pair": (1, 2), "nested": {"x": 1.5}},
                   {"loss": float("nan")}, {"kl": [1.0, float("inf")]},
                   {"loss": np.float32(0.1), "kl": np.array([1.0, 2.0])}):
        assert json_values.dumps(record) == json.dumps(json_values.strict(record), allow_nan=False)


def test_strict_json_writes_null_with_the_reason_beside_it():
    record = {"tc": float("nan"), "kl": np.array([1.0, np.inf, -np.inf]), "ok": 2.0,
              "nested": {"x": np.float32("-inf")}, "rows": [{"y": float("nan")}],
              "name": "run", "none": None, "per_action": [0.5, None, 1.0]}
    decoded = strict_json(json_values.dumps(record))
    assert decoded == {
        "tc": None, "tc_not_finite": "nan",
        "kl": [1.0, None, None], "kl_not_finite": "2 of 3 values were not finite",
        "ok": 2.0, "nested": {"x": None, "x_not_finite": "-inf"},
        "rows": [{"y": None, "y_not_finite": "nan"}], "name": "run", "none": None,
        "per_action": [0.5, None, 1.0],  # left out on purpose (no pairs): no reason
    }


def test_indented_json_writes_a_list_of_values_on_one_line_and_reads_back_the_same():
    record = {"confusion": np.arange(6).reshape(2, 3), "per_action": [0.5, None, 1.0],
              "names": ["scale+", "hue [0, 1]"], "empty": [], "text": "a [b\n c]",
              "rows": [{"kl": [1.0, float("nan")]}], "steps": 3}
    text = json_values.dumps(record, indent=2)
    assert strict_json(text) == strict_json(json_values.dumps(record))
    assert text.splitlines() == [
        "{",
        '  "confusion": [',
        "    [0, 1, 2],",
        "    [3, 4, 5]",
        "  ],",
        '  "per_action": [0.5, null, 1.0],',
        '  "names": [',  # a bracket inside a string: left as json lays it out
        '    "scale+",',
        '    "hue [0, 1]"',
        "  ],",
        '  "empty": [],',
        '  "text": "a [b\\n c]",',
        '  "rows": [',
        "    {",
        '      "kl": [1.0, null],',
        '      "kl_not_finite": "1 of 2 values were not finite"',
        "    }",
        "  ],",
        '  "steps": 3',
        "}"]
