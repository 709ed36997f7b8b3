"""SIGTERM and SIGINT during training: finish the step, save it, exit cleanly.

Preemption (TPU VMs, SLURM's `--signal`, Kubernetes) sends SIGTERM and leaves a grace
period; Ctrl-C sends SIGINT. Raising from the signal handler would abandon the step
in flight, whose input buffers are already donated, so nothing could be saved. Inside
`deferred()` (which `loop.fit` wraps around its steps) the handler only records the
signal; the loop asks `requested()` after each step, saves that step and raises
`Interrupted`. Outside training (compiling, evaluating, or before the window's first
step has finished) the handler raises `Interrupted` at once: the last checkpoint on
disk is where a rerun resumes.

A second signal while one is pending raises at once, for a user who will not wait,
unless it comes within SAME_REQUEST_SECONDS of the first: then it is a copy of the
first, which launchers and wrappers forward to a process that the signal also reached
directly (`pkill` matching both `timeout` and its child, slurmd and `srun`, a shell's
trap), and two at once stopped processes without their save.

Python runs a signal handler only between bytecodes of the main thread, so a signal
that lands while it is inside native code (XLA compiling the model's first
initialisation or a step, a device computation) waits seconds for it. The command
line therefore also calls `stop_at_once_outside_training`: a watchdog thread woken by
the signal itself ends the process at once unless training is past its first step
(then the loop saves the step in flight, as above); the handler then raises nothing.
Every exit on a signal goes through `exit_now`, which skips the interpreter's
teardown: tearing the runtime down under a compile in flight crashed with SIGSEGV
(status 139).
"""

import contextlib
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from typing import NoReturn

import jax
import numpy as np
from absl import logging

from causal_disent.utils import console, peer_watch

HANDLED_SIGNALS = (signal.SIGTERM, signal.SIGINT)


class Interrupted(BaseException):
    """A signal stopped the run (a BaseException, like KeyboardInterrupt, so that no
    `except Exception` on the way swallows it). `step` is the step saved (None when the signal came
    outside training, where the last checkpoint on disk stands)."""

    def __init__(self, signal_number: int, stage: str | None = None,
                 step: int | None = None):
        self.signal_number, self.stage, self.step = signal_number, stage, step
        name = signal.Signals(signal_number).name
        where = (f"stage {stage} saved at step {step}" if step is not None
                 else "outside training; the last checkpoint stands")
        super().__init__(f"{name} received: {where}")

    @property
    def exit_status(self) -> int:
        return 128 + self.signal_number  # the shell's convention for a signal


# A signal this soon after the first one in a training window is a copy of it (see the
# module docstring); a user who means "stop now" sends it again after the warning line.
SAME_REQUEST_SECONDS = 1.0

_pending: int | None = None  # the signal recorded inside `deferred()`
_pending_since = 0.0  # when it came (time.monotonic)
_deferring = False
# Inside `deferred()`: whether a step has finished since it opened, i.e. whether there
# is a step worth saving; `_window` counts the windows, for the watchdog's tally.
_step_done = False
_window = 0
_exit_lock = threading.Lock()
# Set by `stop_at_once_outside_training`: the watchdog then ends the process on any
# signal the loop will not save, and the handler must not also raise: an exception
# raised between two bytecodes may land inside a garbage-collection callback (JAX's
# `_xla_gc_callback`), where Python prints "Exception ignored ... Traceback" to stderr.
_watchdog_running = False


def _handle(signal_number: int, frame) -> None:
    global _pending, _pending_since
    if _deferring and _step_done:
        # No logging here: the handler runs between two bytecodes of the main thread,
        # which may be inside a write to stderr, and a reentrant write fails ("---
        # Logging error ---"). The watchdog thread announces it; the loop logs the stop.
        if _pending is None:
            _pending, _pending_since = signal_number, time.monotonic()
            return
        if is_copy(_pending_since, time.monotonic()):
            return
    if _watchdog_running:
        return  # the watchdog, woken by the same signal, ends the process
    raise Interrupted(signal_number)


