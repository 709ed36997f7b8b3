"""Training in a workdir that holds a run with another config: what it may change.
The workdirs are made by hand (config.json, checkpoint folders, results.json), which
is all the check reads."""

import json

import pytest

from causal_disent.runs.config_file import write_config
from causal_disent.train import stages
from causal_disent.train.resumed_config import ChangedRunError, check_same_run
from tests.helpers import tiny_config

STAGE_NAMES = frozenset(stages.STAGES)


def workdir_with_run(tmp_path, checkpoints: dict, scored: dict | None = None):
    """A CT-VAE :tiny run in tmp_path with checkpoints at `checkpoints` ({stage:
    [steps]}) and results for `scored` ({stage: step})."""
    write_config(tmp_path, tiny_config())
    for stage, steps in checkpoints.items():
        for step in steps:
            (tmp_path / "checkpoints" / stage / str(step)).mkdir(parents=True)
    if scored:
        (tmp_path / "results.json").write_text(json.dumps(
            {stage: {"steps": step} for stage, step in scored.items()}))
    return tmp_path


def test_a_workdir_without_a_run_or_with_nothing_trained_takes_any_config(tmp_path):
    check_same_run(tiny_config(seed=5), tmp_path, STAGE_NAMES)  # no config.json
    write_config(tmp_path, tiny_config())
    check_same_run(tiny_config(**{"seed": 5, "mcqvae.optim.learning_rate": 1.0}), tmp_path,
                   STAGE_NAMES)


def test_a_started_stage_refuses_what_it_trains_with_and_names_the_fix(tmp_path):
    workdir = workdir_with_run(tmp_path, {"mcqvae": [3]})
    with pytest.raises(ChangedRunError) as refused:
        check_same_run(tiny_config(**{"mcqvae.optim.learning_rate": 0.5}), workdir, STAGE_NAMES)
    old = tiny_config().mcqvae.optim.learning_rate
    assert str(refused.value) == (
        f"{workdir} holds a run of another config: mcqvae.optim.learning_rate is {old!r} "
        f"there, 0.5 here. Resume it with --workdir={workdir} alone (its own config.json), "
        f"or train this config in a new --workdir")
    for field, value in (("seed", 1), ("data.split_seed", 9), ("data.name", "dsprites_synth")):
        with pytest.raises(ChangedRunError, match=rf"{field} is .* there, .* here"):
            check_same_run(tiny_config(**{field: value}), workdir, STAGE_NAMES)


def test_how_it_runs_how_long_and_how_it_is_scored_may_change_before_its_scores(tmp_path):
    workdir = workdir_with_run(tmp_path, {"mcqvae": [3]})
    check_same_run(tiny_config(**{
        "stages": ("mcqvae",), "data.data_dir": "/elsewhere",
        "mcqvae.train.steps_per_call": 3, "mcqvae.train.log_every_steps": 7,
        "mcqvae.train.checkpoint_every_steps": 9, "mcqvae.train.num_steps": 60,
        "mcqvae.train.num_eval_images": 5,
        "ct.optim.learning_rate": 0.5,  # stage 2 has not started
    }), workdir, STAGE_NAMES)


def test_a_scored_stage_takes_new_scoring_settings_only_with_a_new_length(tmp_path):
    config = tiny_config()
    workdir = workdir_with_run(tmp_path, {"mcqvae": [3, config.mcqvae.train.num_steps]},
                               {"mcqvae": config.mcqvae.train.num_steps})
    with pytest.raises(ChangedRunError, match=r"mcqvae.train.num_eval_images is \d+ there, 5 "
                                              r"here"):
        check_same_run(tiny_config(**{"mcqvae.train.num_eval_images": 5}), workdir, STAGE_NAMES)
    check_same_run(tiny_config(**{"mcqvae.train.num_eval_images": 5,  # trained on, scored again
                              "mcqvae.train.num_steps": 2 * config.mcqvae.train.num_steps}),
                   workdir, STAGE_NAMES)


def test_many_differences_are_counted_past_the_first_four(tmp_path):
    workdir = workdir_with_run(tmp_path, {"mcqvae": [3]})
    with pytest.raises(ChangedRunError, match=r"\(and 2 more\)\. Resume it"):
        check_same_run(tiny_config(**{"seed": 1, "data.split_seed": 2,
                                  "mcqvae.optim.learning_rate": 0.5,
                                  "mcqvae.optim.batch_size": 3, "mcqvae.model.commitment_cost": 0.5,
                                  "mcqvae.model.num_codes": 7}), workdir, STAGE_NAMES)


def test_stage_one_trains_on_only_while_stage_two_has_not_begun(tmp_path):
    config = tiny_config()
    longer = {"mcqvae.train.num_steps": 2 * config.mcqvae.train.num_steps}
    workdir = workdir_with_run(tmp_path, {"mcqvae": [config.mcqvae.train.num_steps]},
                               {"mcqvae": config.mcqvae.train.num_steps})
    check_same_run(tiny_config(**longer), workdir, STAGE_NAMES)
    (workdir / "checkpoints" / "ct" / "2").mkdir(parents=True)  # stage 2 read its codes
    with pytest.raises(ChangedRunError, match=r"mcqvae.train.num_steps is \d+ there, \d+ here"):
        check_same_run(tiny_config(**longer), workdir, STAGE_NAMES)


def test_the_learning_curves_size_changes_only_before_its_first_point(tmp_path):
    workdir = workdir_with_run(tmp_path, {"mcqvae": [3]})
    larger = tiny_config(**{"mcqvae.train.num_curve_images": 99})
    check_same_run(larger, workdir, STAGE_NAMES)
    (workdir / "curves").mkdir()
    (workdir / "curves" / "mcqvae.jsonl").write_text('{"step": 3, "test_psnr": 10.0}\n')
    with pytest.raises(ChangedRunError, match=r"mcqvae.train.num_curve_images is \d+ there, 99"):
        check_same_run(larger, workdir, STAGE_NAMES)


def test_a_section_one_config_lacks_is_named_not_printed(tmp_path):
    """A β-VAE config in a CT-VAE run's workdir: the sections are said to be there or
    absent (their whole contents had filled the line)."""
    from configs import betavae_dsprites_synth

    workdir = workdir_with_run(tmp_path, {"mcqvae": [2]})
    with pytest.raises(ChangedRunError) as refused:
        check_same_run(betavae_dsprites_synth.get_config("tiny"), workdir, STAGE_NAMES)
    assert "mcqvae is a section there, absent here; " in str(refused.value)
    assert "{" not in str(refused.value)
