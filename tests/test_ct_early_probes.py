"""benchmarks/ct_early_probes.py on workdirs made here: each mode's window means, the
regime, the settings read from config.json, and a run short of the window refused."""

import importlib
import json
import sys

import pytest

from causal_disent.runs import metrics_log
from causal_disent.runs.config_file import write_config
from configs import ctvae_shapes3d

ct_early_probes = importlib.import_module("benchmarks.ct_early_probes")


def stage_two_workdir(path, standard_accuracy: float, last_step: int = 10, **ct_model):
    """A workdir whose rows cycle standard, action, causal over steps 1..last_step."""
    config = ctvae_shapes3d.get_config("small")
    config.ct.model.update(ct_model)
    path.mkdir()
    write_config(path, config)
    rows = []
    for step in range(1, last_step + 1):
        if step % 3 == 1:
            rows.append((step, {"ce_x": step * 0.1, "ce_identity": 5.0, "identity_graph": 0.2,
                                "code_accuracy": standard_accuracy}))
        elif step % 3 == 2:
            rows.append((step, {"ce_y": 1.0, "code_accuracy": 0.5, "graph_kl": 0.1}))
        else:
            rows.append((step, {"action_ce": 2.0, "action_accuracy": 0.25}))
    metrics_log.append_training_rows(path, "ct", rows)
    metrics_log.append_validation_row(path, "ct", 5, {"action_accuracy": 0.9})
    return path


def run_probes(monkeypatch, capsys, *argv):
    monkeypatch.setattr(sys, "argv", ["ct_early_probes.py", *argv])
    ct_early_probes.main()
    out = capsys.readouterr().out.splitlines()
    (line,) = [line for line in out if line.startswith("{")]
    return out, json.loads(line)


def test_window_means_per_mode_and_the_regime(tmp_path, monkeypatch, capsys):
    copies = stage_two_workdir(tmp_path / "a", standard_accuracy=1.0)
    loses = stage_two_workdir(tmp_path / "b", standard_accuracy=0.6, gnn_root_weight=False)
    record = tmp_path / "record.json"
    out, probes = run_probes(monkeypatch, capsys, f"on={copies}", f"off={loses}",
                             "--first_step=4", "--last_step=10", f"--record={record}")
    on, off = probes["on"], probes["off"]
    # Standard steps in [4, 10]: 4, 7, 10 (ce_x 0.4, 0.7, 1.0).
    assert on["standard_steps"] == 3 and on["ce_x"] == pytest.approx(0.7)
    assert on["ce_identity"] == 5.0 and on["action_code_accuracy"] == 0.5
    assert on["causal_action_accuracy"] == 0.25 and on["causal_steps"] == 2  # steps 6, 9
    assert (on["regime"], off["regime"]) == ("copies X", "loses X")
    assert (on["settings"]["root_weight"], off["settings"]["root_weight"]) == (True, False)
    assert on["settings"]["graph_hidden"] == 64 and on["uniform_ce"] == pytest.approx(4.1589, 1e-4)
    assert out[2].startswith("| on | 0 | 4–10 | 0.700 | 5.000 | 1.000 |")
    assert json.loads(record.read_text())["figures"]["probes"] == probes


def test_a_run_short_of_the_window_is_one_error_line(tmp_path, monkeypatch):
    short = stage_two_workdir(tmp_path / "short", standard_accuracy=1.0, last_step=6)
    monkeypatch.setattr(sys, "argv", ["ct_early_probes.py", f"x={short}", "--first_step=1", "--last_step=10"])
    with pytest.raises(SystemExit) as stopped:
        ct_early_probes.main()
    assert "rows only up to step 6, short of --last_step=10" in str(stopped.value)


def test_copies_x_from_the_first_window_of_a_hundred_steps_that_does():
    def standard(step, accuracy):
        return {"step": step, "ce_x": 1.0, "code_accuracy": accuracy}

    rows = ([standard(step, 0.5) for step in range(1, 101)]
            + [standard(step, 0.995) for step in range(101, 201)]
            + [{"step": 150, "ce_y": 1.0, "code_accuracy": 0.0}])  # not standard mode
    assert ct_early_probes.copies_x_from_step(rows, 300) == 200
    assert ct_early_probes.copies_x_from_step(rows, 150) is None  # no whole window by then
    assert ct_early_probes.copies_x_from_step(rows[:100], 300) is None
