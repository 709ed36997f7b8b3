import jax
import jax.numpy as jnp
import optax
import pytest

from causal_disent.runs import checkpoint
from causal_disent.train.state import TrainState


def make_state(value=1.0):
    return TrainState.create(apply_fn=None, params={"w": jnp.full(3, value)}, tx=optax.adam(1e-3))


def save_one(workdir, signature):
    checkpoints = checkpoint.StageCheckpoints(workdir, "mcqvae", signature, 1, 2)
    checkpoints.save(make_state(), 0, force=True)
    checkpoints.close()


def test_save_then_restore(tmp_path):
    save_one(tmp_path, {"model": {"k": 8}})
    checkpoints = checkpoint.StageCheckpoints(tmp_path, "mcqvae", {"model": {"k": 8}}, 1, 2)
    restored = checkpoints.restore_latest(jax.eval_shape(make_state))
    assert float(restored.params["w"].sum()) == 3.0
    checkpoints.close()


def test_incompatible_config_names_only_the_fields_that_differ(tmp_path):
    save_one(tmp_path, {"model": {"k": 8, "widths": [4, 8]}, "data": "shapes3d_synth"})
    with pytest.raises(checkpoint.CheckpointError,
                       match=r"incompatible config.*\(model\.k: checkpoint 8 vs config 16\)"):
        checkpoint.check_workdir_compatible(
            tmp_path, "mcqvae", {"model": {"k": 16, "widths": [4, 8]}, "data": "shapes3d_synth"}
        )
    checkpoint.check_workdir_compatible(tmp_path, "other_stage", {"model": {"k": 16}})


def test_corrupt_only_checkpoint_is_a_clear_error_and_nothing_is_deleted(tmp_path):
    """Validation leaves an unreadable signature to the restore, which names it; with
    no readable step to fall back to, nothing is moved or deleted."""
    save_one(tmp_path, {"model": 1})
    step_dir = checkpoint.checkpoint_dir(tmp_path, "mcqvae") / "0"
    for path in (step_dir / "signature").rglob("*"):
        if path.is_file():
            path.write_bytes(b"\x00garbage")
    files_before = sorted(p for p in step_dir.rglob("*"))
    checkpoint.check_workdir_compatible(tmp_path, "mcqvae", {"model": 1})
    checkpoints = checkpoint.StageCheckpoints(tmp_path, "mcqvae", {"model": 1}, 1, 2)
    with pytest.raises(checkpoint.CheckpointError, match=r"cannot be read .*corrupt or "
                       r"incomplete.*Nothing was changed"):
        checkpoints.restore_latest(jax.eval_shape(make_state))
    checkpoints.close()
    assert sorted(p for p in step_dir.rglob("*")) == files_before
