"""A wall-clock budget for the whole process, so that a long run can be cut into
commands of a few minutes each that resume one another (preemptible machines).

`main --max_minutes=M` makes a `Deadline(M)`; `stages.run` makes it the process's
current deadline (`active`) while the stages run, and `loop.fit` reads it
(`current`) unless it is given one. When the budget is spent, `fit` checkpoints
the step it has completed and raises `TimeBudgetExhausted`; rerunning the same
command resumes from that checkpoint.

`main --pause_at_step=S` gives the budget a step as well: a stage pauses in the same
way once it reaches step S, so the first S steps of a long run can be read (early
probes of its metrics) and the run continued later, rerun without the flag, to the
result it would have had uninterrupted.

The deadline is ambient rather than an argument of every stage's `run` because it
belongs to the process, not to a stage: every stage that trains through
`loop.fit` honours it without plumbing of its own.
"""

import contextlib
import time
from collections.abc import Callable, Iterator

import jax
import numpy as np


class TimeBudgetExhausted(Exception):
    """The process's time budget ran out; `stage` stopped at `step` (its last
    checkpoint, or its start when it had not begun) of `total_steps`. `trained`: whether
    this process trained any step before (False: start-up took the whole budget, and a
    rerun with the same budget may pause at the same step again)."""

    def __init__(self, stage: str, step: int, total_steps: int, elapsed_minutes: float,
                 trained: bool = True, at_pause_step: bool = False):
        self.stage = stage
        self.step = step
        self.total_steps = total_steps
        self.elapsed_minutes = elapsed_minutes
        self.trained = trained
        # True when the budget's pause step, not its minutes, stopped the stage.
        self.at_pause_step = at_pause_step
        super().__init__(
            f"stage {stage} at step {step} of {total_steps} after "
            f"{elapsed_minutes:.1f} minutes"
        )


class Deadline:
    """Expires `minutes` after it is made; never when `minutes` is 0. With
    `pause_at_step` S > 0, a stage also stops once it has reached step S.

    `clock` returns seconds (default time.monotonic); tests pass a fake one.
    """

    def __init__(self, minutes: float = 0.0, clock: Callable[[], float] = time.monotonic,
                 pause_at_step: int = 0):
        if minutes < 0:
            raise ValueError(f"a time budget must be >= 0 minutes (0 = unlimited), got {minutes}")
        if pause_at_step < 0:
            raise ValueError(f"a pause step must be >= 0 (0 = none), got {pause_at_step}")
        self.minutes = float(minutes)
        self.pause_at_step = int(pause_at_step)
        self._clock = clock
        self._start = clock()
        self.trained = False  # set by loop.fit once a step of this budget has run

    @property
    def unlimited(self) -> bool:
        return self.minutes == 0

    def elapsed_minutes(self) -> float:
        return (self._clock() - self._start) / 60

    def expired(self) -> bool:
        return not self.unlimited and self.elapsed_minutes() >= self.minutes

    def step_reached(self, step: int) -> bool:
        """Whether a stage at `step` has reached the pause step (the same on every
        process, as every process is at the same step)."""
        return self.pause_at_step > 0 and step >= self.pause_at_step


def expired_on_every_host(deadline: Deadline) -> bool:
    """Process 0's `deadline.expired()`, on every process.

    Hosts' clocks differ, and a host that stopped a step before the others would
    leave them waiting in a collective; so with several processes this is itself a
    collective that every process must call at the same steps.
    """
    if deadline.unlimited:
        return False
    expired = deadline.expired()
    if jax.process_count() == 1:
        return expired
    from jax.experimental import multihost_utils  # only multi-host runs need it

    return bool(multihost_utils.broadcast_one_to_all(np.array(expired)))


_UNLIMITED = Deadline(0.0)
_current = _UNLIMITED


def current() -> Deadline:
    """The deadline set by the innermost `active`, else an unlimited one."""
    return _current


@contextlib.contextmanager
def active(deadline: Deadline) -> Iterator[Deadline]:
    """Makes `deadline` the process's current deadline inside the `with` block."""
    global _current
    previous, _current = _current, deadline
    try:
        yield deadline
    finally:
        _current = previous
