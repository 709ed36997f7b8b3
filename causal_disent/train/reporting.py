"""Console progress and the run's metric files.

Per-step metrics stay on the device until a log step, then are fetched together and
appended to WORKDIR/metrics.jsonl (one JSON object per step), so logging does not
stall the device pipeline every step.
"""

import json
import logging as python_logging
import os
import time
from pathlib import Path

import jax
import numpy as np
from absl import logging


def to_python(value):
    """Arrays -> floats or lists, for JSON."""
    array = np.asarray(value)
    return array.item() if array.ndim == 0 else array.tolist()


class MetricsWriter:
    """Appends per-step metric rows to WORKDIR/metrics.jsonl (host 0 only)."""

    def __init__(self, workdir: str | Path):
        self.path = Path(workdir) / "metrics.jsonl"
        self.enabled = jax.process_index() == 0

    def write(self, stage: str, rows: list[tuple[int, dict]]) -> None:
        if not self.enabled or not rows:
            return
        with self.path.open("a") as f:
            for step, metrics in rows:
                record = {"stage": stage, "step": step}
                record.update({k: to_python(v) for k, v in metrics.items()})
                f.write(json.dumps(record) + "\n")


class Progress:
    """Prints step, metrics, steps/s, images/s and ETA; timing starts after the first
    step so compilation does not distort the rates."""

    def __init__(self, stage: str, total_steps: int, global_batch_size: int):
        self.stage = stage
        self.total_steps = total_steps
        self.global_batch_size = global_batch_size
        self._start_step = None
        self._start_time = None

    def start_timing(self, step: int) -> None:
        self._start_step, self._start_time = step, time.perf_counter()

    def steps_per_second(self, step: int) -> float:
        if self._start_time is None or step <= self._start_step:
            return float("nan")
        return (step - self._start_step) / (time.perf_counter() - self._start_time)

    def log(self, step: int, metrics: dict) -> None:
        rate = self.steps_per_second(step)
        eta = (self.total_steps - step) / rate if rate > 0 else float("nan")
        shown = " ".join(
            f"{k} {v}" if isinstance(v, str) else f"{k} {to_python(v):.4g}"
            for k, v in metrics.items()
            if isinstance(v, str) or np.ndim(v) == 0
        )
        logging.info(
            "[%s] step %d/%d (%.0f%%) %s | %.2f steps/s, %.0f images/s, ETA %s",
            self.stage, step, self.total_steps, 100 * step / self.total_steps, shown,
            rate, rate * self.global_batch_size, format_duration(eta),
        )


def format_duration(seconds: float) -> str:
    if not np.isfinite(seconds):
        return "?"
    minutes, secs = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m{secs:02d}s" if hours else f"{minutes}m{secs:02d}s"


def update_results(workdir: str | Path, stage: str, results: dict) -> None:
    """Merges {stage: results} into WORKDIR/results.json, written atomically."""
    if jax.process_index() != 0:
        return
    path = Path(workdir) / "results.json"
    merged = json.loads(path.read_text()) if path.exists() else {}
    merged[stage] = results
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(merged, indent=2) + "\n")
    os.replace(tmp, path)


def read_results(workdir: str | Path) -> dict:
    path = Path(workdir) / "results.json"
    return json.loads(path.read_text()) if path.exists() else {}


def quiet_orbax_info(record: python_logging.LogRecord) -> bool:
    """A log filter that keeps orbax's per-save INFO lines out of the console;
    warnings still show."""
    return record.levelno >= python_logging.WARNING or "orbax" not in record.pathname
