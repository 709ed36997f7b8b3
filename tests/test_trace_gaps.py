"""benchmarks/trace_gaps.py: a device's idle gaps in a jax.profiler trace, each put down
to what the host's main thread was doing."""

from __future__ import annotations

import importlib
import re
import sys
import time
from types import SimpleNamespace

import jax
import jax.numpy as jnp
import pytest

trace_gaps = importlib.import_module("benchmarks.trace_gaps")


def test_busy_intervals_are_merged_and_only_long_enough_gaps_count():
    busy = trace_gaps.merged([(5, 9), (0, 3), (2, 4), (12, 12), (20, 30), (9, 10)])
    assert busy == [(0, 4), (5, 10), (20, 30)]  # touching ones join, empty ones go
    assert trace_gaps.idle_spans(busy, 1) == [(4, 5), (10, 20)]
    assert trace_gaps.idle_spans(busy, 2) == [(10, 20)]


def test_the_stack_at_a_time_holds_the_calls_in_progress_outermost_first():
    events = [(0, 100, "fit"), (10, 40, "step"), (12, 20, "dispatch"), (50, 90, "fetch"),
              (60, 70, "wait"), (95, 99, "log")]
    assert trace_gaps.stacks_at(events, [5, 15, 30, 45, 65, 80, 97, 150]) == [
        ("fit",), ("fit", "step", "dispatch"), ("fit", "step"), ("fit",),
        ("fit", "fetch", "wait"), ("fit", "fetch"), ("fit", "log"), ()]


def fake_profile(planes: dict) -> SimpleNamespace:
    """A ProfileData stand-in: {plane: {line: [(start, end, name)]}}."""
    def line(name, events):
        return SimpleNamespace(name=name, events=[
            SimpleNamespace(start_ns=start, end_ns=end, name=event)
            for start, end, event in events])
    return SimpleNamespace(planes=[
        SimpleNamespace(name=plane, lines=[line(name, events) for name, events in lines.items()])
        for plane, lines in planes.items()])


def test_an_accelerators_streams_are_its_work_and_its_summary_lines_are_not():
    """A module's span on "XLA Modules" holds the host-controlled wait between its
    loop's iterations; counted, it would hide the gap."""
    profile = fake_profile({
        "/host:CPU": {
            "python": [(0, 1000, "$loop.py:1 fit"), (0, 5, "$profiler.py:1 start_trace"),
                       (400, 600, "$loop.py:9 fetched")],
            "writer": [(0, 1000, "$threading.py:1 _bootstrap"), (300, 700, "$w.py:1 write"),
                       (310, 320, "$a.py:1 a"), (330, 340, "$a.py:1 b")],
        },
        "/device:GPU:0": {
            "Stream #7(Compute)": [(100, 400, "fusion"), (600, 900, "fusion.1")],
            "XLA Modules": [(100, 900, "jit_step")],
        },
    })
    found = trace_gaps.trace_gaps(profile, min_gap_ns=10)
    assert found.device == "/device:GPU:0 (1 line)"
    assert (found.window_ns, found.busy_ns, found.idle_ns) == (800, 600, 200)
    # The main thread (it started the trace), not the writer with more Python events.
    assert found.gaps == [trace_gaps.Gap(400, 600, ("$loop.py:1 fit", "$loop.py:9 fetched"))]
    figures = trace_gaps.summary(found)
    assert figures["by_frame"] == [{"frames": ["$loop.py:1 fit", "$loop.py:9 fetched"],
                                    "idle_ms": 0.0002, "gaps": 1}]
    assert figures["busy_fraction"] == 0.75


def test_idle_time_between_short_operations_is_counted_apart_from_the_gaps():
    """A device launch-bound by its host: operations of a few units, short idle spans
    between them, and one long gap; the short spans' idle time is reported apart."""
    profile = fake_profile({
        "/host:CPU": {"python": [(0, 200, "$loop.py:1 fit"), (0, 1, "$p.py:1 start_trace")]},
        "/device:GPU:0": {"Stream #7(Compute)": [
            (0, 4, "a"), (6, 10, "b"), (12, 16, "c"), (66, 70, "d"), (73, 77, "e")]},
    })
    found = trace_gaps.trace_gaps(profile, min_gap_ns=10)
    assert (found.operations, found.operations_ns, found.short_gaps) == (5, 20, 3)
    figures = trace_gaps.summary(found)
    assert figures["gaps"] == 1 and figures["idle_in_gaps_ms"] == 50e-6
    assert figures["idle_in_short_gaps_ms"] == 7e-6 and figures["mean_operation_us"] == 0.004
    assert "5 device operations of 0.0 µs on average; 0.0 ms idle in 3 shorter gaps" in (
        trace_gaps.report(figures, 0.01)[1])


def test_a_real_trace_puts_the_idle_time_down_to_the_host_function_that_held_the_device(
        tmp_path):
    """XLA:CPU's compute threads stand for the device: it idles while the host sleeps
    in `host_pause` between calls, and the trace says so."""
    step = jax.jit(lambda x: jnp.tanh(x @ x.T).sum())
    x = jnp.ones((256, 256))
    step(x).block_until_ready()

    def host_pause():
        time.sleep(0.004)

    with jax.profiler.trace(str(tmp_path)):
        for _ in range(8):
            step(x).block_until_ready()
            host_pause()
    found = trace_gaps.trace_gaps(trace_gaps.load(tmp_path))
    figures = trace_gaps.summary(found)
    assert figures["device"].startswith("XLA:CPU's compute threads")
    assert 0 < figures["busy_fraction"] < 1
    top = figures["by_frame"][0]
    assert any("host_pause" in frame for frame in top["frames"]), figures["by_frame"]
    assert top["gaps"] >= 6 and top["idle_ms"] >= 6 * 3.5, top
    lines = trace_gaps.report(figures, 20)
    assert lines[0].startswith("device: XLA:CPU's compute threads") and "host_pause" in lines[3]


def with_an_unreadable_trace(folder):
    (folder / "x.xplane.pb").write_text("not a trace")
    return folder


@pytest.mark.parametrize("make, line", [
    (lambda folder: folder / "missing",
     r"error: .*/missing does not exist; give the folder passed to jax.profiler.trace, or "
     r"the .xplane.pb file in it"),
    (lambda folder: folder,
     r"error: no jax.profiler trace \(\*.xplane.pb\) in .*; give the folder passed to "
     r"jax.profiler.trace, or the file itself"),
    (with_an_unreadable_trace,
     r"error: cannot read .*/x.xplane.pb as a jax.profiler trace \(.*\); trace again"),
])
def test_a_path_without_a_readable_trace_is_one_error_line(tmp_path, monkeypatch, make, line):
    monkeypatch.setattr(sys, "argv", ["benchmarks/trace_gaps.py", str(make(tmp_path))])
    with pytest.raises(SystemExit) as exit_info:
        trace_gaps.main()
    assert re.fullmatch(line, str(exit_info.value)), exit_info.value
