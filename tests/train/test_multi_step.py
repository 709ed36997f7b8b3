"""Several steps per compiled call (train/multi_step.py) and training data kept on
the devices (train/device_data.py): the loop's guarantees at k > 1 with fakes, k-step
calls against k single steps on a real optimiser step, device batches against the
host pipeline's for each dataset kind and the code cache, and the config checks."""

import dataclasses
import functools
import itertools
import json
import os
import re
import signal

import jax
import jax.numpy as jnp
import ml_collections
import numpy as np
import optax
import pytest
from flax.training.train_state import TrainState

from causal_disent.data import pipeline, registry, splits, transitions
from causal_disent.train import (ct_stage, device_data, finite_guard, image_stages,
                                 interrupts, loop, multi_step, reporting, runner)
from causal_disent.utils.sharding import make_data_mesh
from tests.helpers import small_shapes3d_dataset
from tests.train.test_deadline import FakeCheckpoints

K = 2


# The loop at k > 1, with fakes ------------------------------------------------------


def k_step_fit(tmp_path, events, *, loss_at=lambda step: step, signal_at=None,
               evaluate=False, last_step=8):
    """fit on a counter in calls of K steps: the state is the number of steps taken,
    row s holds loss_at(s); `signal_at` sends SIGTERM during the call holding that
    step."""

    def step_fn(state, batch, step):
        assert batch["step"].tolist() == list(range(step, step + K))  # grouped in order
        if signal_at is not None and step < signal_at <= step + K:
            os.kill(os.getpid(), signal.SIGTERM)
        losses = jnp.array([loss_at(s) for s in range(step + 1, step + K + 1)], jnp.float32)
        return state + K, {"loss": losses}

    return loop.fit(
        stage="fake", state=jnp.array(0), step_fn=step_fn,
        local_batches=multi_step.grouped(({"step": np.array(s)} for s in itertools.count()), K),
        first_step=0, last_step=last_step, global_batch_size=1,
        checkpoints=FakeCheckpoints(events, every=4), writer=reporting.MetricsWriter(tmp_path),
        log_every_steps=4, steps_per_call=K, rows_of_call=multi_step.Rows(),
        evaluate_every_steps=2 if evaluate else 0,
        evaluate_fn=(lambda state, step: events.append(("eval", step, int(state))))
        if evaluate else None,
    )


def logged_rows(tmp_path):
    return [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]


def test_k_step_calls_write_one_row_per_step_and_act_between_calls(tmp_path):
    events = []
    state = k_step_fit(tmp_path, events, evaluate=True)
    assert int(state) == 8
    assert [(row["step"], row["loss"]) for row in logged_rows(tmp_path)] == [
        (step, float(step)) for step in range(1, 9)]
    assert events == [("eval", 0, 0), ("eval", 2, 2), ("save", 4, 4), ("eval", 4, 4),
                      ("eval", 6, 6), ("save", 8, 8), ("save", 8, 8)]  # due, then final


def test_a_non_finite_row_inside_a_call_stops_before_that_call_is_saved(tmp_path):
    events = []
    with pytest.raises(finite_guard.NonFiniteTraining, match="loss = nan at step 3"):
        k_step_fit(tmp_path, events, loss_at=lambda step: np.nan if step == 3 else step)
    assert events == []  # the call ending at step 4 held the bad row: never saved
    assert [row["step"] for row in logged_rows(tmp_path)] == [1, 2, 3]


def test_sigterm_inside_a_call_saves_its_end_and_stops(tmp_path):
    events = []
    with pytest.raises(interrupts.Interrupted, match="saved at step 6"):
        k_step_fit(tmp_path, events, signal_at=5)
    assert events[-1] == ("save", 6, 6)
    assert [row["step"] for row in logged_rows(tmp_path)] == list(range(1, 7))


def test_a_calls_fetched_metrics_reach_the_rows_as_python_numbers():
    metrics = {"loss": np.array([0.1, 0.2], np.float32), "count": np.array([1, 2], np.int32),
               "flag": np.array([True, False]), "mode": "action",
               "half": np.array([1.0, 2.0], jnp.bfloat16)}
    converted = loop._as_python(metrics)
    assert converted["loss"] == [float(np.float32(0.1)), float(np.float32(0.2))]  # exact
    assert type(converted["loss"][0]) is float and type(converted["count"][0]) is int
    assert converted["flag"] == [True, False] and converted["mode"] == "action"
    assert converted["half"] is metrics["half"]  # not a numpy kind: left to the JSON code


