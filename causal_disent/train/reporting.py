"""Console progress and the per-step records of a training run.

Per-step metrics stay on the device until a log step, then are fetched together and
appended to WORKDIR/metrics.jsonl (runs/metrics_log.py: one row per step, each step
once however often the run resumed) and to the stage's TensorBoard events
(runs/tensorboard.py), so logging does not stall the device pipeline every step.
Results and learning curves are the run format's (runs/results.py).
"""

import queue
import threading
import time
from pathlib import Path

import numpy as np

from causal_disent.runs import metrics_log, tensorboard
from causal_disent.utils import console
from causal_disent.utils.console import format_duration
from causal_disent.utils.json_values import to_python


# Scalars of a training row shown on the console's progress line.
_SHOWN_METRICS = 5


class MetricsWriter:
    """Writes a stage's training rows to WORKDIR/metrics.jsonl and TensorBoard
    (process 0 only).

    The writing happens in a thread of its own: on an accelerator, encoding and
    writing rows is host time during which the main thread would dispatch nothing. `flush()` waits
    for every row given so far and re-raises a failure of the writing; the loop
    flushes before each checkpoint, curve point and stop, so every row of the
    steps a checkpoint holds is on disk before that checkpoint is."""

    def __init__(self, workdir: str | Path):
        self.workdir = Path(workdir)
        self.path = metrics_log.metrics_path(workdir)
        self._queue: queue.Queue = queue.Queue()
        self._thread: threading.Thread | None = None
        self._failure: BaseException | None = None

    def discard_after(self, stage: str, step: int) -> None:
        """Prepares the records of `stage` for a run from the checkpoint at `step`:
        drops what an earlier attempt wrote past it, and has TensorBoard ignore it."""
        self.flush()
        metrics_log.discard_after(self.workdir, stage, step)
        tensorboard.open_writer(self.workdir, stage, purge_step=step + 1 if step else None)

    def write(self, stage: str, rows: list[tuple[int, dict]]) -> None:
        """Queues `rows` for writing; a failure of earlier writing is raised here."""
        self._raise_failure()
        if not rows:
            return
        if self._thread is None:
            self._thread = threading.Thread(target=self._work, daemon=True,
                                            name="metrics-writer")
            self._thread.start()
        self._queue.put((stage, rows))

    def flush(self) -> None:
        """Returns once every queued row is written; raises what the writing raised."""
        if self._thread is not None:
            self._queue.join()
        self._raise_failure()

    def close(self) -> None:
        """Writes what is queued and ends the writing thread (a later `write` starts
        another)."""
        if self._thread is not None:
            self._queue.put(None)
            self._thread.join()
            self._thread = None
        self._raise_failure()

    def _raise_failure(self) -> None:
        if self._failure is not None:
            failure, self._failure = self._failure, None
            raise failure

    def _work(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:  # close()
                self._queue.task_done()
                return
            stage, rows = item
            try:
                if self._failure is None:  # after a failure, nothing more is written
                    metrics_log.append_training_rows(self.workdir, stage, rows)
                    tensorboard.add_rows(self.workdir, stage, rows, prefix="train")
            except BaseException as failure:  # re-raised in the loop's thread
                self._failure = failure
            finally:
                self._queue.task_done()


class Progress:
    """Prints step, metrics, steps/s, examples/s (`batch_unit`: what a batch holds, e.g.
    images or transition pairs) and ETA; timing starts after the first step so
    compilation does not distort the rates."""

    def __init__(self, stage: str, total_steps: int, global_batch_size: int,
                 batch_unit: str = "images"):
        self.stage = stage
        self.total_steps = total_steps
        self.global_batch_size = global_batch_size
        self.batch_unit = batch_unit
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
        scalars = [k for k, v in metrics.items() if isinstance(v, str) or np.ndim(v) == 0]
        # The loss first; the line stays short (every metric is in metrics.jsonl).
        names = sorted(scalars, key=lambda k: k != "loss")[:_SHOWN_METRICS]
        shown = " ".join(
            f"{k} {metrics[k]}" if isinstance(metrics[k], str)
            else f"{k} {to_python(metrics[k]):.4g}" for k in names
        ) + (" ..." if len(scalars) > len(names) else "")
        speed = (f"{rate:.2f} steps/s, {rate * self.global_batch_size:.0f} {self.batch_unit}/s"
                 if np.isfinite(rate) else "timing after the first step")
        console.progress(f"[{self.stage}]", step, self.total_steps,
                         f"| {shown} | {speed}, ETA {format_duration(eta)}")
