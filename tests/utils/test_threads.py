import threading
import time

import numpy as np
import pytest

from causal_disent.utils import sharding, threads


def test_results_come_in_order_however_long_each_takes():
    def slow_first(item):
        time.sleep(0.02 * (5 - item))  # item 0 finishes last
        return item * item

    assert list(threads.ordered_map(slow_first, range(6), workers=3)) == [0, 1, 4, 9, 16, 25]


def test_an_items_error_is_raised_in_its_turn():
    def fails_at_three(item):
        if item == 3:
            raise ValueError("item three")
        return item

    results = threads.ordered_map(fails_at_three, range(8), workers=2)
    assert [next(results) for _ in range(3)] == [0, 1, 2]
    with pytest.raises(ValueError, match="item three"):
        next(results)


def test_work_stays_within_its_lead_and_stops_with_the_consumer():
    started = []
    lock = threading.Lock()

    def record(item):
        with lock:
            started.append(item)
        return item

    results = threads.ordered_map(record, range(1000), workers=2, ahead=4)
    assert next(results) == 0
    time.sleep(0.05)
    assert len(started) <= 5  # the item consumed and at most 4 ahead of it
    results.close()  # the consumer stops: nothing more starts
    count = len(started)
    time.sleep(0.05)
    assert len(started) == count < 1000


def test_padded_global_batches_made_on_threads_are_those_made_one_by_one():
    def host_rows(index):
        return {"x": np.asarray(index) * 10}

    made = list(sharding.padded_global_batches(11, 4, None, host_rows))
    assert [(start, keep) for start, _, keep in made] == [(0, 4), (4, 4), (8, 3)]
    np.testing.assert_array_equal(made[2][1]["x"], [80, 90, 100, 0])  # wraps around
    np.testing.assert_array_equal(made[2][1]["valid"], [1, 1, 1, 0])