def test_rows_written_in_the_background_are_on_disk_after_flush_in_order(tmp_path):
    writer = reporting.MetricsWriter(tmp_path)
    for step in range(1, 41):
        writer.write("fake", [(step, {"loss": float(step)})])
    writer.flush()
    assert [row["step"] for row in logged_rows(tmp_path)] == list(range(1, 41))
    writer.write("fake", [(41, {"loss": 41.0})])
    thread = writer._thread
    writer.close()  # writes what is queued, then the thread ends
    assert not thread.is_alive() and len(logged_rows(tmp_path)) == 41


def test_a_failure_of_background_writing_reaches_the_loop(tmp_path, monkeypatch):
    def full_disk(*args):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(reporting.metrics_log, "append_training_rows", full_disk)
    writer = reporting.MetricsWriter(tmp_path)
    writer.write("fake", [(1, {"loss": 1.0})])
    with pytest.raises(OSError, match="No space left"):
        writer.flush()


def test_every_row_of_a_saved_step_is_on_disk_when_its_checkpoint_is_saved(tmp_path):
    on_disk_at_save = []

    class Checkpoints(FakeCheckpoints):
        def save(self, state, step, *, force=False):
            on_disk_at_save.append((step, len(logged_rows(tmp_path))))
            super().save(state, step, force=force)

    loop.fit(stage="fake", state=jnp.array(0),
             step_fn=lambda state, batch, step: (state + 1, {"loss": state * 1.0}),
             local_batches=itertools.repeat({}), first_step=0, last_step=8,
             global_batch_size=1, checkpoints=Checkpoints([], every=4),
             writer=reporting.MetricsWriter(tmp_path), log_every_steps=2)
    assert on_disk_at_save[:2] == [(4, 4), (8, 8)]


def test_grouped_stacks_consecutive_batches_and_refuses_a_short_call():
    groups = list(multi_step.grouped(({"x": np.full(2, s)} for s in range(4)), 2))
    np.testing.assert_array_equal(groups[1]["x"], [[2, 2], [3, 3]])
    with pytest.raises(ValueError, match="fewer than a call's 3"):
        list(multi_step.grouped(({"x": np.zeros(1)} for _ in range(4)), 3))


# k-step calls against k single steps -------------------------------------------------


def regression_state():
    params = {"w": jnp.linspace(-1.0, 1.0, 12).reshape(4, 3), "b": jnp.zeros(3)}
    return TrainState.create(apply_fn=None, params=params, tx=optax.adam(0.05))


def regression_step(state, batch, rng, *, name="mse"):
    """An Adam step on a noisy regression: uses the batch, the rng and the step."""

    def loss_fn(params):
        noise = 0.01 * jax.random.normal(jax.random.fold_in(rng, state.step), (3,))
        prediction = batch["x"] @ params["w"] + params["b"] + noise
        return jnp.mean((prediction - batch["y"]) ** 2)

    loss, grads = jax.value_and_grad(loss_fn)(state.params)
    return state.apply_gradients(grads=grads), {name: loss, "grad_norm": optax.tree.norm(grads)}


def regression_batches(count):
    rng = np.random.default_rng(0)
    return [{"x": rng.normal(size=(8, 4)).astype(np.float32),
             "y": rng.normal(size=(8, 3)).astype(np.float32)} for _ in range(count)]


