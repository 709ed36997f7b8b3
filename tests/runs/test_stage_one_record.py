"""runs/stage_one_record: which stage 1 a CT-VAE's stage 2 was trained on."""

import json

import jax
import numpy as np
import pytest

from causal_disent.runs import stage_one_record
from causal_disent.runs.checkpoint import CheckpointError


def test_params_hash_sees_every_value():
    params = {"a": np.zeros((2, 3), np.float32), "b": {"c": np.ones(4, np.float32)}}
    changed = jax.tree.map(np.copy, params)
    changed["b"]["c"][2] = 1.0 + 1e-6
    digest = stage_one_record.params_hash
    assert digest(params) == digest(jax.tree.map(np.copy, params))
    assert digest(params) != digest(changed)


def test_the_record_holds_the_stage_one_it_was_made_with(tmp_path):
    stage1 = tmp_path / "stage1"
    (stage1 / "checkpoints" / "mcqvae" / "40").mkdir(parents=True)
    params = {"encoder": {"w": np.arange(6.0).reshape(2, 3)}}
    stage_one_record.check(tmp_path, stage1, params)  # no record (a run from before): fine
    stage_one_record.record(tmp_path, stage1, params)
    assert json.loads(stage_one_record.record_path(tmp_path).read_text()) == {
        "workdir": str(stage1), "step": 40, "params_hash": stage_one_record.params_hash(params)}
    stage_one_record.check(tmp_path, tmp_path / "moved", params)  # the same parameters
    (stage1 / "checkpoints" / "mcqvae" / "80").mkdir()
    params["encoder"]["w"][0, 0] = 0.5  # trained on
    with pytest.raises(CheckpointError, match=(
            rf"stage 2 in {tmp_path} was trained on the stage 1 of {stage1} at step 40 "
            rf"\(parameters [0-9a-f]{{16}}\), but that stage 1 is now {stage1} at step 80 ")):
        stage_one_record.check(tmp_path, stage1, params)


def test_an_unreadable_record_is_named(tmp_path):
    path = stage_one_record.record_path(tmp_path)
    path.parent.mkdir(parents=True)
    path.write_text("{cut")
    with pytest.raises(CheckpointError, match=r"stage_one.json cannot be read \(JSONDecode"):
        stage_one_record.check(tmp_path, tmp_path, {"w": np.zeros(2)})
