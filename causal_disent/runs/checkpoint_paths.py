"""Where a workdir keeps each stage's checkpoints, and which steps it holds, from the
folder names alone: for the commands that only look (no Orbax or JAX to import)."""

from __future__ import annotations

from pathlib import Path


def checkpoint_dir(workdir: str | Path, stage: str) -> Path:
    return Path(workdir).absolute() / "checkpoints" / stage


def saved_steps(workdir: str | Path, stage: str) -> list[int]:
    """The steps of `stage`'s checkpoints in `workdir`, ascending ([] when none). A
    half-written save (`<step>.orbax-checkpoint-tmp-*`) is not one."""
    directory = checkpoint_dir(workdir, stage)
    if not directory.is_dir():
        return []
    return sorted(int(path.name) for path in directory.iterdir() if path.name.isdigit())


def latest_saved_step(workdir: str | Path, stage: str) -> int | None:
    steps = saved_steps(workdir, stage)
    return steps[-1] if steps else None
