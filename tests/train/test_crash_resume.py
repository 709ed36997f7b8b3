"""kill -9 at random moments of a tiny stage-1 run, then the same command: the run
ends bitwise equal to an uninterrupted one (tests/crash_resume.py runs more trials,
over both stages)."""

from tests.crash_resume import run_trials


def test_killed_runs_resume_to_the_uninterrupted_params_and_results(tmp_path):
    lines = []
    trials = run_trials(2, ["mcqvae"], steps=30, root=tmp_path, seed=1, report=lines.append)
    assert all(trial.ok for trial in trials), "\n".join(lines)