@pytest.mark.parametrize("unroll", [False, True])
def test_a_scanned_call_equals_its_single_steps(unroll):
    batches, rng = regression_batches(4), jax.random.key(3)
    state, single = regression_state(), []
    step = jax.jit(regression_step)
    for batch in batches:
        state, metrics = step(state, batch, rng)
        single.append(metrics)
    call = jax.jit(multi_step.scanned(regression_step, unroll))
    stacked_batches = next(multi_step.grouped(batches, 4))
    # Unrolled, the compiled program holds no loop over the 4 steps (none for XLA:GPU
    # to run on the host); the random draws' own 5-round loops stay on a CPU.
    program = call.lower(regression_state(), stacked_batches, rng).compile().as_text()
    trip_counts = re.findall(r'"known_trip_count":\{"n":"(\d+)"\}', program)
    assert ("4" in trip_counts) is not unroll
    scanned_state, stacked = call(regression_state(), stacked_batches, rng)
    rows = multi_step.Rows()(0, jax.device_get(stacked))
    assert [step for step, _ in rows] == [1, 2, 3, 4]
    for (_, row), metrics in zip(rows, single):
        np.testing.assert_allclose(row["mse"], metrics["mse"], rtol=1e-6)
    for a, b in zip(jax.tree.leaves(scanned_state), jax.tree.leaves(state)):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)


def test_a_scanned_call_of_several_modes_runs_each_steps_own_and_keeps_its_metrics():
    steps = {"first": functools.partial(regression_step, name="mse"),
             "second": functools.partial(regression_step, name="other")}
    modes = ["second", "first", "first", "second"]
    batches, rng = regression_batches(4), jax.random.key(3)
    state = regression_state()
    for mode, batch in zip(modes, batches):
        state, _ = jax.jit(steps[mode])(state, batch, rng)
    rows = multi_step.Rows(("first", "second"))
    call = jax.jit(multi_step.scanned_modes(steps, rows))
    scanned_state, stacked = call(regression_state(), next(multi_step.grouped(batches, 4)),
                                  rng, jnp.array([1, 0, 0, 1]))
    written = rows(10, jax.device_get(stacked), modes)
    assert [(step, row["mode"], sorted(row)) for step, row in written] == [
        (11, "second", ["grad_norm", "mode", "other"]), (12, "first", ["grad_norm", "mode", "mse"]),
        (13, "first", ["grad_norm", "mode", "mse"]), (14, "second", ["grad_norm", "mode", "other"])]
    for a, b in zip(jax.tree.leaves(scanned_state), jax.tree.leaves(state)):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)


def test_the_runner_gives_the_same_training_from_device_data_in_calls_of_k():
    """The host pipeline one step a call against a device table read in calls of two."""
    table = {"x": np.random.default_rng(1).normal(size=(40, 4)).astype(np.float32),
             "y": np.random.default_rng(2).normal(size=(40, 3)).astype(np.float32)}
    order = [np.random.default_rng([5, s]).permutation(40)[:8] for s in range(4)]
    mesh, rng = make_data_mesh(), jax.random.key(3)
    host = runner.Training(steps={"fit": regression_step}, rng=rng,
                           batches=[{name: values[rows] for name, values in table.items()}
                                    for rows in order])
    on_devices = dataclasses.replace(host, device_data=device_data.DeviceData(
        table=table, batches=[{"row": rows.astype(np.int32)} for rows in order],
        gather=lambda table, batch: {name: values[batch["row"]] for name, values in table.items()}))
    results = []
    for training, k in ((host, 1), (on_devices, 2)):
        step_fn, rows_of_call = runner.compiled_step_fn(training, mesh, "fake", k)
        state, losses = regression_state(), []
        batches = training.batches if training.device_data is None else training.device_data.batches
        for step, batch in zip(range(0, 4, k), batches if k == 1 else multi_step.grouped(batches, k)):
            state, metrics = step_fn(state, batch, step)
            rows = (rows_of_call or loop._one_row)(step, jax.device_get(metrics))
            losses += [row["mse"] for _, row in rows]
        results.append((state, losses))
    (host_state, host_losses), (device_state, device_losses) = results
    np.testing.assert_allclose(device_losses, host_losses, rtol=1e-6)
    for a, b in zip(jax.tree.leaves(device_state), jax.tree.leaves(host_state)):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)


# Device batches against host batches ---------------------------------------------------


def train_section(**fields):
    return ml_collections.ConfigDict({"prefetch_batches": 0, "device_data": "on",
                                      "device_data_max_gb": 1.0, **fields})


