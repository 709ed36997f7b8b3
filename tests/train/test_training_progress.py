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


def test_the_card_names_the_steps_restored_even_when_the_run_saves_meanwhile(
        tmp_path, monkeypatch):
    """A run still training saves between listing its steps and restoring the latest:
    the steps are listed again after the restore, and both redone when they moved."""
    ctvae_workdir(tmp_path, {"mcqvae": [6], "ct": [2]}, ("mcqvae",))
    opened = []

    def open_run_while_training(workdir, mesh):
        opened.append(len(opened))
        if len(opened) == 1:  # the trainer saves step 4 during the first restore
            (tmp_path / "checkpoints" / "ct" / "4").mkdir()
        return f"run restored at attempt {len(opened)}"

    monkeypatch.setattr(stages.trained_runs, "open_run", open_run_while_training)
    run, progress = stages.open_scored_run(tmp_path, mesh=None, unfinished=True)
    assert run == "run restored at attempt 2"
    assert progress["checkpoint_steps"] == {"mcqvae": 6, "ct": 4}

    def open_run_always_saving(workdir, mesh):
        step = max(int(path.name) for path in (tmp_path / "checkpoints" / "ct").iterdir())
        (tmp_path / "checkpoints" / "ct" / str(step + 2)).mkdir()

    monkeypatch.setattr(stages.trained_runs, "open_run", open_run_always_saving)
    with pytest.raises(stages.InvalidRunError, match=(
            r"saved a new checkpoint during each of 3 reads of its latest ones \(it is still "
            r"training\); score it when it stops, or a copy of its workdir")):
        stages.open_scored_run(tmp_path, mesh=None, unfinished=True)
    monkeypatch.setattr(stages.trained_runs, "open_run", None)  # refused before restoring
    with pytest.raises(stages.InvalidRunError, match="pass --unfinished"):
        stages.open_scored_run(tmp_path, mesh=None)
