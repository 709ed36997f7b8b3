"""The time budget (deadline.py), the periodic-evaluation hook of loop.fit and the
learning-curve files: unit tests with fakes, then tiny real runs of stage 1 that
pause at their budget and resume to the uninterrupted result."""

import itertools
import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from causal_disent.runs import checkpoint
from causal_disent.runs.results import append_curve_point, curve_path, read_curve
from causal_disent.train import deadline, finite_guard, loop, mcqvae_stage, reporting, stages
from causal_disent.train.deadline import Deadline, TimeBudgetExhausted
from tests.helpers import tiny_config as tiny_two_stage_config
from tests.train.test_training import final_params


def minute_per_call_clock():
    """A clock (seconds) that advances one minute each time it is read. A Deadline
    reads it when made, then once per check: at the start of fit and after each
    step, so Deadline(k + 0.5) expires after step k of a fresh fit."""
    return itertools.count(0, 60).__next__


# Deadline ---------------------------------------------------------------------------


def test_deadline_of_zero_minutes_never_expires():
    budget = Deadline(0, clock=itertools.count(0, 1e9).__next__)
    assert budget.unlimited and not budget.expired() and not budget.expired()


def test_deadline_expires_after_its_minutes():
    budget = Deadline(2.5, clock=minute_per_call_clock())
    assert [budget.expired() for _ in range(3)] == [False, False, True]


def test_negative_budget_is_rejected():
    with pytest.raises(ValueError, match="0 = unlimited"):
        Deadline(-1)


def test_active_sets_the_current_deadline_inside_the_block_only():
    budget = Deadline(5)
    assert deadline.current().unlimited
    with deadline.active(budget):
        assert deadline.current() is budget
    assert deadline.current().unlimited


# loop.fit with fakes -----------------------------------------------------------------


class FakeCheckpoints:
    """Records saves (periodic every `every` steps, or forced) and closes in `events`."""

    def __init__(self, events: list, every: int):
        self.events, self.every = events, every

    def due(self, step):
        return step % self.every == 0

    def latest_path(self):
        saves = [event for event in self.events if event[0] == "save"]
        return f"save {saves[-1][1]}" if saves else None

    def save(self, state, step, *, force=False):
        if force or self.due(step):
            self.events.append(("save", step, int(state)))

    def wait(self):
        pass

    def close(self):
        self.events.append(("close",))


def fake_fit(tmp_path, events, *, first_step=0, last_step=7, **kwargs):
    """fit on a counter: the state is the number of steps taken."""
    return loop.fit(
        stage="fake", state=jnp.array(first_step),
        step_fn=lambda state, batch, step: (state + 1, {"loss": state * 1.0}),
        local_batches=itertools.repeat({}), first_step=first_step, last_step=last_step,
        global_batch_size=1, checkpoints=FakeCheckpoints(events, every=2),
        writer=reporting.MetricsWriter(tmp_path), log_every_steps=4, **kwargs,
    )


def record_evaluations(events):
    return lambda state, step: events.append(("eval", step, int(state)))


@pytest.mark.parametrize(
    "first_step, last_step, expected",
    [(0, 7, [0, 3, 6]), (0, 6, [0, 3]), (3, 7, [3, 6]), (4, 7, [6])],
)
def test_evaluate_fn_runs_at_multiples_before_the_last_step(tmp_path, first_step, last_step, expected):
    events = []
    fake_fit(tmp_path, events, first_step=first_step, last_step=last_step,
             evaluate_every_steps=3, evaluate_fn=record_evaluations(events))
    evaluations = [e for e in events if e[0] == "eval"]
    assert evaluations == [("eval", step, step) for step in expected]  # the state of that step


def test_evaluation_follows_the_checkpoint_of_its_step(tmp_path):
    events = []
    fake_fit(tmp_path, events, evaluate_every_steps=2, evaluate_fn=record_evaluations(events))
    assert events.index(("save", 4, 4)) + 1 == events.index(("eval", 4, 4))


def test_no_evaluation_without_a_period(tmp_path):
    events = []
    fake_fit(tmp_path, events, evaluate_every_steps=0, evaluate_fn=record_evaluations(events))
    assert not [e for e in events if e[0] == "eval"]


def test_expired_deadline_pauses_after_a_step_with_a_checkpoint(tmp_path):
    events = []
    with pytest.raises(TimeBudgetExhausted) as paused:
        # Expires after step 3, which is also evaluated first (a multiple of 3).
        fake_fit(tmp_path, events, deadline=Deadline(3.5, clock=minute_per_call_clock()),
                 evaluate_every_steps=3, evaluate_fn=record_evaluations(events))
    assert (paused.value.stage, paused.value.step, paused.value.total_steps) == ("fake", 3, 7)
    assert paused.value.elapsed_minutes >= 3.5 and paused.value.trained
    assert events[-3:] == [("eval", 3, 3), ("save", 3, 3), ("close",)]
    rows = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert [row["step"] for row in rows] == [1, 2, 3]  # step 3 was pending, not yet logged


