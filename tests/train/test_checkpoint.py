import jax
import jax.numpy as jnp
import numpy as np
import ml_collections
import optax
import pytest

from causal_disent.runs import checkpoint
from causal_disent.train import config_ranges
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


def test_periodic_saves_wait_for_the_seconds_since_the_last_save(tmp_path):
    now = [100.0]
    checkpoints = checkpoint.StageCheckpoints(tmp_path, "mcqvae", {"model": 1}, 2, 5,
                                              min_seconds_between_saves=10.0,
                                              clock=lambda: now[0])
    now[0] = 105.0  # 5 s after the stage's start
    assert not checkpoints.due(3)  # not a multiple of the interval
    assert not checkpoints.due(4)  # too soon after the start
    now[0] = 110.0
    assert checkpoints.due(6)
    checkpoints.save(make_state(), 6, force=True)
    now[0] = 119.0
    assert not checkpoints.due(8)  # too soon after that save
    checkpoints.save(make_state(), 9, force=True)  # a forced save happens anyway...
    now[0] = 125.0
    assert not checkpoints.due(10)  # ...and restarts the wait
    now[0] = 129.5
    assert checkpoints.due(12)
    checkpoints.close()
    checkpoints.close()  # again: a no-op (a stopping stage closes what the loop may have)
    assert checkpoints.manager.all_steps() == [6, 9]


def test_without_a_time_bound_every_interval_is_a_save(tmp_path):
    checkpoints = checkpoint.StageCheckpoints(tmp_path, "mcqvae", {"model": 1}, 2, 5,
                                              clock=lambda: 0.0)
    assert [step for step in range(1, 9) if checkpoints.due(step)] == [2, 4, 6, 8]
    checkpoints.close()


@pytest.mark.parametrize("value", [-1.0, float("nan"), "30"])
def test_a_bad_time_between_saves_is_refused(value):
    config = ml_collections.ConfigDict(
        {"vae": {"train": {"min_seconds_between_checkpoints": value}}})
    with pytest.raises(ValueError, match=r"vae.train.min_seconds_between_checkpoints must be "
                                         r"a finite number >= 0 \(0 = no bound\)"):
        config_ranges.check_ranges(config)


def test_with_several_processes_process_0s_clock_decides(tmp_path, monkeypatch):
    from jax.experimental import multihost_utils

    checkpoints = checkpoint.StageCheckpoints(tmp_path, "mcqvae", {"model": 1}, 2, 5,
                                              min_seconds_between_saves=10.0,
                                              clock=iter([0.0, 50.0, 50.0]).__next__)
    process_0_waited = {"value": False}
    monkeypatch.setattr(checkpoint.jax, "process_count", lambda: 2)
    monkeypatch.setattr(multihost_utils, "broadcast_one_to_all",
                        lambda mine: np.array(process_0_waited["value"]))
    assert not checkpoints.due(2)  # this process has waited 50 s; process 0 says no
    process_0_waited["value"] = True
    assert checkpoints.due(4)
    monkeypatch.undo()  # orbax asks jax how many processes there are, too
    checkpoints.close()
