"""A run's results: WORKDIR/results.json ({stage: results}) and the learning curve of
each stage, WORKDIR/curves/<stage>.jsonl (one JSON object per evaluated step)."""

import json
import os
from pathlib import Path

import jax

from causal_disent.runs import metrics_log, tensorboard
from causal_disent.utils import json_values
from causal_disent.utils.json_values import to_python


class ResultsError(ValueError):
    """results.json cannot be read; the message names the file and the fix."""


def update_results(workdir: str | Path, stage: str, results: dict) -> None:
    """Merges {stage: results} into WORKDIR/results.json, written atomically."""
    if jax.process_index() != 0:
        return
    path = Path(workdir) / "results.json"
    merged = read_results(workdir)
    merged[stage] = results
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json_values.dumps(merged, indent=2) + "\n")
    os.replace(tmp, path)


def read_results(workdir: str | Path) -> dict:
    """{stage: results} of the stages that finished ({} before the first); written
    atomically, so ResultsError means the file was damaged from outside."""
    path = Path(workdir) / "results.json"
    if not path.exists():
        return {}
    try:
        results = json_values.read_json(path)
    except ValueError as error:
        raise ResultsError(
            f"{error}: move it aside and rerun the same command; the stages it recorded "
            f"are then evaluated again from their last checkpoints") from error
    if not isinstance(results, dict):
        raise ResultsError(f"{path} holds {type(results).__name__}, not the stages' results: "
                           f"move it aside and rerun the same command")
    return results


def curve_path(workdir: str | Path, stage: str) -> Path:
    return Path(workdir) / "curves" / f"{stage}.jsonl"


def append_curve_point(workdir: str | Path, stage: str, step: int, metrics: dict) -> None:
    """Records one learning-curve point (scalars or arrays) of `stage` at `step`
    (process 0 only): a line {"step": step, **metrics} of WORKDIR/curves/<stage>.jsonl,
    a validation row of WORKDIR/metrics.jsonl and the scalars `test/<name>` of the
    stage's TensorBoard events."""
    if jax.process_index() != 0:
        return
    json_values.append_lines(curve_path(workdir, stage), [
        {"step": int(step), **{k: to_python(v) for k, v in metrics.items()}}])
    metrics_log.append_validation_row(workdir, stage, step, metrics)
    tensorboard.add_scalars(workdir, stage, step, {
        name.removeprefix("test_"): value for name, value in metrics.items()}, prefix="test")


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
