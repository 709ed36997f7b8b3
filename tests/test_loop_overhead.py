"""benchmarks/loop_overhead.py: reading the timed loop and its parts off a trace (on
constructed events, and on a real trace of `loop.fit`), its repeats and its argument
checks. (Its runs are whole stages, too slow for the suite; its records in results/
come from it.)"""

from __future__ import annotations

import importlib
import itertools
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import pytest

from causal_disent.train import loop, reporting

loop_overhead = importlib.import_module("benchmarks.loop_overhead")
trace_gaps = importlib.import_module("benchmarks.trace_gaps")


def test_the_window_starts_after_the_first_call_and_the_innermost_named_frame_takes_the_time():
    events = [
        (0, 1000, "$loop.py:26 fit"),
        (10, 60, "$loop.py:144 dispatch"),  # the first call: before the window
        (60, 100, "$loop.py:153 start_timing"),
        (100, 140, "$loop.py:144 dispatch"),
        (105, 115, "$runner.py:263 __call__"),
        (115, 140, "$api.py:2479 block_until_ready"),
        (140, 150, "$pipeline.py:169 prefetched"),  # the batch iterator
        (150, 400, "$loop.py:144 dispatch"),  # a call that compiled: left out
        (160, 390, "$compiler.py:387 compile_or_get_cached"),
        (400, 500, "$loop.py:161 log_if_due"),
        (410, 460, "$loop.py:167 fetched"),
        (420, 450, "$api.py:3000 device_get"),
        (462, 469, "$loop.py:250 _with_learning_rates"),
        (463, 467, "$compiler.py:387 compile_or_get_cached"),  # only this is left out
        (470, 480, "$reporting.py:51 write"),
        (500, 520, "$loop.py:201 stop_if_signalled"),
        (520, 600, "$loop.py:182 save"),
        (530, 545, "$api.py:3000 device_get"),
        (600, 700, "$loop.py:144 dispatch"),
        (610, 700, "Wait for usage holds"),  # the runtime's own event: its parent's part
        (700, 900, "$checkpoint.py:212 wait"),
    ]
    # An earlier stage's loop comes first; the last one is the timed stage's.
    later_stage = [(5000 + start, 5000 + end, name) for start, end, name in events]
    found = loop_overhead.loop_trace(events + later_stage)
    assert (found.start_ns, found.end_ns, found.calls) == (5100, 6000, 2)
    assert found.compiling == [(5150, 5400), (5463, 5467)]
    assert found.window_ns == 900 - 250 - 4
    assert found.parts_ns == {"data": 10, "step call": 15 + 100, "device wait": 25 + 30 + 15,
                              "rows": 70 - 4, "saves": 65 + 200, "rest": 20 + 100}
    assert sum(found.parts_ns.values()) == found.window_ns
    operations = [(5050, 5120, "a"), (5110, 5130, "b"), (5300, 5450, "c"), (5990, 6100, "d")]
    # 5100-5130, then 5400-5450 (5300-5400 is inside the compiling call), then 5990-6000.
    assert loop_overhead.busy_in_window(operations, found) == 30 + 50 + 10


def test_a_trace_that_began_inside_the_loop_is_timed_from_the_first_call_after_it():
    events = [
        (1000, 2000, "$loop.py:26 fit"),  # in progress when the trace began
        (1000, 1030, "$loop.py:144 dispatch"),  # so was this call: cut short, left out
        (1030, 1040, "$loop.py:161 log_if_due"),
        (1100, 1500, "$loop.py:144 dispatch"),
        (1200, 1500, "$api.py:2479 block_until_ready"),
        (1500, 1900, "$loop.py:144 dispatch"),
    ]
    found = loop_overhead.loop_trace(events)
    assert (found.start_ns, found.end_ns, found.calls, found.compiling) == (1100, 2000, 2, [])
    assert found.parts_ns == {"data": 0, "step call": 100 + 400, "device wait": 300,
                              "rows": 0, "saves": 0, "rest": 100}


