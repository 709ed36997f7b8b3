"""kill -9 at random moments of a tiny stage-1 run, then the same command: the run
ends bitwise equal to an uninterrupted one (tests/crash_resume.py runs more trials,
over both stages, at one step a call by default). Here the steps run two a call
(train/multi_step.py), so each kill lands inside or between 2-step calls and the
resumed run restarts from the last checkpoint, a multiple of 2."""

from tests.crash_resume import run_trials

TWO_STEPS_A_CALL = ("--config.mcqvae.train.steps_per_call=2",
                    "--config.mcqvae.train.checkpoint_every_steps=4")


def test_killed_runs_resume_to_the_uninterrupted_params_and_results(tmp_path):
    lines = []
    trials = run_trials(2, ["mcqvae"], steps=30, root=tmp_path, seed=1, report=lines.append,
                        extra=TWO_STEPS_A_CALL)
    assert all(trial.ok for trial in trials), "\n".join(lines)
