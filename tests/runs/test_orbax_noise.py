"""What a failed checkpoint write prints besides its error: kept off the console."""

import logging as python_logging
import sys
import types

from causal_disent.runs import orbax_noise


def record(name, level, pathname, message):
    return python_logging.LogRecord(name, level, pathname, 1, message, None, None)


def test_the_console_filter_drops_orbaxs_errors_and_unretrieved_task_reports_only():
    orbax_file = "/site-packages/orbax/checkpoint/_src/futures/future.py"
    assert not orbax_noise.console_filter(
        record("absl", python_logging.ERROR, orbax_file, "_SignalingThread.run() raised"))
    assert orbax_noise.console_filter(
        record("absl", python_logging.WARNING, orbax_file, "a warning still shows"))
    assert not orbax_noise.console_filter(
        record("asyncio", python_logging.ERROR, "/asyncio/base_events.py",
               "Task exception was never retrieved"))
    assert orbax_noise.console_filter(
        record("asyncio", python_logging.ERROR, "/asyncio/base_events.py", "something else"))
    assert orbax_noise.console_filter(
        record("absl", python_logging.ERROR, "/causal_disent/train/loop.py", "ours show"))


def test_the_unraisable_filter_drops_closed_loop_reports_and_passes_the_rest(monkeypatch):
    seen = []
    monkeypatch.setattr(sys, "unraisablehook", seen.append)
    orbax_noise.install_unraisable_filter()
    orbax_noise.install_unraisable_filter()  # once: not wrapped twice

    def report(error):
        sys.unraisablehook(types.SimpleNamespace(exc_type=type(error), exc_value=error,
                                                 exc_traceback=None, err_msg=None, object=None))

    report(RuntimeError("Event loop is closed"))
    other = RuntimeError("something else")
    report(other)
    assert [unraisable.exc_value for unraisable in seen] == [other]
    assert sys.unraisablehook.__wrapped__ == seen.append  # wrapped once
