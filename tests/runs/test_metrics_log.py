"""WORKDIR/metrics.jsonl: training and validation rows, each once after resumes."""

import json

from causal_disent.runs import metrics_log
from causal_disent.runs.results import append_curve_point, read_curve


def rows(workdir):
    return [json.loads(line) for line in metrics_log.metrics_path(workdir).read_text()
            .splitlines()]


def test_training_and_validation_rows_are_told_apart(tmp_path):
    metrics_log.append_training_rows(tmp_path, "vae", [(1, {"loss": 2.0}), (2, {"loss": 1.5})])
    metrics_log.append_validation_row(tmp_path, "vae", 2, {"test_nll": 9.0})
    assert rows(tmp_path) == [
        {"stage": "vae", "step": 1, "loss": 2.0}, {"stage": "vae", "step": 2, "loss": 1.5},
        {"stage": "vae", "step": 2, "split": "test", "test_nll": 9.0}]
    assert [r["step"] for r in metrics_log.read_rows(tmp_path, "vae", validation=False)] == [1, 2]
    assert metrics_log.read_rows(tmp_path, "vae", validation=True)[0]["test_nll"] == 9.0


def test_a_resume_drops_what_it_will_log_again(tmp_path):
    """Resuming from step 4: training rows past 4 and validation rows from 4 on go
    (the resumed run evaluates step 4 again); other stages are untouched."""
    metrics_log.append_training_rows(tmp_path, "a", [(s, {"loss": s}) for s in (1, 2, 3)])
    metrics_log.append_training_rows(tmp_path, "b", [(s, {"loss": s}) for s in range(1, 7)])
    for step in (0, 4, 6):
        metrics_log.append_validation_row(tmp_path, "b", step, {"acc": step})
    with metrics_log.metrics_path(tmp_path).open("a") as f:
        f.write('{"stage": "b", "st')  # killed mid-line
    metrics_log.discard_after(tmp_path, "b", 4)
    kept = [(r["stage"], r["step"], "split" in r) for r in rows(tmp_path)]
    assert kept == [("a", 1, False), ("a", 2, False), ("a", 3, False), ("b", 1, False),
                    ("b", 2, False), ("b", 3, False), ("b", 4, False), ("b", 0, True)]


def test_a_write_after_a_cut_line_starts_a_new_line(tmp_path):
    metrics_log.metrics_path(tmp_path).write_text('{"stage": "a", "ste')
    metrics_log.append_training_rows(tmp_path, "a", [(1, {"loss": 1.0})])
    assert metrics_log.read_rows(tmp_path) == [{"stage": "a", "step": 1, "loss": 1.0}]


def test_a_curve_point_is_also_a_validation_row(tmp_path):
    append_curve_point(tmp_path, "mcqvae", 5, {"test_psnr": 20.0})
    assert read_curve(tmp_path, "mcqvae") == [{"step": 5, "test_psnr": 20.0}]
    assert metrics_log.read_rows(tmp_path, "mcqvae", validation=True) == [
        {"stage": "mcqvae", "step": 5, "split": "test", "test_psnr": 20.0}]
