"""Orbax checkpoints of a stage: periodic and final saves, resume from the latest.

Each stage keeps its checkpoints in WORKDIR/checkpoints/<stage>/<step>/ with two
items: `state` (the TrainState pytree) and `signature` (JSON of the config fields
that fix parameter shapes and data). Before anything compiles, the signature of a
workdir's latest checkpoint is compared with the current config, so an
incompatible workdir fails with a readable message instead of a shape error deep
inside a restore.

An unreadable checkpoint (a file truncated or deleted by a crash or a full disk) is
never deleted: resuming falls back to the newest readable one and moves the newer
unreadable ones to WORKDIR/checkpoints/<stage>.unreadable/<step>/, with a warning
naming both, so that training can save those steps again. Reading a run without
training it (evaluation, figures, interventions, a later stage reading an earlier
one's parameters: `read_only`) changes nothing and uses no other step than the
latest: an unreadable latest step is an error naming the training command that sets
it aside (scoring an older step in its place would label its scores with the wrong
step). A half-written save (orbax's `<step>.orbax-checkpoint-tmp-*` folder) is not a
checkpoint to orbax; it is named in a warning and left where it is. A save that
cannot be written (a full disk) raises CheckpointError naming its step: at the save,
or, for the part orbax writes in the background, at the next save or wait; the
earlier steps are intact.

A save runs orbax's blocking part (the copy to host memory and its bookkeeping) on
the loop's thread; orbax writes the files in the background. Running that part on a
thread of its own, from a copy of the state (the next step donates its buffers), was
tried: it shortened the loop's wait on a CPU but slowed the loop on a GPU, likeliest
because the save thread holds the interpreter lock that the loop needs to dispatch
the next steps (docs/measured_choices.md).
"""

import contextlib
import json
import os
import re
import shutil
import time
from collections.abc import Callable
from pathlib import Path

import jax
import numpy as np
import orbax.checkpoint as ocp
from jax.sharding import Mesh
import tensorstore as ts
from absl import logging

from causal_disent.runs import orbax_noise, seeds
from causal_disent.runs.checkpoint_paths import checkpoint_dir  # the stages import it from here
from causal_disent.utils import json_values
from causal_disent.utils.sharding import replicated


class CheckpointError(RuntimeError):
    """A checkpoint cannot be used; the message names the path and the fix."""


class UnreadableCheckpoint(CheckpointError):
    """A step's files cannot be read (truncated, deleted, half-written)."""


def unreadable_dir(directory: Path) -> Path:
    """Where the unreadable steps of the stage checkpointed in `directory` are kept."""
    return directory.with_name(directory.name + ".unreadable")


