"""stages.training_progress: what a metric card records of its run's training, and the
refusal to score a run that has not finished (evaluate --unfinished lifts it). The
workdirs are made by hand: folder names and results.json are all it reads."""

import json

import pytest

from causal_disent.runs.config_file import write_config
from causal_disent.train import stages
from tests.helpers import tiny_config


def ctvae_workdir(tmp_path, steps: dict, finished: tuple):
    """A CT-VAE :tiny workdir with checkpoints at `steps` ({stage: [steps]}) whose
    `finished` stages recorded results at their last step."""
    config = tiny_config()
    write_config(tmp_path, config)
    for stage, saved in steps.items():
        for step in saved:
            (tmp_path / "checkpoints" / stage / str(step)).mkdir(parents=True)
    (tmp_path / "results.json").write_text(json.dumps(
        {stage: {"steps": steps[stage][-1]} for stage in finished}))
    return config


def test_a_finished_run_records_the_steps_it_is_scored_at(tmp_path):
    config = ctvae_workdir(tmp_path, {"mcqvae": [3, 6], "ct": [4, 6]}, ("mcqvae", "ct"))
    assert stages.training_progress(config, tmp_path) == {
        "finished": True, "checkpoint_steps": {"mcqvae": 6, "ct": 6}}


def test_an_unfinished_run_is_refused_unless_asked_for(tmp_path):
    config = ctvae_workdir(tmp_path, {"mcqvae": [6], "ct": [2, 4]}, ("mcqvae",))
    with pytest.raises(stages.InvalidRunError) as refused:
        stages.training_progress(config, tmp_path)
    assert str(refused.value) == (
        f"stage 'ct' in {tmp_path} has not finished training (its latest checkpoint is "
        f"step 4); finish it first by rerunning its training command with "
        f"--workdir={tmp_path}, or pass --unfinished to score its latest checkpoints")
    assert stages.training_progress(config, tmp_path, unfinished=True) == {
        "finished": False, "checkpoint_steps": {"mcqvae": 6, "ct": 4},
        "unfinished": f"stage 'ct' in {tmp_path} has not finished training (its latest "
                      f"checkpoint is step 4)"}
