"""Tiny real runs of stage 1: outputs, resume equality, errors before compilation."""

import json

import jax
import numpy as np
import orbax.checkpoint as ocp
import pytest

from causal_disent.runs import checkpoint
from causal_disent.train import stages
from tests.helpers import tiny_config as tiny_two_stage_config


def tiny_config():
    """The tiny config with stage 1 only."""
    config = tiny_two_stage_config()
    config.stages = ("mcqvae",)
    return config


def final_params(workdir):
    directory = checkpoint.checkpoint_dir(workdir, "mcqvae")
    with ocp.CheckpointManager(directory) as manager:
        restored = manager.restore(
            manager.latest_step(), args=ocp.args.Composite(state=ocp.args.StandardRestore())
        )
    return restored.state["params"], manager.latest_step()


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("run")
    results = stages.run(tiny_config(), workdir)
    return workdir, results


def test_run_writes_checkpoints_metrics_results_and_figure(finished_run):
    workdir, results = finished_run
    assert set(results) == {"mcqvae"}
    saved = json.loads((workdir / "results.json").read_text())["mcqvae"]
    assert saved["steps"] == 6 and saved["num_images"] == 20
    assert np.isfinite(saved["test_psnr"]) and len(saved["codebook_perplexity"]) == 2
    rows = [json.loads(line) for line in (workdir / "metrics.jsonl").read_text().splitlines()]
    assert [row["step"] for row in rows] == [1, 2, 3, 4, 5, 6]
    assert all(np.isfinite(row["loss"]) for row in rows)
    assert (workdir / "figures" / "mcqvae_reconstructions.png").stat().st_size > 0
    steps = sorted(int(p.name) for p in (workdir / "checkpoints" / "mcqvae").iterdir() if p.name.isdigit())
    assert steps == [3, 6]
    assert json.loads((workdir / "config.json").read_text())["data"]["name"] == "shapes3d_synth"


def test_rerun_of_a_finished_stage_is_skipped(finished_run):
    workdir, results = finished_run
    mtime = (workdir / "results.json").stat().st_mtime_ns
    assert stages.run(tiny_config(), workdir) == results
    assert (workdir / "results.json").stat().st_mtime_ns == mtime


def test_interrupted_run_resumes_to_identical_parameters(finished_run, tmp_path):
    workdir, _ = finished_run
    config = tiny_config()
    config.mcqvae.train.num_steps = 4  # the "interrupted" run stops after step 4...
    config.mcqvae.train.checkpoint_every_steps = 4
    stages.run(config, tmp_path)
    assert final_params(tmp_path)[1] == 4
    stages.run(tiny_config(), tmp_path)  # ...and the full-length run resumes from it
    resumed, step = final_params(tmp_path)
    uninterrupted, _ = final_params(workdir)
    assert step == 6
    jax.tree.map(np.testing.assert_array_equal, resumed, uninterrupted)


@pytest.mark.parametrize(
    "override, message",
    [
        (lambda c: setattr(c.data, "name", "shapes3D_synth"), "Did you mean 'shapes3d_synth'"),
        (lambda c: setattr(c, "stages", ("mcqvae", "ctt")), "unknown stage 'ctt'"),
        (lambda c: setattr(c.mcqvae.model, "num_codebooks", 3), "divisible by"),
        (lambda c: setattr(c.mcqvae.train, "num_steps", 0) or setattr(c.mcqvae.train, "num_epochs", 0), "num_steps"),
    ],
)
def test_bad_config_fails_before_compiling(override, message, tmp_path):
    config = tiny_config()
    override(config)
    with pytest.raises(stages.InvalidRunError, match=message):
        stages.validate(config, tmp_path, stages.make_data_mesh())


def test_unwritable_workdir_is_named(tmp_path):
    blocker = tmp_path / "a_file"
    blocker.write_text("")
    with pytest.raises(stages.InvalidRunError, match="not writable"):
        stages.run(tiny_config(), blocker / "workdir")


def test_workdir_with_checkpoint_of_another_architecture(finished_run):
    workdir, _ = finished_run
    config = tiny_config()
    config.mcqvae.model.num_codes = 16
    with pytest.raises(stages.InvalidRunError, match="incompatible config.*num_codes"):
        stages.run(config, workdir)