@pytest.mark.parametrize("name", ["dsprites_synth", "shapes3d_synth", "pendulum"])
def test_device_image_batches_equal_the_host_pipelines(name):
    dataset = registry.get_dataset(name)
    indices = np.arange(3, dataset.num_images, dataset.num_images // 300)[:300]
    batcher = pipeline.EpochShuffledBatches(indices, 16, seed=4)
    steps = (0, 1, 18, 19)  # an epoch boundary between 18 and 19
    data = image_stages.image_device_data("vae", dataset, [batcher], 0, 20, train_section())
    host = list(pipeline.image_batches(dataset, batcher, 0, 20, prefetch=0))
    device = list(data.batches)
    for step in steps:
        np.testing.assert_array_equal(data.gather(data.table, device[step])["image"],
                                      host[step]["image"])
    assert len(data.table["image"]) == len(indices)  # 20 steps hold a whole epoch of 18


def test_device_batches_of_stacked_seeds_and_auxiliary_values_equal_the_host_pipelines():
    dataset = registry.get_dataset("dsprites_synth")
    indices = np.arange(0, 737280, 2459)[:300]
    batchers = [pipeline.EpochShuffledBatches(indices, 8, seed) for seed in (0, 1, 2)]
    auxiliary = lambda index: np.asarray(index, np.float32)[:, None] * 0.5  # noqa: E731
    data = image_stages.image_device_data("vae", dataset, batchers, 30, 40, train_section(),
                                          {"auxiliary": auxiliary}, stacked=True)
    host = pipeline.seed_stacked_image_batches(dataset, batchers, 30, 40, prefetch=0,
                                               auxiliary=auxiliary)
    drawn = set()
    for device_batch, host_batch in zip(data.batches, host):
        gathered = data.gather(data.table, device_batch)
        assert gathered["image"].shape == host_batch["image"].shape == (3, 8, 64, 64, 1)
        for key in ("image", "auxiliary"):
            np.testing.assert_array_equal(gathered[key], host_batch[key])
        drawn |= set(host_batch["auxiliary"].ravel().tolist())
    # Steps 30-40 of epochs of 37 steps hold no whole epoch: the table keeps only the
    # images they draw (the auxiliary value names each), in ascending order.
    kept = data.table["auxiliary"].ravel().tolist()
    assert kept == sorted(drawn) and len(kept) < len(indices)


def test_device_labelled_batches_equal_the_host_pipelines():
    """CausalVAE's batches: images and their concept labels."""
    dataset = registry.get_dataset("pendulum")
    labels = dataset.labels(np.arange(dataset.num_images)).astype(np.float32)
    batcher = pipeline.EpochShuffledBatches(np.arange(10, 250), 12, seed=2)
    data = image_stages.image_device_data("causalvae", dataset, [batcher], 15, 22,
                                          train_section(), {"labels": lambda i: labels[i]})
    host = pipeline.labelled_batches(dataset, labels, batcher, 15, 22, prefetch=0)
    for device_batch, host_batch in zip(data.batches, host):
        gathered = data.gather(data.table, device_batch)
        for key in ("image", "labels"):
            np.testing.assert_array_equal(gathered[key], host_batch[key])
    assert image_stages.image_device_data("causalvae", dataset, [batcher], 22, 22,
                                          train_section()) is None  # nothing to train


def test_device_code_batches_equal_the_host_code_cache_batches():
    dataset = small_shapes3d_dataset()
    split = splits.dataset_split(dataset, (0.8, 0.1, 0.1), 0)
    sampler = transitions.sampler_for(dataset, split, seed=0)
    codes = np.random.default_rng(0).integers(0, 64, (dataset.num_images, 16), dtype=np.uint8)
    host = ct_stage.transition_batches(dataset, sampler, "train", 8, 5, 9, 0, codes=codes)
    data = ct_stage.code_device_data(codes, sampler, 8, 5, 9, 0)
    for device_batch, host_batch in zip(data.batches, host):
        gathered = data.gather(data.table, device_batch)
        assert sorted(gathered) == sorted(host_batch)
        for key in host_batch:
            np.testing.assert_array_equal(gathered[key], host_batch[key])
            assert np.asarray(gathered[key]).dtype == host_batch[key].dtype


# When the table goes to the devices -------------------------------------------------------


class _Device:
    def __init__(self, stats):
        self.stats, self.platform = stats, "gpu"

    def memory_stats(self):
        return self.stats


def test_a_table_over_half_of_a_devices_free_memory_falls_back_with_one_line(
        capsys, monkeypatch):
    devices = [_Device({"bytes_limit": 10_000, "bytes_in_use": 1_000}),
               _Device({"bytes_limit": 10_000, "bytes_in_use": 6_000})]  # 4000 free
    monkeypatch.setattr(device_data.jax, "local_devices", lambda: devices)
    assert device_data.least_free_device_bytes() == 4_000
    assert device_data.wanted("vae", train_section(), 2_000, platform="gpu")
    capsys.readouterr()
    assert not device_data.wanted("vae", train_section(), 2_001, platform="gpu")
    out = capsys.readouterr().out.strip().splitlines()
    assert len(out) == 1 and "over 50% of a device's free memory" in out[0]
    # A device that does not report its memory (a CPU) sets no such bound.
    devices.append(_Device(None))
    assert device_data.least_free_device_bytes() is None
    assert device_data.wanted("vae", train_section(), 2_001, platform="gpu")


def test_with_several_processes_the_least_free_device_of_all_decides(monkeypatch):
    from jax.experimental import multihost_utils

    monkeypatch.setattr(device_data.jax, "process_count", lambda: 2)
    others = {"mib": np.float32(3.0)}  # the other process's least free memory
    monkeypatch.setattr(multihost_utils, "process_allgather",
                        lambda mine: np.array([mine, others["mib"]]))
    devices = [_Device({"bytes_limit": 5 * 2**20, "bytes_in_use": 0})]
    monkeypatch.setattr(device_data.jax, "local_devices", lambda: devices)
    assert device_data.least_free_device_bytes() == 3 * 2**20
    others["mib"] = np.float32(-1)  # its devices do not report their memory
    assert device_data.least_free_device_bytes() is None


def test_a_table_over_the_limit_falls_back_to_the_host_pipeline_with_one_line(capsys):
    section = train_section(device_data_max_gb=0.001)
    assert not device_data.wanted("vae", section, 2_000_000, platform="gpu")
    out = capsys.readouterr().out.strip().splitlines()
    assert len(out) == 1 and "does not fit train.device_data_max_gb = 0.001" in out[0]
    assert device_data.wanted("vae", section, 999_999, platform="gpu")
    assert not device_data.wanted("vae", train_section(device_data="auto"), 10, platform="cpu")
    assert device_data.wanted("vae", train_section(device_data="auto"), 10, platform="gpu")
    assert not device_data.wanted("vae", train_section(device_data="off"), 10, platform="gpu")


# Config checks ------------------------------------------------------------------------------


def config_with(**train):
    return ml_collections.ConfigDict({"vae": {"train": {
        "num_steps": 12, "log_every_steps": 4, "checkpoint_every_steps": 6,
        "eval_every_steps": 0, "steps_per_call": 2, "device_data": "auto",
        "device_data_max_gb": 1.0, **train}}})


@pytest.mark.parametrize("train, message", [
    ({"steps_per_call": -1}, r"vae.train.steps_per_call must be an integer >= 1, or 0 to "
                             r"choose by the devices; got -1"),
    ({"steps_per_call": 2.0}, r"steps_per_call must be an integer >= 1, or 0 .*got 2.0"),
    ({"steps_per_call": 4}, r"vae.train.checkpoint_every_steps = 6 is not a multiple of "
                            r"vae.train.steps_per_call = 4.*checkpoint_every_steps=8"),
    ({"eval_every_steps": 3}, "eval_every_steps = 3 is not a multiple"),
    ({"num_steps": 13}, "num_steps = 13 is not a multiple"),
    ({"unroll_call": "yes"}, r"vae.train.unroll_call must be one of \('auto', 'on', 'off'\)"),
])
def test_steps_per_call_that_intervals_do_not_divide_is_refused(train, message):
    multi_step.check_config(config_with())
    with pytest.raises(ValueError, match=message):
        multi_step.check_config(config_with(**train))


def test_auto_steps_per_call_takes_one_on_cpus_and_the_largest_common_divisor_elsewhere():
    def chosen(platform="gpu", total=2000, first=0, allowed=True, **train):
        section = ml_collections.ConfigDict({
            "steps_per_call": 0, "log_every_steps": 100, "checkpoint_every_steps": 500,
            "eval_every_steps": 500, **train})
        multi_step.check_config(ml_collections.ConfigDict({"vae": {"train": section}}))
        return multi_step.steps_per_call(section, platform, total, first, allowed)

    assert chosen("cpu") == 1  # bit for bit the loop of one step a call
    assert chosen("gpu") == chosen("tpu") == multi_step.AUTO_MAX_STEPS_PER_CALL == 10
    assert chosen(log_every_steps=25) == 5  # the largest divisor of 25 up to 10
    assert chosen(log_every_steps=7) == 1  # and 500
    assert chosen(log_every_steps=7, checkpoint_every_steps=700, eval_every_steps=0,
                  total=2100) == 7
    assert chosen(eval_every_steps=0) == 10  # no curve: no constraint
    assert chosen(eval_every_steps=12) == 4
    assert chosen(total=2004) == 4  # a length from epochs
    assert chosen(first=133) == 1  # paused between calls of any larger k
    assert chosen(first=130) == 10
    assert chosen(allowed=False) == 1  # CT-VAE stage 2 encoding each batch
    for k in (1, 5):  # set by hand: as it is, wherever it runs
        assert chosen("gpu", steps_per_call=k) == chosen("cpu", steps_per_call=k) == k
    section = ml_collections.ConfigDict({
        "steps_per_call": 0, "log_every_steps": 100, "checkpoint_every_steps": 500,
        "eval_every_steps": 0})
    assert multi_step.auto_shortfall(section, "gpu", 1847, 0, True, 1) == (
        "1 step a call on the gpu (train.steps_per_call = 0, auto): no larger k up to 10 "
        "divides train.log_every_steps 100, train.checkpoint_every_steps 500, its length "
        "1847; multiples of 10 would let each call run 10")
    assert "divides train.log_every_steps 100, train.checkpoint_every_steps 500, its " \
        "length 2000, the step it starts from 135" in multi_step.auto_shortfall(
            section, "tpu", 2000, 135, True, 5)
    for platform, total, allowed, k in (("gpu", 2000, True, 10), ("cpu", 1847, True, 1),
                                        ("gpu", 1847, False, 1)):
        assert multi_step.auto_shortfall(section, platform, total, 0, allowed, k) is None
    section.steps_per_call = 1  # chosen by hand: nothing to say
    assert multi_step.auto_shortfall(section, "gpu", 1847, 0, True, 1) is None
    # Every choice divides what the loop needs divided (never a refused config).
    for log in range(1, 60):
        for first in (0, 40, 120):
            k = chosen(log_every_steps=log, first=first, total=2400)
            multi_step.check_total_steps("vae", 2400, first, k)
            assert log % k == 0 and 500 % k == 0


@pytest.mark.parametrize("train, message", [
    ({"device_data": "yes"}, "vae.train.device_data must be one of"),
    ({"device_data_max_gb": -1}, "device_data_max_gb must be a finite number >= 0"),
])
def test_bad_device_data_settings_are_refused(train, message):
    device_data.check_config(config_with())
    with pytest.raises(ValueError, match=message):
        device_data.check_config(config_with(**train))


def test_unroll_call_auto_unrolls_on_cpus_only_and_on_or_off_decide_everywhere():
    assert [multi_step.unrolled("auto", platform) for platform in ("cpu", "gpu", "tpu")] == [
        True, False, False]
    for platform in ("cpu", "gpu"):
        assert multi_step.unrolled("on", platform) and not multi_step.unrolled("off", platform)


def test_a_resumed_step_between_calls_is_refused():
    multi_step.check_total_steps("vae", 12, 6, 2)
    with pytest.raises(ValueError, match="resumes from step 5.*steps_per_call=1"):
        multi_step.check_total_steps("vae", 12, 5, 2)
    with pytest.raises(ValueError, match="trains 13 steps, not a multiple"):
        multi_step.check_total_steps("vae", 13, 0, 2)
