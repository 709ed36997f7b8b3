"""What a run tells the person watching it, on stdout (process 0 only).

The console carries short human lines: what is compiling, training progress with
its ETA, learning-curve points, where results landed, and the summary at the end.
Library detail goes to the absl log: `log_to_file` keeps all of it (INFO and up) in a
run's WORKDIR/log.txt and `quiet_stderr` keeps only warnings and errors on stderr, so
third-party INFO chatter (the "Unable to initialize backend 'tpu'" probe, Orbax's
per-save lines) stays out of sight but on record.

On a terminal the progress line is redrawn in place; elsewhere (a log file, a
notebook, CI) each update is a line of its own.
"""

from __future__ import annotations

import logging as python_logging
import math
import os
import sys
from pathlib import Path

import jax
from absl import logging

_BAR_WIDTH = 20
_progress_open = False  # a redrawn progress line awaits its newline


def say(message: str, every_process: bool = False) -> None:
    """Prints `message` as a line of its own and logs it: on process 0, or with
    `every_process` on each process (prefixed with its index when there are several:
    what each host did, e.g. which checkpoint it restored)."""
    global _progress_open
    if every_process and jax.process_count() > 1:
        message = f"[process {jax.process_index()}] {message}"
    logging.info("%s", message)
    if jax.process_index() != 0 and not every_process:
        return
    if _progress_open:
        sys.stdout.write("\n")
        _progress_open = False
    print(message, flush=True)


def progress(prefix: str, done: int, total: int, details: str) -> None:
    """`prefix` step done/total with a bar and `details` (rates, ETA, metrics)."""
    global _progress_open
    fraction = done / total if total else 1.0
    filled = round(fraction * _BAR_WIDTH)
    line = (f"{prefix} {'#' * filled}{'.' * (_BAR_WIDTH - filled)} {done}/{total} "
            f"({100 * fraction:.0f}%) {details}")
    logging.info("%s", line)
    if jax.process_index() != 0:
        return
    if _interactive():
        sys.stdout.write("\r\033[K" + line)
        sys.stdout.flush()
        _progress_open = done < total
        if not _progress_open:
            sys.stdout.write("\n")
    else:
        print(line, flush=True)


def _interactive() -> bool:
    return sys.stdout.isatty()


def exit_at_once(status: int, line: str | None = None) -> None:
    """Ends the process with `status` now, past the interpreter's teardown and the
    exit handlers (the main thread may be inside XLA, or waiting for another process),
    after writing `line` on stderr and flushing stdout, stderr and the log."""
    sys.stdout.flush()
    if line is not None:
        sys.stderr.write(line + "\n")
    sys.stderr.flush()
    for handler in python_logging.getLogger().handlers:
        handler.flush()
    os._exit(status)  # pylint: disable=protected-access


def log_to_file(path: Path) -> python_logging.Handler | None:
    """Appends every log record of INFO and up (the library's through absl, and other
    libraries') to `path` (process 0); returns the handler so a caller can remove it."""
    if jax.process_index() != 0:
        return None
    path.parent.mkdir(parents=True, exist_ok=True)
    handler = _LogFile(path)
    handler.setLevel(python_logging.INFO)
    handler.setFormatter(python_logging.Formatter(
        "%(asctime)s %(levelname)s %(module)s: %(message)s"))
    python_logging.getLogger().addHandler(handler)  # absl logs through the root logger
    return handler


class _LogFile(python_logging.FileHandler):
    """A file log that, when it cannot write (a full disk), says so in one line on
    stderr and writes nothing more, where logging's default prints a traceback for
    every record after it and its close raises over the run's own error."""

    def __init__(self, path: Path):
        super().__init__(path)
        self.failed = False

    def emit(self, record: python_logging.LogRecord) -> None:
        if not self.failed:
            super().emit(record)

    def handleError(self, record: python_logging.LogRecord) -> None:
        self._give_up(sys.exc_info()[1])

    def flush(self) -> None:
        try:
            super().flush()
        except OSError as error:
            self._give_up(error)

    def close(self) -> None:
        try:
            super().close()
        except OSError as error:  # its last flush
            self._give_up(error)

    def _give_up(self, error: BaseException | None) -> None:
        if self.failed:
            return
        self.failed = True
        reason = getattr(error, "strerror", None) or error
        print(f"warning: cannot write {self.baseFilename} ({reason}); the run goes on "
              f"without it", file=sys.stderr, flush=True)


def quiet_stderr() -> None:
    """Only warnings and errors reach stderr through absl's handler."""
    logging.get_absl_handler().setLevel(python_logging.WARNING)


def format_duration(seconds: float) -> str:
    """1h02m03s, 4m05s, or ? when unknown (not finite)."""
    if not math.isfinite(seconds):
        return "?"
    minutes, secs = divmod(int(round(seconds)), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m{secs:02d}s" if hours else f"{minutes}m{secs:02d}s"
