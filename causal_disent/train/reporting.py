"""Console progress and the per-step metric file of a training run.

Per-step metrics stay on the device until a log step, then are fetched together and
appended to WORKDIR/metrics.jsonl (one JSON object per step, each step once however often the run resumed), so logging does not
stall the device pipeline every step. Results and learning curves are the run
format's (runs/results.py).
"""

import json
import os
import time
from pathlib import Path

import jax
import numpy as np
from absl import logging

from causal_disent.utils import json_values
from causal_disent.utils.json_values import to_python


class MetricsWriter:
    """Appends per-step metric rows to WORKDIR/metrics.jsonl (host 0 only)."""

    def __init__(self, workdir: str | Path):
        self.path = Path(workdir) / "metrics.jsonl"
        self.enabled = jax.process_index() == 0

    def discard_after(self, stage: str, step: int) -> None:
        """Drops the rows of `stage` past `step` and any line cut short: a run killed
        after logging steps it had not checkpointed logs them again when it resumes
        from `step`, and each step must appear once. Rewrites the file atomically,
        only when there is something to drop."""
        if not self.enabled or not self.path.exists():
            return
        lines = self.path.read_text().splitlines()
        kept = [line for line in lines if _keep(line, stage, step)]
        if len(kept) == len(lines) and self.path.read_bytes().endswith(b"\n"):
            return
        tmp = self.path.with_suffix(".jsonl.tmp")
        tmp.write_text("".join(line + "\n" for line in kept))
        os.replace(tmp, self.path)

    def write(self, stage: str, rows: list[tuple[int, dict]]) -> None:
        if not self.enabled or not rows:
            return
        with self.path.open("a") as f:
            for step, metrics in rows:
                record = {"stage": stage, "step": step}
                record.update({k: to_python(v) for k, v in metrics.items()})
                f.write(json_values.dumps(record) + "\n")


def _keep(line: str, stage: str, step: int) -> bool:
    try:
        record = json.loads(line)
    except json.JSONDecodeError:  # cut short by a killed process
        return False
    return record.get("stage") != stage or record.get("step", 0) <= step


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
