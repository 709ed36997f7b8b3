"""The stages' learning-rate schedules (train/state.py's stage_schedule)."""

import ml_collections
import numpy as np
import pytest

from causal_disent.train.state import stage_schedule


def optim(**fields):
    return ml_collections.ConfigDict({"learning_rate": 1e-3, "decay_rate_per_epoch": 0.5,
                                      "final_learning_fraction": 0.1, **fields})


def rates(schedule, steps):
    return np.array([float(schedule(step)) for step in steps])


def test_cosine_falls_from_the_rate_to_its_final_fraction():
    schedule = stage_schedule(optim(schedule="cosine"), steps_per_epoch=10, total_steps=100)
    np.testing.assert_allclose(rates(schedule, [0, 50, 100]), [1e-3, 5.5e-4, 1e-4], rtol=1e-5)


def test_exponential_decays_once_an_epoch():
    schedule = stage_schedule(optim(schedule="exponential"), steps_per_epoch=10, total_steps=100)
    np.testing.assert_allclose(rates(schedule, [0, 9, 10, 25]), [1e-3, 1e-3, 5e-4, 2.5e-4])


@pytest.mark.parametrize("name", ["cosine", "exponential"])
def test_a_warmup_rises_linearly_then_is_the_schedule_itself(name):
    plain = stage_schedule(optim(schedule=name), steps_per_epoch=10, total_steps=100)
    warmed = stage_schedule(optim(schedule=name, warmup_steps=4), steps_per_epoch=10,
                            total_steps=100)
    steps = np.arange(100)
    expected = rates(plain, steps) * np.minimum(1.0, (steps + 1) / 4)
    np.testing.assert_allclose(rates(warmed, steps), expected, rtol=1e-6)
    assert float(warmed(0)) == pytest.approx(float(plain(0)) / 4)
    np.testing.assert_array_equal(rates(warmed, range(3, 100)), rates(plain, range(3, 100)))


def test_no_warmup_field_is_no_warmup():
    with_zero = stage_schedule(optim(schedule="cosine", warmup_steps=0), 10, 100)
    without = stage_schedule(optim(schedule="cosine"), 10, 100)
    np.testing.assert_array_equal(rates(with_zero, range(20)), rates(without, range(20)))