def test_the_trace_runs_from_the_first_training_row_to_the_final_checkpoint(tmp_path,
                                                                            monkeypatch):
    started, stopped = [], []
    monkeypatch.setattr(loop_overhead.jax.profiler, "start_trace",
                        lambda directory, profiler_options: started.append(directory))
    monkeypatch.setattr(loop_overhead.jax.profiler, "stop_trace", lambda: stopped.append(1))
    monkeypatch.setattr(loop_overhead, "STOP_AFTER_SECONDS", 0.01)
    watcher = loop_overhead.TraceFromFirstRow(str(tmp_path), "ct", 8, "TRACE")
    watcher.start()
    metrics = tmp_path / "metrics.jsonl"
    with metrics.open("a") as file:  # another stage's rows, a validation row
        file.write('{"stage": "mcqvae", "step": 1, "loss": 1.0}\n'
                   '{"stage": "ct", "step": 0, "split": "test", "accuracy": 0.1}\n'
                   '{"stage": "ct", "step": 1, ')  # and a row not yet whole
        file.flush()
        assert not watcher.tracing.wait(0.2) and started == []
        file.write('"loss": 2.0}\n')
    assert watcher.tracing.wait(5) and started == ["TRACE"]
    (tmp_path / "checkpoints" / "ct" / "4").mkdir(parents=True)  # a periodic save
    watcher.join(0.2)
    assert watcher.is_alive() and stopped == []
    (tmp_path / "checkpoints" / "ct" / "8").mkdir()  # the final one
    watcher.join(5)
    assert not watcher.is_alive() and stopped == [1]
    watcher.stop()  # the run's own stop afterwards does nothing
    assert stopped == [1] and watcher.traced


def test_a_trace_without_a_timed_loop_says_what_to_trace():
    with pytest.raises(ValueError, match="no loop.fit call on the host's main thread"):
        loop_overhead.loop_trace([(0, 10, "$main.py:1 <module>")])
    with pytest.raises(ValueError, match="holds no call of the step after its first"):
        loop_overhead.loop_trace([(0, 10, "$loop.py:26 fit")])


class EveryFourSteps:
    """Checkpoints that are due every four steps and keep nothing."""

    def due(self, step):
        return step % 4 == 0

    def save(self, state, step, *, force=False):
        jax.block_until_ready(state)

    def wait(self):
        pass

    def latest_path(self):
        return None


def test_a_real_trace_of_fit_is_read_with_its_calls_waits_and_a_late_compilation(tmp_path):
    """loop.fit's own frame names, and JAX's, as the benchmark reads them: if either
    is renamed, this fails instead of the benchmark timing nothing."""
    # Big enough for XLA:CPU to run it on its compute threads, the device's stand-in.
    add = jax.jit(lambda x: jnp.tanh(x @ x + 1.0))
    double = jax.jit(lambda x: jnp.tanh(x @ x * 2.0))

    def step_fn(state, batch, step):
        state = (double if step == 3 else add)(state)  # step 3 compiles a second program
        return state, {"loss": state.mean()}

    def batches():
        yield from itertools.repeat({})

    jax.profiler.start_trace(str(tmp_path / "trace"),
                             profiler_options=loop_overhead.PROFILE_OPTIONS)
    try:
        loop.fit(stage="fake", state=jnp.full((256, 256), 0.01), step_fn=step_fn,
                 local_batches=batches(), first_step=0, last_step=8, global_batch_size=1,
                 checkpoints=EveryFourSteps(),
                 writer=reporting.MetricsWriter(tmp_path), log_every_steps=2)
    finally:
        jax.profiler.stop_trace()
    profile = trace_gaps.load(tmp_path / "trace")
    found = loop_overhead.loop_trace(trace_gaps.host_main_thread(profile))
    assert found.calls == 6 and len(found.compiling) == 1  # 8, less the first and step 3's
    parts = found.parts_ns
    assert parts["step call"] > 0 and parts["device wait"] > 0 and parts["data"] > 0
    assert parts["rows"] > 0 and parts["saves"] > 0
    assert sum(parts.values()) == found.window_ns > 0
    figures, timed = loop_overhead.figures_of(profile, steps_per_call=1)
    assert timed == found
    assert figures["steps"] == 6 and figures["compilations_left_out"] == 1
    assert 0 <= figures["device_busy_share"] <= 1
    assert 0 < figures["host_in_step_share"] <= 1


