"""WORKDIR/metrics.jsonl: one JSON object per line, written by process 0.

Two kinds of rows, each told by its keys:
  training   {"stage", "step", <metric>: value, ...}: one per training step, the
             metrics of the update that produced that step's parameters;
  validation {"stage", "step", "split": "test", <score>: value, ...}: one per
             learning-curve evaluation (every `train.eval_every_steps`), the
             parameters at that step scored on a fixed set of test examples.
Each (stage, step, kind) appears once however often the run resumed: a resumed stage
first drops what an earlier attempt wrote past its checkpoint (`discard_after`), and
logs those steps again.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import jax

from causal_disent.utils import json_values
from causal_disent.utils.json_values import to_python

FILE = "metrics.jsonl"
VALIDATION_SPLIT = "test"


def metrics_path(workdir: str | Path) -> Path:
    return Path(workdir) / FILE


def append_training_rows(workdir: str | Path, stage: str,
                         rows: list[tuple[int, dict]]) -> None:
    """Appends one training row per (step, metrics)."""
    _append(workdir, [{"stage": stage, "step": int(step),
                       **{k: to_python(v) for k, v in metrics.items()}}
                      for step, metrics in rows])


def append_validation_row(workdir: str | Path, stage: str, step: int, scores: dict) -> None:
    _append(workdir, [{"stage": stage, "step": int(step), "split": VALIDATION_SPLIT,
                       **{k: to_python(v) for k, v in scores.items()}}])


def read_rows(workdir: str | Path, stage: str | None = None,
              validation: bool | None = None) -> list[dict]:
    """The rows (of `stage`, if given; only validation or only training rows if
    `validation` is True / False), skipping a line cut short by a killed process."""
    path = metrics_path(workdir)
    if not path.exists():
        return []
    rows = []
    for line in path.read_text().splitlines():
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            continue
        if stage is not None and row.get("stage") != stage:
            continue
        if validation is not None and ("split" in row) != validation:
            continue
        rows.append(row)
    return rows


def discard_after(workdir: str | Path, stage: str, step: int) -> None:
    """Prepares `stage` to resume from the checkpoint at `step`: drops its training
    rows past `step`, its validation rows at or past `step` (the resumed run
    evaluates `step` again when it is due) and any line cut short. Rewrites the file
    atomically, only when there is something to drop."""
    if jax.process_index() != 0:
        return
    path = metrics_path(workdir)
    if not path.exists():
        return
    lines = path.read_text().splitlines()
    kept = [line for line in lines if _keep(line, stage, step)]
    if len(kept) == len(lines) and path.read_bytes().endswith(b"\n"):
        return
    tmp = path.with_suffix(".jsonl.tmp")
    tmp.write_text("".join(line + "\n" for line in kept))
    os.replace(tmp, path)


def _keep(line: str, stage: str, step: int) -> bool:
    try:
        row = json.loads(line)
    except json.JSONDecodeError:  # cut short by a killed process
        return False
    if row.get("stage") != stage:
        return True
    if "split" in row:
        return row.get("step", 0) < step
    return row.get("step", 0) <= step


def _append(workdir: str | Path, records: list[dict]) -> None:
    if jax.process_index() == 0:
        json_values.append_lines(metrics_path(workdir), records)
