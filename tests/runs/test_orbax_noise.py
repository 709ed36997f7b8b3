"""What a failed checkpoint write prints besides its error: kept off the console."""

import io
import logging as python_logging
import sys
import types

from absl import logging

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


def test_quiet_console_filters_what_prints_for_a_person_but_not_files(monkeypatch, tmp_path):
    """What a notebook's stages.run prints: the root logger's plain stream handler
    (logging.basicConfig's) and Python's last resort are filtered, a log file is not."""
    monkeypatch.setattr(sys, "unraisablehook", sys.unraisablehook)  # restored after
    console, log_file = io.StringIO(), python_logging.FileHandler(tmp_path / "log.txt")
    stream = python_logging.StreamHandler(console)
    root = python_logging.getLogger()
    handlers = [stream, log_file, python_logging.lastResort]
    for handler in [*handlers, logging.get_absl_handler()]:
        monkeypatch.setattr(handler, "filters", [])
    monkeypatch.setattr(root, "handlers", [stream, log_file])
    orbax_noise.quiet_console()
    orbax_noise.quiet_console()  # once
    read_only = record("absl", python_logging.WARNING, "/orbax/checkpoint/checkpoint_manager.py",
                       "Given directory is read only=/runs/a/checkpoints/mcqvae")
    ours = record("absl", python_logging.WARNING, "/causal_disent/runs/checkpoint.py",
                  "a half-written checkpoint")
    for handler in handlers:
        assert handler.filters.count(orbax_noise.quiet_orbax_info) == (handler is not log_file)
    root.handle(read_only)
    root.handle(ours)
    log_file.close()
    assert console.getvalue() == "a half-written checkpoint\n"
    assert (tmp_path / "log.txt").read_text().splitlines() == [
        "Given directory is read only=/runs/a/checkpoints/mcqvae", "a half-written checkpoint"]
    assert not python_logging.lastResort.filter(read_only)
