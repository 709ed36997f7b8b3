"""Which stage-1 model a CT-VAE's stage 2 was trained on.

Stage 2 learns on the frozen MCQ-VAE's codes, so its CT layer means something only
beside that very MCQ-VAE. Stage 1 can change under it: another run's stage 1
(`ct.mcqvae_workdir`) trained on for more steps, or retrained after its folder was
moved. Resuming, evaluating or intervening with the changed stage 1 would pair the
CT layer with codes it never saw, silently. When stage 2 starts from nothing it
records the stage 1 it reads (WORKDIR/checkpoints/ct_stage_one.json: its workdir,
step and a hash of its parameters); every later command that pairs the two checks
the hash and refuses a difference with one line naming both.
"""

import hashlib
import json
from pathlib import Path

import jax
import numpy as np

from causal_disent.runs.checkpoint import CheckpointError
from causal_disent.runs.checkpoint_paths import checkpoint_dir, latest_saved_step

STAGE_ONE, STAGE_TWO = "mcqvae", "ct"


def params_hash(params) -> str:
    """sha256 over the parameter tree's paths, dtypes, shapes and values (hex, 16)."""
    digest = hashlib.sha256()
    for path, leaf in jax.tree_util.tree_flatten_with_path(jax.device_get(params))[0]:
        leaf = np.ascontiguousarray(leaf)
        digest.update(f"{jax.tree_util.keystr(path)}:{leaf.dtype}:{leaf.shape};".encode())
        digest.update(leaf.tobytes())
    return digest.hexdigest()[:16]


def record_path(workdir: str | Path) -> Path:
    return checkpoint_dir(workdir, STAGE_TWO).with_name(f"{STAGE_TWO}_stage_one.json")


def identity(stage1_workdir: str | Path, stage1_params) -> dict:
    return {"workdir": str(Path(stage1_workdir).absolute()),
            "step": latest_saved_step(stage1_workdir, STAGE_ONE),
            "params_hash": params_hash(stage1_params)}


def record(workdir: Path, stage1_workdir: Path, stage1_params) -> None:
    """Records the stage 1 that stage 2 in `workdir` starts from (process 0 writes)."""
    if jax.process_index() != 0:
        return
    path = record_path(workdir)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(identity(stage1_workdir, stage1_params), indent=2) + "\n")


def check(workdir: Path, stage1_workdir: Path, stage1_params) -> None:
    """CheckpointError when stage 2 in `workdir` was trained on another stage 1 than
    `stage1_params`; nothing when it recorded none (a run from before the records)."""
    path = record_path(workdir)
    if not path.exists():
        return
    try:
        recorded = json.loads(path.read_text())
        recorded_hash = recorded["params_hash"]
    except (ValueError, KeyError, TypeError) as error:
        raise CheckpointError(f"{path} cannot be read ({type(error).__name__}: {error}); "
                              f"it says which stage 1 stage 2 was trained on: restore it, or "
                              f"train stage 2 again in a new --workdir") from error
    if params_hash(stage1_params) == recorded_hash:
        return
    now = identity(stage1_workdir, stage1_params)
    raise CheckpointError(
        f"stage 2 in {workdir} was trained on the stage 1 of {recorded.get('workdir')} at "
        f"step {recorded.get('step')} (parameters {recorded_hash}), but that stage 1 is now "
        f"{now['workdir']} at step {now['step']} (parameters {now['params_hash']}): its codes "
        f"are not the ones stage 2 learned on. Restore that stage 1, or train stage 2 again "
        f"in a new --workdir")
