"""What a failed checkpoint write prints besides its error: kept off the console."""

import io
import logging as python_logging
import sys
import types

import orbax.checkpoint as ocp
from absl import logging

from causal_disent.runs import checkpoint, orbax_noise


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
    routine = record("absl", python_logging.INFO, "/orbax/checkpoint/checkpoint_manager.py",
                     "Saving checkpoint at step 10")
    ours = record("absl", python_logging.WARNING, "/causal_disent/runs/checkpoint.py",
                  "a half-written checkpoint")
    for handler in handlers:
        assert handler.filters.count(orbax_noise.quiet_orbax_info) == (handler is not log_file)
    root.handle(routine)
    root.handle(ours)
    log_file.close()
    assert console.getvalue() == "a half-written checkpoint\n"
    assert (tmp_path / "log.txt").read_text().splitlines() == [
        "Saving checkpoint at step 10", "a half-written checkpoint"]
    assert not python_logging.lastResort.filter(routine)


def test_opening_checkpoints_read_only_logs_no_warning_and_other_records_pass(tmp_path):
    """Loading a trained model opens read-only managers; orbax's warning for each
    reached a script's console (three lines for a CT-VAE) and every log file."""
    seen = []
    handler = python_logging.Handler()
    handler.emit = seen.append
    absl_logger = python_logging.getLogger("absl")
    absl_logger.addHandler(handler)
    try:
        reading = checkpoint.StageCheckpoints(tmp_path, "stage", {"k": 1}, 1, 1,
                                              read_only=True)
        reading.close()
        with orbax_noise.read_only_warning_dropped():
            logging.warning("a warning of ours")
        ocp.CheckpointManager(tmp_path / "direct", options=ocp.CheckpointManagerOptions(
            read_only=True, create=False, save_interval_steps=0)).close()  # outside: logged
    finally:
        absl_logger.removeHandler(handler)
    messages = [seen_record.getMessage() for seen_record in seen
                if seen_record.levelno >= python_logging.WARNING]
    assert messages == ["a warning of ours",
                        f"Given directory is read only={tmp_path / 'direct'}"]
    assert not absl_logger.filters  # the filter is gone after the block
