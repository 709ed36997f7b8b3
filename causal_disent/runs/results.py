"""A run's results: WORKDIR/results.json ({stage: results}) and the learning curve of
each stage, WORKDIR/curves/<stage>.jsonl (one JSON object per evaluated step)."""

import json
import os
from pathlib import Path

import jax

from causal_disent.utils import json_values
from causal_disent.utils.json_values import to_python


def update_results(workdir: str | Path, stage: str, results: dict) -> None:
    """Merges {stage: results} into WORKDIR/results.json, written atomically."""
    if jax.process_index() != 0:
        return
    path = Path(workdir) / "results.json"
    merged = json.loads(path.read_text()) if path.exists() else {}
    merged[stage] = results
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json_values.dumps(merged, indent=2) + "\n")
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
        f.write(prefix + json_values.dumps(record) + "\n")


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
