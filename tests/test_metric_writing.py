"""benchmarks/metric_writing.py on a short emulated loop: every writer setting timed,
none faster than the device it waits for, the writers put back afterwards."""

import importlib
import json
import sys

import pytest

from causal_disent.runs import metrics_log, tensorboard
from causal_disent.train import reporting

metric_writing = importlib.import_module("benchmarks.metric_writing")


def test_a_short_emulated_loop_times_every_writer_setting(monkeypatch, capsys, tmp_path):
    record = tmp_path / "record.json"
    monkeypatch.setattr(sys, "argv", ["metric_writing.py", "--rows=20", "--calls=20",
                                      "--device_ms=1", "--calls_per_log=5", "--repeats=1",
                                      f"--record={record}"])
    metric_writing.main()
    (line,) = [line for line in capsys.readouterr().out.splitlines() if line.startswith("{")]
    figures = json.loads(line)
    assert set(figures["alone_ms"]) == {"jsonl", "tensorboard", "summary_writer"}
    assert set(figures["loop_ms_per_call"]) == set(metric_writing.SETTINGS)
    assert all(ms >= 1.0 for ms in figures["loop_ms_per_call"].values())  # slept 1 ms a call
    assert json.loads(record.read_text())["figures"] == figures
    # The real writers are back in place.
    assert reporting.metrics_log.append_training_rows is metrics_log.append_training_rows
    assert reporting.tensorboard.add_rows.__module__ == tensorboard.__name__


def test_bad_arguments_end_in_one_error_line(monkeypatch, capsys):
    monkeypatch.setattr(sys, "argv", ["metric_writing.py", "--calls=0"])
    with pytest.raises(SystemExit) as stopped:
        metric_writing.main()
    assert str(stopped.value) == (
        "error: argument --calls: must be an integer >= 1, got 0 (see --help)")