def test_current_deadline_is_used_when_fit_gets_none(tmp_path):
    events = []
    with deadline.active(Deadline(2.5, clock=minute_per_call_clock())):
        with pytest.raises(TimeBudgetExhausted, match="stage fake at step 2 of 7"):
            fake_fit(tmp_path, events)


def test_deadline_expired_at_the_start_runs_and_saves_nothing(tmp_path):
    events = []
    steps_taken = []

    def step_fn(state, batch, step):
        steps_taken.append(state)
        return state + 1, {}

    with pytest.raises(TimeBudgetExhausted, match="at step 5 of 7") as paused:
        loop.fit(
            stage="fake", state=jnp.array(5), step_fn=step_fn, local_batches=itertools.repeat({}),
            first_step=5, last_step=7, global_batch_size=1,
            checkpoints=FakeCheckpoints(events, every=2), writer=reporting.MetricsWriter(tmp_path),
            log_every_steps=1, deadline=Deadline(0.5, clock=minute_per_call_clock()),
            evaluate_every_steps=5, evaluate_fn=record_evaluations(events),
        )
    assert events == [] and steps_taken == [] and paused.value.trained is False


def test_the_last_step_never_pauses(tmp_path):
    events = []
    # Expired by the time step 7 (the last) is done: the stage finishes instead.
    state = fake_fit(tmp_path, events, deadline=Deadline(7.5, clock=minute_per_call_clock()))
    assert int(state) == 7 and events[-1] == ("save", 7, 7)


def test_a_pause_step_stops_the_stage_there_with_a_checkpoint(tmp_path):
    events = []
    with pytest.raises(TimeBudgetExhausted) as paused:
        fake_fit(tmp_path, events, deadline=Deadline(pause_at_step=3),
                 evaluate_every_steps=3, evaluate_fn=record_evaluations(events))
    assert (paused.value.step, paused.value.at_pause_step, paused.value.trained) == (3, True, True)
    assert events[-2:] == [("save", 3, 3), ("close",)]  # evaluated after stopping: never
    rows = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert [row["step"] for row in rows] == [1, 2, 3]


def test_a_stage_at_or_past_its_pause_step_pauses_before_training(tmp_path):
    events = []
    with pytest.raises(TimeBudgetExhausted, match="at step 4 of 7") as paused:
        fake_fit(tmp_path, events, first_step=4, deadline=Deadline(pause_at_step=3))
    assert paused.value.at_pause_step and not paused.value.trained and events == []


@pytest.mark.parametrize("pause_at_step", [7, 9])
def test_a_pause_step_at_or_past_the_last_step_lets_the_stage_finish(tmp_path, pause_at_step):
    events = []
    state = fake_fit(tmp_path, events, deadline=Deadline(pause_at_step=pause_at_step))
    assert int(state) == 7 and events[-1] == ("save", 7, 7)


def test_a_negative_pause_step_is_rejected():
    with pytest.raises(ValueError, match="0 = none"):
        Deadline(pause_at_step=-1)


def test_the_saves_state_check_compiles_before_the_rates_start(tmp_path, monkeypatch):
    """The finite check before each save compiles with the first call, so the first
    checkpoint does not stall a run for its compilation (0.7 s on a GPU)."""
    compiled = finite_guard._all_finite._cache_size
    before = compiled()
    when_rates_start = []
    start_timing = reporting.Progress.start_timing
    monkeypatch.setattr(reporting.Progress, "start_timing", lambda progress, step: (
        when_rates_start.append(compiled()), start_timing(progress, step))[-1])
    events = []
    loop.fit(stage="fake", state=jnp.zeros((), jnp.float16),  # a type no other test checks
             step_fn=lambda state, batch, step: (state + 1, {}),
             local_batches=itertools.repeat({}), first_step=0, last_step=6,
             global_batch_size=1, checkpoints=FakeCheckpoints(events, every=2),
             writer=reporting.MetricsWriter(tmp_path), log_every_steps=2)
    assert when_rates_start == [before + 1] and compiled() == before + 1
    assert {event[1] for event in events} == {2, 4, 6}  # the saves it checked first


# Curve files ---------------------------------------------------------------------------


def test_read_curve_sorts_by_step_and_keeps_the_last_point_of_a_step(tmp_path):
    for step, value in [(0, 0.1), (2, 0.5), (4, 0.7), (2, 0.6), (6, 0.8)]:
        append_curve_point(tmp_path, "ct", step, {"action_accuracy": np.float32(value)})
    points = read_curve(tmp_path, "ct")
    assert [p["step"] for p in points] == [0, 2, 4, 6]
    np.testing.assert_allclose([p["action_accuracy"] for p in points], [0.1, 0.6, 0.7, 0.8])
    assert read_curve(tmp_path, "mcqvae") == []


