"""TensorBoard event files of a run: WORKDIR/tensorboard/<stage>/, written by process 0
with tensorboardX's event records (no TensorFlow needed). `tensorboard --logdir WORKDIR`
shows each stage as a run: training rows under `train/`, learning-curve points under
`test/`, final scores under `results/` and the stage's figures as images.

One event file per (workdir, stage) stays open for the process's life, so a run writes
one event file per stage and attempt. A resumed stage opens its file with `purge_step`:
TensorBoard then drops what an earlier attempt logged past the checkpoint the run
resumed from, as the run logs those steps again.

Events are written by the calling thread (the loop's metrics-writer thread for
training rows), one event per row holding all of its scalars. tensorboardX's
SummaryWriter instead makes one event per scalar and hands each to a logger thread
through a multiprocessing queue, an order of magnitude more lock-waiting and pickling
(benchmarks/metric_writing.py, docs/measured_choices.md): Python time during which
the loop's own thread waits for the interpreter lock between the steps it dispatches. The events' protos are
tensorboardX's; the file is ours (utils/record_file.py), whose checksums cost under
a hundredth of tensorboardX's writer's.
"""

from __future__ import annotations

import io
import math
import numbers
import os
import socket
import threading
import time
from pathlib import Path

import jax
import numpy as np
from PIL import Image

from causal_disent.utils import file_errors
from causal_disent.utils.record_file import RecordFile

_files: dict[tuple[Path, str], _EventFile] = {}
_files_lock = threading.Lock()  # rows are written on the loop's writer thread
_opened = 0  # event files opened by this process


class _EventFile:
    """One open event file: events written at once, flushed when asked."""

    def __init__(self, directory: Path, purge_step: int | None):
        # Imported late: only process 0 writes.
        from tensorboardX.proto import event_pb2, summary_pb2

        global _opened
        _opened += 1  # event files are named by the second: two in one need a suffix
        self.event_pb2, self.summary_pb2 = event_pb2, summary_pb2
        self._directory = directory
        # TensorBoard reads files whose names hold "tfevents"; the rest is tensorboardX's
        # naming (the second, the host), then this process and file.
        name = (f"events.out.tfevents.{int(time.time()):010d}.{socket.gethostname()}"
                f".{os.getpid()}.{_opened}")
        with file_errors.naming(directory):
            directory.mkdir(parents=True, exist_ok=True)
            self._records = RecordFile(directory / name)
        self._write_event(event_pb2.Event(wall_time=time.time(), file_version="brain.Event:2"))
        if purge_step is not None:
            # TensorBoard's reader drops earlier events at steps >= a session start's.
            self._write_event(event_pb2.Event(
                wall_time=time.time(), step=purge_step, file_version="brain.Event:2"))
            self._write_event(event_pb2.Event(
                wall_time=time.time(), step=purge_step,
                session_log=event_pb2.SessionLog(status=event_pb2.SessionLog.START)))

    def write(self, step: int, values: list) -> None:
        """One event at `step` holding the summary `values` (Summary.Value protos)."""
        if values:
            self._write_event(self.event_pb2.Event(
                wall_time=time.time(), step=int(step),
                summary=self.summary_pb2.Summary(value=values)))

    def _write_event(self, event) -> None:
        with file_errors.naming(self._directory):
            self._records.write(event.SerializeToString())

    def flush(self) -> None:
        with file_errors.naming(self._directory):
            self._records.flush()

    def close(self) -> None:
        self._records.close()


def board_dir(workdir: str | Path, stage: str) -> Path:
    return Path(workdir) / "tensorboard" / stage


def open_writer(workdir: str | Path, stage: str, purge_step: int | None = None) -> None:
    """(Re)opens the stage's event file; with `purge_step`, TensorBoard ignores the
    events of earlier files at steps >= purge_step. No-op off process 0."""
    if jax.process_index() != 0:
        return
    with _files_lock:
        _close(workdir, stage)
        _files[_key(workdir, stage)] = _EventFile(board_dir(workdir, stage), purge_step)


def _file(workdir: str | Path, stage: str) -> _EventFile | None:
    if jax.process_index() != 0:
        return None
    with _files_lock:
        if _key(workdir, stage) not in _files:
            _files[_key(workdir, stage)] = _EventFile(board_dir(workdir, stage), None)
        return _files[_key(workdir, stage)]


def add_scalars(workdir: str | Path, stage: str, step: int, values: dict,
                prefix: str) -> None:
    """Logs every finite scalar number of `values` as `<prefix>/<name>` at `step`;
    arrays, strings and non-finite values are left out (metrics.jsonl keeps them)."""
    add_rows(workdir, stage, [(step, values)], prefix)


def add_rows(workdir: str | Path, stage: str, rows: list[tuple[int, dict]],
             prefix: str) -> None:
    """`add_scalars` of each (step, values) row, flushed once."""
    events = _file(workdir, stage)
    if events is None:
        return
    value = events.summary_pb2.Summary.Value
    for step, values in rows:
        scalars = ((name, _finite_scalar(number)) for name, number in values.items())
        events.write(step, [value(tag=f"{prefix}/{name}", simple_value=scalar)
                            for name, scalar in scalars if scalar is not None])
    events.flush()


def add_figures(workdir: str | Path, stage: str, step: int, paths) -> None:
    """Logs each PNG in `paths` as the image `figures/<file stem>` at `step`."""
    events = _file(workdir, stage)
    if events is None:
        return
    summary = events.summary_pb2.Summary
    for path in paths:
        width, height, channels, png = _png(path)
        events.write(step, [summary.Value(
            tag=f"figures/{Path(path).stem}",
            image=summary.Image(width=width, height=height, colorspace=channels,
                                encoded_image_string=png))])
    events.flush()


def close(workdir: str | Path, stage: str) -> None:
    with _files_lock:
        _close(workdir, stage)


def close_all() -> None:
    """Closes every open event file: the stage runner closes a stage's at its end,
    code that drives `loop.fit` or writes curve points itself (the tests) calls this."""
    with _files_lock:
        for workdir, stage in list(_files):
            _close(workdir, stage)


def _close(workdir: str | Path, stage: str) -> None:
    events = _files.pop(_key(workdir, stage), None)
    if events is not None:
        events.close()


# PIL image modes TensorBoard shows as they are, and their channels.
_CHANNELS = {"L": 1, "LA": 2, "RGB": 3, "RGBA": 4}


def _png(path) -> tuple[int, int, int, bytes]:
    """(width, height, channels, PNG bytes) of the image file `path`: its own bytes
    when it is a PNG of a mode TensorBoard shows, else re-encoded as RGB."""
    with Image.open(path) as image:
        width, height = image.size
        if image.format == "PNG" and image.mode in _CHANNELS:
            return width, height, _CHANNELS[image.mode], Path(path).read_bytes()
        encoded = io.BytesIO()
        image.convert("RGB").save(encoded, format="PNG")
        return width, height, 3, encoded.getvalue()


def _key(workdir: str | Path, stage: str) -> tuple[Path, str]:
    return Path(workdir).absolute(), stage


def _finite_scalar(value) -> float | None:
    if type(value) in (float, int):  # most rows' values (train/loop.py converts them)
        return float(value) if math.isfinite(value) else None
    if isinstance(value, (bool, str)) or value is None:
        return None
    if isinstance(value, numbers.Number) or (np.ndim(value) == 0 and
                                             np.issubdtype(np.asarray(value).dtype, np.number)):
        scalar = float(value)
        return scalar if np.isfinite(scalar) else None
    return None
