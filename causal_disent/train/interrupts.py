"""SIGTERM and SIGINT during training: finish the step, save it, exit cleanly.

Preemption (TPU VMs, SLURM's `--signal`, Kubernetes) sends SIGTERM and leaves a grace
period; Ctrl-C sends SIGINT. Raising from the signal handler would abandon the step
in flight, whose input buffers are already donated, so nothing could be saved. Inside
`deferred()` (which `loop.fit` wraps around its steps) the handler only records the
signal; the loop asks `requested()` after each step, saves that step and raises
`Interrupted`. Outside training (compiling, evaluating) the handler raises
`Interrupted` at once: the last checkpoint on disk is where a rerun resumes.

A second signal while one is pending raises at once, for a user who will not wait.
"""

import contextlib
import signal
import threading
from collections.abc import Iterator

import jax
import numpy as np
from absl import logging

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


_pending: int | None = None  # the signal recorded inside `deferred()`
_deferring = False


def _handle(signal_number: int, frame) -> None:
    global _pending
    if _deferring and _pending is None:
        _pending = signal_number
        logging.warning("%s received: saving a checkpoint after the current step "
                        "(send it again to stop at once)", signal.Signals(signal_number).name)
        return
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
    global _deferring, _pending
    outer = _deferring
    _deferring, _pending = True, None
    try:
        with handled():
            yield
    finally:
        _deferring, _pending = outer, None


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
