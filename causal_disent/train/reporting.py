"""Console progress and the run's metric files.

Per-step metrics stay on the device until a log step, then are fetched together and
appended to WORKDIR/metrics.jsonl (one JSON object per step), so logging does not
stall the device pipeline every step. Periodic evaluations go to a learning curve
per stage, WORKDIR/curves/<stage>.jsonl (`append_curve_point`, `read_curve`).
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


def curve_path(workdir: str | Path, stage: str) -> Path:
    return Path(workdir) / "curves" / f"{stage}.jsonl"


def append_curve_point(workdir: str | Path, stage: str, step: int, metrics: dict) -> None:
    """Appends {"step": step, **metrics} (scalars or arrays) as one JSON line to
    WORKDIR/curves/<stage>.jsonl; process 0 only."""
    if jax.process_index() != 0:
        return
    path = curve_path(workdir, stage)
    path.parent.mkdir(parents=True, exist_ok=True)
    record = {"step": int(step), **{k: to_python(v) for k, v in metrics.items()}}
    # A process killed mid-write leaves a partial line; start a new one after it.
    prefix = "\n" if _ends_mid_line(path) else ""
    with path.open("a") as f:
        f.write(prefix + json.dumps(record) + "\n")


def _ends_mid_line(path: Path) -> bool:
    if not path.exists() or path.stat().st_size == 0:
        return False
    with path.open("rb") as f:
        f.seek(-1, os.SEEK_END)
        return f.read(1) != b"\n"


def read_curve(workdir: str | Path, stage: str) -> list[dict]:
    """The stage's curve points ({"step": s, metric: value, ...}) sorted by step,
    one per step: the last one written wins, because a run stopped after evaluating
    a step but before checkpointing it evaluates that step again when resumed. An
    empty list when nothing was recorded."""
    path = curve_path(workdir, stage)
    if not path.exists():
        return []
    by_step = {}
    for line in path.read_text().splitlines():
        try:
            point = json.loads(line)
        except json.JSONDecodeError:  # blank, or cut short by a killed process
            continue
        by_step[point["step"]] = point
    return [by_step[step] for step in sorted(by_step)]


def quiet_orbax_info(record: python_logging.LogRecord) -> bool:
    """A log filter that keeps orbax's per-save INFO lines out of the console;
    warnings still show."""
    return record.levelno >= python_logging.WARNING or "orbax" not in record.pathname