class StageCheckpoints:
    """Saves and restores one stage's TrainState with its config signature."""

    def __init__(
        self,
        workdir: str | Path,
        stage: str,
        signature: dict,
        save_every_steps: int,
        max_to_keep: int,
        min_seconds_between_saves: float = 0.0,
        clock: Callable[[], float] = time.monotonic,
        read_only: bool = False,
    ):
        self.workdir = Path(workdir)
        self.directory = checkpoint_dir(workdir, stage)
        self.read_only = read_only
        self.signature = _as_json(signature)
        self.save_every_steps = save_every_steps
        self.min_seconds_between_saves = min_seconds_between_saves
        self._clock = clock
        self._last_save = clock()  # the stage's start: nothing before it to lose
        self._last_saved_step: int | None = None
        self._closed = False
        # We decide when to save (orbax would also save the first step it sees).
        with orbax_noise.read_only_warning_dropped():
            self.manager = ocp.CheckpointManager(
                self.directory,
                options=ocp.CheckpointManagerOptions(
                    # What orbax would set itself when read-only, with a warning each.
                    max_to_keep=None if read_only else max_to_keep,
                    save_interval_steps=0 if read_only else 1,
                    create=not read_only, read_only=read_only),
            )

    def latest_step(self) -> int | None:
        return self.manager.latest_step()

    def latest_path(self) -> str | None:
        step = self.manager.latest_step()
        return None if step is None else str(self.directory / str(step))

    def due(self, step: int) -> bool:
        """Whether `step` is a periodic save step: a multiple of `save_every_steps` at
        least `min_seconds_between_saves` after the last save (or the stage's start),
        by process 0's clock. On a fast device the steps of a save interval sized for
        a CPU take a fraction of a second, and each save stalls the loop; the
        seconds bound what a
        crash can lose instead. With several processes and a time bound, this is a
        collective that every process must call at the same steps."""
        if step % self.save_every_steps != 0:
            return False
        if self.min_seconds_between_saves <= 0:
            return True
        waited = self._clock() - self._last_save >= self.min_seconds_between_saves
        if jax.process_count() == 1:
            return waited
        from jax.experimental import multihost_utils  # only multi-host runs need it

        return bool(multihost_utils.broadcast_one_to_all(np.array(waited)))

    def save(self, state, step: int, *, force: bool = False) -> None:
        """Saves `state` (at `step`, known on the host so that deciding costs no
        device sync) every `save_every_steps` steps, or now if `force`."""
        if not (force or self.due(step)):
            return
        if step == self.manager.latest_step():
            return  # already saved (e.g. a periodic save on the final step)
        with self._write_failures_named(step):  # this save, or the one before it
            self.manager.save(
                step,
                args=ocp.args.Composite(
                    state=ocp.args.StandardSave(state),
                    signature=ocp.args.JsonSave(self.signature),
                ),
                force=True,
            )
        self._last_save = self._clock()
        self._last_saved_step = step

    def restore_latest(self, abstract_state):
        """The newest readable saved state, placed like `abstract_state`, or None if
        there is none. Newer unreadable steps are moved aside (module docstring);
        if no step is readable, CheckpointError and nothing is moved. `read_only`:
        the latest step's state or CheckpointError, nothing moved."""
        _warn_half_written(self.directory)
        unreadable = []
        for step in sorted(self.manager.all_steps(), reverse=True):
            try:
                check_signature(self.directory, step, self.signature, self.manager)
                check_arrays_readable(self.directory / str(step))
                restored = self.manager.restore(
                    step,
                    args=ocp.args.Composite(state=ocp.args.StandardRestore(abstract_state)),
                )
            except UnreadableCheckpoint as error:
                unreadable.append((step, error))
            except CheckpointError:
                raise
            except Exception as error:  # orbax raises many types for unreadable data
                unreadable.append((step, _corrupt(self.directory / str(step), error)))
            else:
                if unreadable:
                    self._set_aside(unreadable, step)
                return restored.state
            if self.read_only:  # an older step is not the run's: its scores would mislabel it
                raise self._latest_unreadable(unreadable[0][1])
        if unreadable:
            raise CheckpointError(
                f"no checkpoint in {self.directory} can be read (steps "
                f"{', '.join(str(step) for step, _ in unreadable)}; the newest: "
                f"{unreadable[0][1]}). Nothing was changed: move {self.directory} aside "
                f"to start the stage over, or use a new --workdir."
            )
        return None

    def _latest_unreadable(self, error: UnreadableCheckpoint) -> CheckpointError:
        stacked = seeds.stacked_run_of(self.workdir)
        if stacked is not None:  # one model of a many-seed run, exported from its state
            return CheckpointError(
                f"{error}. Nothing was changed; {self.workdir} is one model of the "
                f"many-seed run in {stacked}, whose checkpoints hold it: `python -m "
                f"causal_disent.main --workdir={stacked} --mode=eval` writes it again")
        where = " (its command.txt has it)" if (self.workdir / "command.txt").exists() else ""
        return CheckpointError(
            f"{error}. Nothing was changed; rerun the run's training command with "
            f"--workdir={self.workdir}{where} to move that step to "
            f"{unreadable_dir(self.directory)} and train again from an earlier checkpoint")

    def _set_aside(self, unreadable: list, fallback_step: int) -> None:
        """Moves the unreadable steps out of orbax's folder (process 0; the others
        wait for it), so that their step numbers can be saved again."""
        if jax.process_index() == 0:
            for step, error in unreadable:
                target = _free_path(unreadable_dir(self.directory) / str(step))
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.move(self.directory / str(step), target)
                logging.warning("%s; moved it to %s and resumed from step %d",
                                error, target, fallback_step)
        if jax.process_count() > 1:
            from jax.experimental import multihost_utils

            multihost_utils.sync_global_devices(f"set aside {self.directory}")
        self.manager.reload()

    def wait(self) -> None:
        """Waits for the saves in flight; CheckpointError if one could not be written."""
        with self._write_failures_named(self._last_saved_step):
            self.manager.wait_until_finished()

    def close(self) -> None:
        """Waits for the saves in flight and releases the manager, once: a save that
        failed in the background raises CheckpointError here, and later calls do
        nothing (a stop's cleanup does not report it twice)."""
        if self._closed:
            return
        self._closed = True
        try:
            self.wait()
        finally:
            try:
                self.manager.close()
            except Exception as error:  # noqa: BLE001 - already reported by wait()
                logging.info("closing the checkpoint manager of %s: %s", self.directory,
                             _first_line(error))

    @contextlib.contextmanager
    def _write_failures_named(self, step: int | None):
        """Turns a failed write into CheckpointError naming the step (the one in orbax's
        message, else `step`) and the OS's reason; orbax reports TensorStore's as
        ValueError with the OS error's code, and a background save's at the next save
        or wait. Any other error goes on as it is."""
        try:
            yield
        except Exception as error:
            reason = _io_failure_reason(error)
            if reason is None:
                raise
            written = re.search(rf"{re.escape(str(self.directory))}/(\d+)", str(error))
            if written:
                step = int(written.group(1))
            path = self.directory if step is None else self.directory / str(step)
            raise _unwritable(path, reason) from error


