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
INFO line there.
"""

import logging as python_logging
import sys

from absl import logging

_CLOSED_LOOP = "Event loop is closed"


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
