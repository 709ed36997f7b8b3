"""Orbax checkpoints of a stage: periodic and final saves, resume from the latest.

Each stage keeps its checkpoints in WORKDIR/checkpoints/<stage>/<step>/ with two
items: `state` (the TrainState pytree) and `signature` (JSON of the config fields
that fix parameter shapes and data). Before anything compiles, the signature of a
workdir's latest checkpoint is compared with the current config, so an
incompatible workdir fails with a readable message instead of a shape error deep
inside a restore.
"""

import json
import logging as python_logging
from pathlib import Path

import orbax.checkpoint as ocp


class CheckpointError(RuntimeError):
    """A checkpoint cannot be used; the message names the path and the fix."""


def checkpoint_dir(workdir: str | Path, stage: str) -> Path:
    return Path(workdir).absolute() / "checkpoints" / stage


class StageCheckpoints:
    """Saves and restores one stage's TrainState with its config signature."""

    def __init__(
        self,
        workdir: str | Path,
        stage: str,
        signature: dict,
        save_every_steps: int,
        max_to_keep: int,
    ):
        self.directory = checkpoint_dir(workdir, stage)
        self.signature = _as_json(signature)
        self.save_every_steps = save_every_steps
        # We decide when to save (orbax would also save the first step it sees).
        self.manager = ocp.CheckpointManager(
            self.directory,
            options=ocp.CheckpointManagerOptions(max_to_keep=max_to_keep, create=True),
        )

    def latest_step(self) -> int | None:
        return self.manager.latest_step()

    def save(self, state, step: int, *, force: bool = False) -> None:
        """Saves `state` (at `step`, known on the host so that deciding costs no
        device sync) every `save_every_steps` steps, or now if `force`."""
        if not force and step % self.save_every_steps:
            return
        if step == self.manager.latest_step():
            return  # already saved (e.g. a periodic save on the final step)
        self.manager.save(
            step,
            args=ocp.args.Composite(
                state=ocp.args.StandardSave(state),
                signature=ocp.args.JsonSave(self.signature),
            ),
            force=True,
        )

    def restore_latest(self, abstract_state):
        """The latest saved state, placed like `abstract_state`, or None if none."""
        step = self.latest_step()
        if step is None:
            return None
        check_signature(self.directory, step, self.signature, self.manager)
        try:
            restored = self.manager.restore(
                step,
                args=ocp.args.Composite(state=ocp.args.StandardRestore(abstract_state)),
            )
        except Exception as error:  # orbax raises many types for unreadable data
            raise _corrupt(self.directory / str(step), error) from error
        return restored.state

    def wait(self) -> None:
        self.manager.wait_until_finished()

    def close(self) -> None:
        self.manager.wait_until_finished()
        self.manager.close()


def check_workdir_compatible(workdir: str | Path, stage: str, signature: dict) -> None:
    """Raises CheckpointError if the workdir's latest checkpoint of `stage` was made
    with another model or dataset. Reads only the small JSON item; compiles nothing."""
    directory = checkpoint_dir(workdir, stage)
    if not directory.exists():
        return
    manager = ocp.CheckpointManager(
        directory, options=ocp.CheckpointManagerOptions(
            read_only=True, create=False, save_interval_steps=0
        ),
    )
    try:
        step = manager.latest_step()
        if step is not None:
            check_signature(directory, step, _as_json(signature), manager)
    finally:
        manager.close()


def check_signature(directory: Path, step: int, signature: dict, manager) -> None:
    try:
        saved = manager.restore(
            step, args=ocp.args.Composite(signature=ocp.args.JsonRestore())
        ).signature
    except Exception as error:
        raise _corrupt(directory / str(step), error) from error
    if saved == signature:
        return
    differences = [
        f"{key}: checkpoint {saved.get(key)!r} vs config {signature.get(key)!r}"
        for key in sorted(set(saved) | set(signature))
        if saved.get(key) != signature.get(key)
    ]
    raise CheckpointError(
        f"the workdir holds a checkpoint of an incompatible config at "
        f"{directory / str(step)} ({'; '.join(differences)}). Use a new --workdir, "
        f"or restore the config that wrote it."
    )


def _corrupt(path: Path, error: Exception) -> CheckpointError:
    return CheckpointError(
        f"cannot read the checkpoint at {path} ({type(error).__name__}: {error}). "
        f"It is corrupt or incomplete. Nothing was changed: move that step folder "
        f"aside to resume from the previous checkpoint, or use a new --workdir."
    )


def _as_json(signature: dict) -> dict:
    # Round-trip so tuples become lists, exactly as the saved JSON reads back.
    return json.loads(json.dumps(signature))


def quiet_orbax_info(record: python_logging.LogRecord) -> bool:
    """A log filter that keeps orbax's per-save INFO lines out of the console;
    warnings still show."""
    return record.levelno >= python_logging.WARNING or "orbax" not in record.pathname