def test_removing_a_stage_outputs_keeps_the_earlier_stages_and_the_code_cache(tmp_path):
    for folder in ("checkpoints/ct/7", "checkpoints/mcqvae/20", "tensorboard/ct",
                   "tensorboard/mcqvae", "code_cache"):
        (tmp_path / folder).mkdir(parents=True)
    loop_overhead.remove_stage_outputs(tmp_path, "ct")
    left = sorted(str(path.relative_to(tmp_path)) for path in tmp_path.glob("*/*"))
    assert left == ["checkpoints/mcqvae", "tensorboard/mcqvae"]
    assert (tmp_path / "code_cache").is_dir()
    loop_overhead.remove_stage_outputs(tmp_path, "ct")  # nothing to remove: no error


def fake_measures(shares: list[float], calls: list[tuple[str, bool]]):
    """A `measure` that trains nothing: it notes its workdir and whether the timed
    stage's checkpoints were there at its start, then leaves some behind."""
    figures = iter(shares)

    def measure(case, steps, steps_per_call, device_data, workdir, unroll_call, trace_dir):
        stage = loop_overhead.CASES[case][1]
        checkpoints = Path(workdir) / "checkpoints" / stage
        calls.append((workdir, checkpoints.exists()))
        checkpoints.mkdir(parents=True, exist_ok=True)
        (Path(workdir) / "code_cache").mkdir(exist_ok=True)
        share = next(figures)
        return {"loop_steps_per_s": share * 10, "device_busy_share": share,
                "host_in_step_share": 1.0, "ms_per_step": {"rest": share}}
    return measure


def test_repeats_share_one_workdir_train_the_stage_afresh_and_report_the_median(monkeypatch):
    calls = []
    monkeypatch.setattr(loop_overhead, "measure", fake_measures([0.96, 0.89, 0.91, 0.9, 0.95],
                                                                calls))
    figures = loop_overhead.measure_repeated("ct_cache", 100, repeats=5)
    assert len({workdir for workdir, _ in calls}) == 1
    assert [resumable for _, resumable in calls] == [False] * 5  # never resumed
    assert figures["device_busy_share"] == 0.91 and figures["ms_per_step"] == {"rest": 0.91}
    assert [run["device_busy_share"] for run in figures["repeats"]] == [0.96, 0.89, 0.91,
                                                                         0.9, 0.95]
    assert figures["repeats"][1] == {"loop_steps_per_s": 8.9, "device_busy_share": 0.89,
                                     "host_in_step_share": 1.0}


def test_an_even_count_reports_the_lower_middle_repeat_and_one_repeat_adds_no_list(monkeypatch):
    monkeypatch.setattr(loop_overhead, "measure", fake_measures([1.0, 0.8, 0.9, 0.95], []))
    assert loop_overhead.measure_repeated("betavae", 10, repeats=4)["device_busy_share"] == 0.9
    monkeypatch.setattr(loop_overhead, "measure", fake_measures([0.97], []))
    assert "repeats" not in loop_overhead.measure_repeated("betavae", 10)


@pytest.mark.parametrize("arguments, line", [
    (["--repeats=0"], "error: argument --repeats: must be an integer >= 1, got 0 (see --help)"),
    (["--steps=3", "--steps_per_call=2"],
     "error: --steps=3 leaves no call to time after the first (compiling) one; give at "
     "least --steps=4"),
    (["--steps=9", "--steps_per_call=4"],
     "error: --steps=9 is not a multiple of --steps_per_call=4 (the loop runs whole "
     "calls); use e.g. --steps=12"),
    (["--profile=/tmp/trace", "--repeats=3"],
     "error: --profile keeps one trace of each case, and --repeats=3 asks for several; "
     "drop one of them"),
    (["--cases=betavae,nope"],
     "error: unknown case 'nope'; known: betavae, betavae_s8, betavae_s8_matmul, "
     "factorvae, mcqvae, ct, ct_cache"),
])
def test_arguments_it_cannot_time_are_refused_with_one_error_line(monkeypatch, arguments,
                                                                   line):
    monkeypatch.setattr(sys, "argv", ["benchmarks/loop_overhead.py", *arguments])
    with pytest.raises(SystemExit) as exit_info:
        loop_overhead.main()
    assert str(exit_info.value) == line
