"""benchmarks/loop_overhead.py's repeats (the timed stage trained afresh in one
workdir, the stages before it kept, the median repeat reported) and its timing of the
loop's step function alone. (Its runs are whole stages, too slow for the suite; its
records in results/ come from it.)"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import pytest

loop_overhead = importlib.import_module("benchmarks.loop_overhead")


def test_removing_a_stage_outputs_keeps_the_earlier_stages_and_the_code_cache(tmp_path):
    for folder in ("checkpoints/ct/7", "checkpoints/mcqvae/20", "tensorboard/ct",
                   "tensorboard/mcqvae", "code_cache"):
        (tmp_path / folder).mkdir(parents=True)
    loop_overhead.remove_stage_outputs(tmp_path, "ct")
    left = sorted(str(path.relative_to(tmp_path)) for path in tmp_path.glob("*/*"))
    assert left == ["checkpoints/mcqvae", "tensorboard/mcqvae"]
    assert (tmp_path / "code_cache").is_dir()
    loop_overhead.remove_stage_outputs(tmp_path, "ct")  # nothing to remove: no error


def fake_measures(ratios: list[float], calls: list[tuple[str, bool]]):
    """A `measure` that trains nothing: it notes its workdir and whether the timed
    stage's checkpoints were there at its start, then leaves some behind."""
    figures = iter(ratios)

    def measure(case, steps, steps_per_call, device_data, workdir, unroll_call, profile_dir):
        stage = loop_overhead.CASES[case][1]
        checkpoints = Path(workdir) / "checkpoints" / stage
        calls.append((workdir, checkpoints.exists()))
        checkpoints.mkdir(parents=True, exist_ok=True)
        (Path(workdir) / "code_cache").mkdir(exist_ok=True)
        ratio = next(figures)
        return {"loop_steps_per_s": ratio * 10, "bare_steps_per_s": 10.0, "ratio": ratio,
                "ms_per_step": {"rest": ratio}, "call_steps_per_s": 11.0}
    return measure


def test_repeats_share_one_workdir_train_the_stage_afresh_and_report_the_median(monkeypatch):
    calls = []
    monkeypatch.setattr(loop_overhead, "measure", fake_measures([1.06, 0.89, 1.01, 0.9, 1.05],
                                                                calls))
    figures = loop_overhead.measure_repeated("ct_cache", 100, repeats=5)
    assert len({workdir for workdir, _ in calls}) == 1
    assert [resumable for _, resumable in calls] == [False] * 5  # never resumed
    assert figures["ratio"] == 1.01 and figures["ms_per_step"] == {"rest": 1.01}
    assert [run["ratio"] for run in figures["repeats"]] == [1.06, 0.89, 1.01, 0.9, 1.05]
    assert figures["repeats"][1] == {"loop_steps_per_s": 8.9, "bare_steps_per_s": 10.0,
                                     "ratio": 0.89, "call_steps_per_s": 11.0}


def test_an_even_count_reports_the_lower_middle_repeat_and_one_repeat_adds_no_list(monkeypatch):
    monkeypatch.setattr(loop_overhead, "measure", fake_measures([1.0, 0.8, 0.9, 1.1], []))
    assert loop_overhead.measure_repeated("betavae", 10, repeats=4)["ratio"] == 0.9
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
     "error: --profile traces one run of each case, and --repeats=3 asks for several; drop "
     "one of them"),
])
def test_arguments_it_cannot_time_are_refused_with_one_error_line(monkeypatch, arguments,
                                                                   line):
    monkeypatch.setattr(sys, "argv", ["benchmarks/loop_overhead.py", *arguments])
    with pytest.raises(SystemExit) as exit_info:
        loop_overhead.main()
    assert str(exit_info.value) == line


def test_the_step_function_alone_runs_the_loops_calls_in_order_on_its_first_batch():
    """call_rate: one untimed warm call, then one call of k steps per k of `steps`,
    each from the step the loop's call would start at, the state threaded through."""
    calls = []

    def step_fn(state, batch, step):
        calls.append((state, batch, step))
        return state + 1, {}

    recorder = loop_overhead.Recorder("vae")
    recorder.step_fn, recorder.steps_per_call = step_fn, 10
    recorder.first_batch, recorder.first_step, recorder.state = "batch", 20, 0
    assert loop_overhead.call_rate(recorder, 30) > 0
    assert calls == [(0, "batch", 20), (1, "batch", 20), (2, "batch", 30), (3, "batch", 40)]
    assert recorder.state == 4