@contextlib.contextmanager
def handled() -> Iterator[None]:
    """Installs the handler for SIGTERM and SIGINT (main thread only; elsewhere, e.g.
    a worker thread, signals keep their previous handling) and restores the previous
    handlers on exit."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {number: signal.signal(number, _handle) for number in HANDLED_SIGNALS}
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)


@contextlib.contextmanager
def deferred() -> Iterator[None]:
    """Inside, a signal is recorded for `requested()` instead of raised (see module
    docstring); installs the handler too if it is not installed yet."""
    global _deferring, _pending, _step_done, _window
    outer = _deferring
    _deferring, _pending, _step_done, _window = True, None, False, _window + 1
    try:
        with handled():
            yield
    finally:
        _deferring, _pending, _step_done = outer, None, False


def step_finished() -> None:
    """Tells the watchdog that the training window has a step worth saving: from now
    on a first signal waits for the loop to save it instead of ending the process."""
    global _step_done
    _step_done = True


def exit_now(status: int, message: str) -> NoReturn:
    """Prints `message`, flushes the log, and ends the process with `status` without
    the interpreter's teardown (see the module docstring). What a run writes is
    atomic (results, metrics, Orbax checkpoints) or checked when read (the code
    cache, a curve's last line), so nothing saved is lost. The watchdog and the main
    thread may both get here: the first one ends the process."""
    with _exit_lock:
        print(message, flush=True)
        peer_watch.say_bye(status)  # the other --distributed processes stop too
        console.exit_at_once(status)


def stop_at_once_outside_training(message: Callable[[Interrupted], str]) -> None:
    """From now on (call from the main thread, once), SIGTERM and SIGINT end the
    process at once with `exit_now(128 + signal, message(Interrupted(signal)))`,
    except inside `deferred()` after its first step: there the first signal is the
    loop's to save, and a second one in the same window ends the process at once
    (unless it is a copy of the first, `is_copy`)."""
    global _watchdog_running
    read_end, write_end = os.pipe()
    os.set_blocking(write_end, False)
    # The C-level handler writes the signal's number here the moment it arrives,
    # even while the main thread is inside native code.
    signal.set_wakeup_fd(write_end, warn_on_full_buffer=False)
    threading.Thread(target=_watch, args=(read_end, message), daemon=True,
                     name="signal-watchdog").start()
    _watchdog_running = True


def is_copy(first_seconds: float, now_seconds: float) -> bool:
    """Whether a signal at `now_seconds` is a copy of the one pending since
    `first_seconds` (time.monotonic readings) rather than a request to stop at once."""
    return now_seconds - first_seconds < SAME_REQUEST_SECONDS


def _watch(read_end: int, message: Callable[[Interrupted], str]) -> None:
    window, first_seconds = None, None
    while True:
        received = os.read(read_end, 1)
        if not received:
            return
        number = received[0]
        if number not in HANDLED_SIGNALS:
            continue
        if _deferring and _step_done:
            # Logging from this thread is safe: the log handler's lock makes it wait
            # while the main thread writes.
            name, now = signal.Signals(number).name, time.monotonic()
            if window != _window:
                window, first_seconds = _window, None
            if first_seconds is None:  # the loop saves the step in flight, then stops
                first_seconds = now
                logging.warning("%s received: saving a checkpoint after the current step "
                                "(send it again to stop at once)", name)
                continue
            if is_copy(first_seconds, now):
                logging.warning("%s received again within %g s: taken as a copy of the "
                                "first (send it again later to stop at once)", name,
                                SAME_REQUEST_SECONDS)
                continue
        stopped = Interrupted(number)
        exit_now(stopped.exit_status, message(stopped))


def requested(on_every_host: bool = False) -> int | None:
    """The signal recorded inside `deferred()`, or None. With `on_every_host` (a
    collective: every process must call it at the same steps), a signal received by
    any process, so that all stop and save the same step."""
    if not on_every_host or jax.process_count() == 1:
        return _pending
    from jax.experimental import multihost_utils  # only multi-host runs need it

    received = multihost_utils.process_allgather(np.array(_pending or 0))
    signalled = [int(number) for number in np.ravel(received) if number]
    return signalled[0] if signalled else None
