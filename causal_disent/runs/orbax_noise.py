"""What a failed checkpoint write prints besides its error, kept off the console.

Orbax writes a state's arrays as many parallel TensorStore operations on an event loop
of its own. When one fails (a full disk), orbax raises its error, which the run turns
into one `error:` line (runs/checkpoint.py), and closes the loop with the others still
in flight (a failed read would do the same; restores read a step's values first to
avoid it). Each of those then reports, as it ends, that "Event loop is closed"
(through `sys.unraisablehook`, a traceback each) or that a task's or future's
"exception was never retrieved" (asyncio's logger); orbax's own threads log the
failure with its traceback too. A tiny MCQ-VAE's full disk printed dozens of
tracebacks after the one line that matters. These filters keep them off the console:
the log records still reach the run's log.txt, and each unraisable report becomes one
INFO line there. `quiet_orbax_info` keeps orbax's routine lines off the console too.

`read_only_warning_dropped` drops the warning orbax logs whenever a checkpoint manager
is opened read-only (restoring a finished stage, loading a trained model), which the
library does on purpose: loading a CT-VAE in a script printed it three times.

`quiet_console` puts these filters on every handler that prints for a person, so that
`stages.run` called from a notebook shows what the command line shows.
"""

import contextlib
import logging as python_logging
import sys

from absl import logging

_CLOSED_LOOP = "Event loop is closed"
_READ_ONLY = "Given directory is read only"


def quiet_console() -> None:
    """Puts `quiet_orbax_info` and `console_filter` on the handlers that print log
    records on the console: absl's (under absl.app), the root logger's stream handlers
    (logging.basicConfig's, which the first module-level logging call makes, as in a
    notebook) and Python's last resort; and installs the unraisable filter. Files keep
    every record. Calling it again adds nothing."""
    root = python_logging.getLogger()
    handlers = [logging.get_absl_handler(), python_logging.lastResort,
                *(handler for handler in root.handlers
                  if type(handler) is python_logging.StreamHandler)]  # not files
    for handler in handlers:
        if handler is not None:
            handler.addFilter(quiet_orbax_info)  # a filter already there is not added
            handler.addFilter(console_filter)
    install_unraisable_filter()


def console_filter(record: python_logging.LogRecord) -> bool:
    """A console log filter: False for orbax's errors (a failed save or restore, which
    the run's error line names) and asyncio's "exception was never retrieved" (the
    operations a failed one left in flight)."""
    if record.levelno < python_logging.ERROR:
        return True
    if "orbax" in record.pathname:
        return False
    return not (record.name == "asyncio" and "was never retrieved" in record.getMessage())


def install_unraisable_filter() -> None:
    """Reports of an operation finishing after its event loop closed go to the log
    file as one INFO line each; every other unraisable exception to the hook before."""
    previous = sys.unraisablehook
    if getattr(previous, "drops_closed_loop_reports", False):
        return  # installed already

    def hook(unraisable) -> None:
        if (isinstance(unraisable.exc_value, RuntimeError)
                and str(unraisable.exc_value) == _CLOSED_LOOP):
            logging.info("an I/O operation ended after orbax closed its event loop "
                         "(it follows a failed checkpoint read or write)")
            return
        previous(unraisable)

    hook.drops_closed_loop_reports = True
    hook.__wrapped__ = previous
    sys.unraisablehook = hook


def quiet_orbax_info(record: python_logging.LogRecord) -> bool:
    """A log filter that keeps orbax's per-save INFO lines out of the console; its
    warnings still show."""
    return "orbax" not in record.pathname or record.levelno >= python_logging.WARNING


@contextlib.contextmanager
def read_only_warning_dropped():
    """Within it, orbax's "Given directory is read only" warning is dropped before any
    handler (console or file) sees it: opening a manager read-only is the library's
    choice, not a fault, and nothing else is wrong when orbax says so. Other records
    pass. A filter on absl's logger, which orbax logs through."""
    logger = python_logging.getLogger("absl")

    def keep(record: python_logging.LogRecord) -> bool:
        return not ("orbax" in record.pathname and record.getMessage().startswith(_READ_ONLY))

    logger.addFilter(keep)
    try:
        yield
    finally:
        logger.removeFilter(keep)