def test_curve_survives_a_line_cut_short_by_a_killed_process(tmp_path):
    append_curve_point(tmp_path, "ct", 0, {"a": 1.0})
    with curve_path(tmp_path, "ct").open("a") as f:
        f.write('{"step": 2, "a"')  # killed mid-write
    append_curve_point(tmp_path, "ct", 2, {"a": 3.0})
    assert read_curve(tmp_path, "ct") == [{"step": 0, "a": 1.0}, {"step": 2, "a": 3.0}]


# Tiny real runs of stage 1 --------------------------------------------------------------


def tiny_config():
    """Stage 1 only, with a learning curve every 2 of its 6 steps."""
    config = tiny_two_stage_config()
    config.stages = ("mcqvae",)
    config.mcqvae.train.eval_every_steps = 2
    config.mcqvae.train.num_curve_images = 8
    return config


def saved_steps(workdir):
    directory = checkpoint.checkpoint_dir(workdir, "mcqvae")
    return sorted(int(p.name) for p in directory.iterdir() if p.name.isdigit())


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("uninterrupted")
    stages.run(tiny_config(), workdir)
    return workdir


def test_paused_run_resumes_to_the_uninterrupted_parameters_and_curve(uninterrupted, tmp_path):
    with pytest.raises(TimeBudgetExhausted) as paused:
        stages.run(tiny_config(), tmp_path, deadline=Deadline(4.5, clock=minute_per_call_clock()))
    assert (paused.value.stage, paused.value.step, paused.value.total_steps) == ("mcqvae", 4, 6)
    assert saved_steps(tmp_path) == [3, 4]  # the periodic one and the pause's
    assert not (tmp_path / "results.json").exists()
    assert [p["step"] for p in read_curve(tmp_path, "mcqvae")] == [0, 2, 4]

    stages.run(tiny_config(), tmp_path)  # no budget: finishes
    resumed, step = final_params(tmp_path)
    expected, _ = final_params(uninterrupted)
    assert step == 6
    jax.tree.map(np.testing.assert_array_equal, resumed, expected)
    curve, expected_curve = (read_curve(w, "mcqvae") for w in (tmp_path, uninterrupted))
    assert [p["step"] for p in curve] == [0, 2, 4, 6]
    assert curve == expected_curve
    assert (tmp_path / "figures" / "mcqvae_learning_curve.png").stat().st_size > 0


def test_a_run_paused_at_a_step_resumes_to_the_uninterrupted_parameters(uninterrupted, tmp_path):
    with pytest.raises(TimeBudgetExhausted) as paused:
        stages.run(tiny_config(), tmp_path, pause_at_step=2)
    assert (paused.value.step, paused.value.at_pause_step) == (2, True)
    assert saved_steps(tmp_path) == [2]
    with pytest.raises(TimeBudgetExhausted, match="at step 2 of 6"):  # the same step again
        stages.run(tiny_config(), tmp_path, pause_at_step=2)
    stages.run(tiny_config(), tmp_path)
    resumed, step = final_params(tmp_path)
    expected, _ = final_params(uninterrupted)
    assert step == 6
    jax.tree.map(np.testing.assert_array_equal, resumed, expected)


def test_stage_one_results_name_the_best_curve_point(uninterrupted):
    results = json.loads((uninterrupted / "results.json").read_text())["mcqvae"]
    curve = read_curve(uninterrupted, "mcqvae")
    best = max(curve, key=lambda p: p["test_psnr"])
    assert results["best_curve_point"] == {"step": best["step"], "test_psnr": best["test_psnr"]}


def test_stage_one_divergence_is_judged_against_the_best_curve_point():
    curve = [{"step": 0, "test_psnr": 6.0}, {"step": 2500, "test_psnr": 34.1},
             {"step": 5000, "test_psnr": 33.0}]
    best = mcqvae_stage.best_curve_point(curve)
    assert best["step"] == 2500
    assert mcqvae_stage.best_curve_point([]) is None
    assert not mcqvae_stage.diverged(33.0, best)  # within the curve's noise
    assert mcqvae_stage.diverged(12.8, best)
    warning = mcqvae_stage.divergence_warning(12.8, best)
    assert "21.3 dB below the 34.10 dB of step 2500" in warning
    assert "--config.mcqvae.train.num_steps=2500" in warning


def test_stage_does_not_start_when_the_budget_is_already_spent(tmp_path):
    with pytest.raises(TimeBudgetExhausted, match="stage mcqvae at step 0 of 6"):
        stages.run(tiny_config(), tmp_path, deadline=Deadline(0.5, clock=minute_per_call_clock()))
    assert saved_steps(tmp_path) == []
    assert not (tmp_path / "metrics.jsonl").exists()
    assert read_curve(tmp_path, "mcqvae") == []
