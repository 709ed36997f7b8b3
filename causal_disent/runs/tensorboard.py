"""TensorBoard event files of a run: WORKDIR/tensorboard/<stage>/, written by process 0
with tensorboardX (no TensorFlow needed). `tensorboard --logdir WORKDIR` shows each
stage as a run: training rows under `train/`, learning-curve points under `test/`,
final scores under `results/` and the stage's figures as images.

One writer per (workdir, stage) stays open for the process's life, so a run writes
one event file per stage and attempt. A resumed stage opens its writer with
`purge_step`: TensorBoard then drops what an earlier attempt logged past the
checkpoint the run resumed from, as the run logs those steps again.
"""

from __future__ import annotations

import numbers
import os
from pathlib import Path

import jax
import numpy as np
from PIL import Image

_writers: dict[tuple[Path, str], object] = {}
_opened = 0  # writers opened by this process


def board_dir(workdir: str | Path, stage: str) -> Path:
    return Path(workdir) / "tensorboard" / stage


def open_writer(workdir: str | Path, stage: str, purge_step: int | None = None) -> None:
    """(Re)opens the stage's writer; with `purge_step`, TensorBoard ignores the events
    of earlier files at steps >= purge_step. No-op off process 0."""
    if jax.process_index() != 0:
        return
    close(workdir, stage)
    from tensorboardX import SummaryWriter  # imported late: only process 0 writes

    global _opened
    _opened += 1  # event files are named by the second: two writers in one need a suffix
    _writers[_key(workdir, stage)] = SummaryWriter(
        str(board_dir(workdir, stage)), purge_step=purge_step, flush_secs=30,
        filename_suffix=f".{os.getpid()}.{_opened}")


def _writer(workdir: str | Path, stage: str):
    if jax.process_index() != 0:
        return None
    if _key(workdir, stage) not in _writers:
        open_writer(workdir, stage)
    return _writers[_key(workdir, stage)]


def add_scalars(workdir: str | Path, stage: str, step: int, values: dict,
                prefix: str) -> None:
    """Logs every finite scalar number of `values` as `<prefix>/<name>` at `step`;
    arrays, strings and non-finite values are left out (metrics.jsonl keeps them)."""
    add_rows(workdir, stage, [(step, values)], prefix)


def add_rows(workdir: str | Path, stage: str, rows: list[tuple[int, dict]],
             prefix: str) -> None:
    """`add_scalars` of each (step, values) row, flushed once."""
    writer = _writer(workdir, stage)
    if writer is None:
        return
    for step, values in rows:
        for name, value in values.items():
            scalar = _finite_scalar(value)
            if scalar is not None:
                writer.add_scalar(f"{prefix}/{name}", scalar, global_step=int(step))
    writer.flush()


def add_figures(workdir: str | Path, stage: str, step: int, paths) -> None:
    """Logs each PNG in `paths` as the image `figures/<file stem>` at `step`."""
    writer = _writer(workdir, stage)
    if writer is None:
        return
    for path in paths:
        with Image.open(path) as image:
            pixels = np.asarray(image.convert("RGB"))
        writer.add_image(f"figures/{Path(path).stem}", pixels, global_step=int(step),
                         dataformats="HWC")
    writer.flush()


def close(workdir: str | Path, stage: str) -> None:
    writer = _writers.pop(_key(workdir, stage), None)
    if writer is not None:
        writer.close()


def _key(workdir: str | Path, stage: str) -> tuple[Path, str]:
    return Path(workdir).absolute(), stage


def _finite_scalar(value) -> float | None:
    if isinstance(value, (bool, str)) or value is None:
        return None
    if isinstance(value, numbers.Number) or (np.ndim(value) == 0 and
                                             np.issubdtype(np.asarray(value).dtype, np.number)):
        scalar = float(value)
        return scalar if np.isfinite(scalar) else None
    return None
