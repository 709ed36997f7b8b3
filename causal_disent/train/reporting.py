"""Console progress and the per-step metric file of a training run.

Per-step metrics stay on the device until a log step, then are fetched together and
appended to WORKDIR/metrics.jsonl (one JSON object per step), so logging does not
stall the device pipeline every step. Results and learning curves are the run
format's (runs/results.py).
"""

import json
import time
from pathlib import Path

import jax
import numpy as np
from absl import logging

from causal_disent.utils.json_values import to_python


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