def check_workdir_compatible(workdir: str | Path, stage: str, signature: dict) -> None:
    """Raises CheckpointError if the workdir's newest checkpoint of `stage` with a
    readable signature was made with another model or dataset (unreadable ones are
    left to `restore_latest`). Reads only the small JSON item; compiles nothing."""
    directory = checkpoint_dir(workdir, stage)
    if not directory.exists():
        return
    with orbax_noise.read_only_warning_dropped():
        manager = ocp.CheckpointManager(directory, options=ocp.CheckpointManagerOptions(
            read_only=True, create=False, save_interval_steps=0))
    try:
        for step in sorted(manager.all_steps(), reverse=True):
            try:
                check_signature(directory, step, _as_json(signature), manager)
            except UnreadableCheckpoint:
                continue
            return
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
    differences = [f"{path}: checkpoint {old!r} vs config {new!r}"
                   for path, old, new in json_values.differences(saved, signature)]
    raise CheckpointError(
        f"the workdir holds a checkpoint of an incompatible config at "
        f"{directory / str(step)} ({'; '.join(differences)}). Use a new --workdir, "
        f"or restore the config that wrote it."
    )


def check_arrays_readable(step_dir: Path, keys_per_batch: int = 64) -> None:
    """Reads every stored value of a step's `state` item (an OCDBT database) with
    TensorStore, waiting for each read; UnreadableCheckpoint names the first failure.

    Why before orbax's restore: when one of orbax's parallel reads fails, it closes
    its event loop with the other reads still in flight, and each of them prints a
    traceback ("Event loop is closed") as it completes, about 140 for a tiny MCQ-VAE's
    truncated step, on the console of a run that then resumes fine. Here no read is
    left behind. An intact step costs one more read of its files; a state not stored
    as OCDBT is left to orbax."""
    state_dir = step_dir / "state"
    if not (state_dir / "manifest.ocdbt").exists():
        return
    try:
        store = ts.KvStore.open({"driver": "ocdbt",
                                 "base": {"driver": "file", "path": f"{state_dir}/"}}).result()
        keys = store.list().result()
        for start in range(0, len(keys), keys_per_batch):  # bounds the bytes held at once
            reads = [store.read(key) for key in keys[start:start + keys_per_batch]]
            failures = [_read_failure(read) for read in reads]  # waits for every read
            failure = next((error for error in failures if error is not None), None)
            if failure is not None:
                raise failure
    except Exception as error:
        raise _corrupt(step_dir, error) from error


def _read_failure(read) -> Exception | None:
    try:
        if read.result().state != "value":
            return ValueError("a stored value is missing")
    except Exception as error:
        return error
    return None


def _corrupt(path: Path, error: Exception) -> UnreadableCheckpoint:
    return UnreadableCheckpoint(
        f"the checkpoint at {path} cannot be read ({type(error).__name__}: "
        f"{_first_line(error)}); it is corrupt or incomplete"
    )


def _unwritable(path: Path, reason: str) -> CheckpointError:
    return CheckpointError(
        f"cannot write the checkpoint {path} ({reason}); the earlier "
        f"checkpoints are intact. Free space (or fix the permissions) and rerun the "
        f"same command to resume from the last one."
    )


# TensorStore's errors carry the OS error's number as [os_error_code='28'] (or =28).
_OS_ERROR_CODE = re.compile(r"\[os_error_code='?(\d+)'?\]")


def _io_failure_reason(error: BaseException) -> str | None:
    """The OS's words for a failed file operation in `error` or its causes ("No space
    left on device"), or None when none of them is one."""
    seen = set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        if isinstance(error, OSError):
            return error.strerror or str(error)
        code = _OS_ERROR_CODE.search(str(error))
        if code:
            return os.strerror(int(code.group(1)))
        error = error.__cause__ or error.__context__
    return None


def _first_line(error: Exception, limit: int = 200) -> str:
    """The start of an error's message: TensorStore's carry kilobytes of spec."""
    line = str(error).strip().splitlines()[0] if str(error).strip() else ""
    return line if len(line) <= limit else line[:limit] + " ..."


def _free_path(path: Path) -> Path:
    """`path`, or `path`-2, -3, ... if it is taken (a step set aside twice)."""
    candidate, number = path, 1
    while candidate.exists():
        number += 1
        candidate = path.with_name(f"{path.name}-{number}")
    return candidate


def _warn_half_written(directory: Path) -> None:
    if not directory.exists():
        return
    for partial in sorted(directory.glob("*.orbax-checkpoint-tmp*")):
        logging.warning("%s is a half-written checkpoint (a save interrupted, or in progress); "
                        "ignored and left in place", partial)


def _as_json(signature: dict) -> dict:
    # Round-trip so tuples become lists, exactly as the saved JSON reads back.
    return json.loads(json.dumps(signature))


# Restoring a trained state ----------------------------------------------------------

def placed_like(abstract_state, mesh: Mesh):
    """Abstract arrays that restore replicated over `mesh`."""
    sharding = replicated(mesh)
    return jax.tree.map(
        lambda x: jax.ShapeDtypeStruct(x.shape, x.dtype, sharding=sharding), abstract_state
    )


def restore_trained_params(workdir, stage: str, signature: dict, create_state: Callable,
                           mesh: Mesh, missing_message: str):
    """The parameters (replicated over `mesh`) of the latest checkpoint of `stage` in
    `workdir`, whose state has the structure of `create_state()`; CheckpointError
    with `missing_message` when there is none, or naming the difference when it was
    made with another signature or cannot be read (nothing in `workdir` is changed)."""
    checkpoints = StageCheckpoints(workdir, stage, signature, 1, 1, read_only=True)
    try:
        if checkpoints.latest_step() is None:
            raise CheckpointError(missing_message.format(directory=checkpoints.directory))
        state = checkpoints.restore_latest(placed_like(jax.eval_shape(create_state), mesh))
    finally:
        checkpoints.close()
    return state.params
