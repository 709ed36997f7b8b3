"""Several training steps in one compiled call (`train.steps_per_call = k`).

On an accelerator a small model's step takes about a millisecond, as long as the
host needs to dispatch it, move its batch and check it; the device then idles half
the time. With k > 1 the runner compiles `lax.scan` over k steps: one dispatch and
one transfer of k stacked batches per call, each step's metrics stacked on the
device ([k, ...]) and fetched with the others at a log step. Logging, checkpoints,
curve points, signal and deadline checks fall on call boundaries, so the config's
intervals must be multiples of k (`check_config`). With k = 1 the plain jitted step
runs, exactly as before.

How the k steps run (`train.unroll_call`): unrolled into one straight program, or
as a loop (`lax.scan` keeps it a loop). XLA:CPU runs a convolutional step inside a
loop many times slower than unrolled; XLA:GPU runs a loop's control on the host,
which waits on the device at every iteration (jax-ml/jax#2491), so the host cannot
queue the next call while one runs. "auto" unrolls on CPUs and keeps the loop on
accelerators (it compiles the step once for any k); "on" and "off" choose.

`train.steps_per_call = 0` ("auto", every config's default) chooses k where the stage
starts (`steps_per_call`): 1 on CPUs, whose steps are long enough that k > 1 gains next
to nothing (and k = 1 is bit for bit the loop as it was); on GPUs and TPUs the largest
k up to AUTO_MAX_STEPS_PER_CALL that divides the stage's intervals, its length and the
step it starts from, so that "auto" never makes a config invalid. On a GPU every
stage measured ran faster at ten steps a call than at one (docs/measured_choices.md).

A stage with several step functions (CT-VAE stage 2's modes) scans over
`lax.switch` on each step's mode index. Its modes return different metrics, so
each branch returns the union of their names (zeros where a mode has none); the
rows the host writes keep only the names of the step's own mode (`Rows`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator, Sequence

import jax
import jax.numpy as jnp
import ml_collections
import numpy as np

from causal_disent.train import config_ranges

UNROLL_SETTINGS = ("auto", "on", "off")  # train.unroll_call
AUTO = 0  # train.steps_per_call: chosen where the stage starts (`steps_per_call`)
AUTO_MAX_STEPS_PER_CALL = 10
# Intervals that must be multiples of steps_per_call (0 means "never" for the last).
_ALIGNED_FIELDS = ("log_every_steps", "checkpoint_every_steps", "num_steps", "eval_every_steps")
# Those that are intervals ("auto" takes the stage's length as it runs, epochs included).
_INTERVAL_FIELDS = tuple(name for name in _ALIGNED_FIELDS if name != "num_steps")


def check_config(config: ml_collections.ConfigDict) -> None:
    """Raises ValueError naming the first train section whose `steps_per_call` is not
    an integer >= 0 (0: auto), or whose step intervals are not multiples of one it
    sets; every section holding a `steps_per_call` is checked, wherever it sits; so
    is `unroll_call`."""
    for path, section in config_ranges.sections_with(config, "steps_per_call"):
        k = section.steps_per_call
        if not isinstance(k, int) or isinstance(k, bool) or k < 0:
            raise ValueError(f"{path}.steps_per_call must be an integer >= 1, or 0 to "
                             f"choose by the devices; got {k!r}")
        unroll = section.get("unroll_call", "auto")
        if unroll not in UNROLL_SETTINGS:
            raise ValueError(f"{path}.unroll_call must be one of {UNROLL_SETTINGS}, got "
                             f"{unroll!r}")
        if k == AUTO:
            continue
        for name in _ALIGNED_FIELDS:
            value = section.get(name, 0)
            if isinstance(value, int) and value % k:
                nearest = max(k, round(value / k) * k)
                raise ValueError(
                    f"{path}.{name} = {value} is not a multiple of {path}.steps_per_call "
                    f"= {k}: logs, checkpoints, curve points and the end fall between "
                    f"calls of {k} steps; use e.g. --config.{path}.{name}={nearest}"
                )


def steps_per_call(train_config, platform: str, total_steps: int, first_step: int,
                   several_allowed: bool = True) -> int:
    """The k a stage trains with, on devices of `platform`, for `total_steps` from
    `first_step`: `train.steps_per_call` when set; for 0 (auto) 1 on CPUs and where
    the stage cannot run several steps a call (`several_allowed` False), else the
    largest k <= AUTO_MAX_STEPS_PER_CALL dividing the log, checkpoint and curve
    intervals, `total_steps` and `first_step` (a run paused or saved at another k)."""
    k = train_config.get("steps_per_call", 1)
    if k != AUTO:
        return k
    if platform == "cpu" or not several_allowed:
        return 1
    # gcd(n, 0) = n: an interval of 0 ("never") or a start at step 0 constrains nothing.
    common = math.gcd(total_steps, first_step,
                      *(train_config.get(name, 0) for name in _INTERVAL_FIELDS))
    return max(k for k in range(1, AUTO_MAX_STEPS_PER_CALL + 1) if common % k == 0)


def auto_shortfall(train_config, platform: str, total_steps: int, first_step: int,
                   several_allowed: bool, k: int) -> str | None:
    """A console line when "auto" gave an accelerator fewer than
    AUTO_MAX_STEPS_PER_CALL steps a call because the stage's numbers allow no more
    (a length from epochs, say), naming them; None otherwise."""
    if (train_config.get("steps_per_call", 1) != AUTO or platform == "cpu"
            or not several_allowed or k == AUTO_MAX_STEPS_PER_CALL):
        return None
    numbers = [(f"train.{name}", train_config.get(name, 0)) for name in _INTERVAL_FIELDS]
    numbers += [("its length", total_steps), ("the step it starts from", first_step)]
    named = ", ".join(f"{name} {value}" for name, value in numbers if value)
    return (f"{k} step{'s' * (k > 1)} a call on the {platform} (train.steps_per_call = 0, "
            f"auto): no larger k up to {AUTO_MAX_STEPS_PER_CALL} divides {named}; "
            f"multiples of {AUTO_MAX_STEPS_PER_CALL} would let each call run "
            f"{AUTO_MAX_STEPS_PER_CALL}")


def check_total_steps(stage: str, total_steps: int, first_step: int, k: int) -> None:
    """The run's ends must fall on call boundaries (epoch-based totals are known only
    now, and a checkpoint saved with another k may sit between them)."""
    if total_steps % k:
        raise ValueError(
            f"stage {stage} trains {total_steps} steps, not a multiple of its "
            f"train.steps_per_call = {k}; set its train.num_steps to a multiple of {k}"
        )
    if first_step % k:
        raise ValueError(
            f"stage {stage} resumes from step {first_step}, saved with another "
            f"train.steps_per_call, not a multiple of {k}: finish the run with "
            f"--config.<stage>.train.steps_per_call=1, or one that divides {first_step}"
        )


def grouped(batches: Iterable[dict], k: int) -> Iterator[dict]:
    """Each k consecutive host batches stacked into one: [k, ...] per key."""
    batches = iter(batches)
    while True:
        group = [batch for _, batch in zip(range(k), batches)]
        if not group:
            return
        if len(group) < k:
            raise ValueError(f"{len(group)} batches left, fewer than a call's {k}")
        yield {key: np.stack([batch[key] for batch in group]) for key in group[0]}


def unrolled(setting: str, platform: str) -> bool:
    """Whether a call's k steps are unrolled into one straight program rather than
    a loop, for `train.unroll_call` = `setting` on devices of `platform` (the module
    docstring says why "auto" unrolls on CPUs only)."""
    if setting not in UNROLL_SETTINGS:
        raise ValueError(f"unroll_call must be one of {UNROLL_SETTINGS}, got {setting!r}")
    return platform == "cpu" if setting == "auto" else setting == "on"


def scanned(step: Callable, unroll: bool = False) -> Callable:
    """(state, batches [k, ...], rng) -> (state, metrics [k, ...]): `step` k times."""

    def call(state, batches, rng):
        def body(state, batch):
            return step(state, batch, rng)

        return jax.lax.scan(body, state, batches, unroll=unroll)

    return call


class Rows:
    """Turns one call's fetched metrics into the loop's rows (step, metrics), one per
    step, for a stage with one step function or several modes."""

    def __init__(self, mode_names: Sequence[str] | None = None):
        self.mode_names = tuple(mode_names) if mode_names else None
        # mode -> the metric names its step really returns; filled while tracing.
        self.names_of_mode: dict[str, tuple[str, ...]] = {}

    def __call__(self, first_step: int, metrics: dict, modes: Sequence[str] | None = None):
        count = len(next(iter(metrics.values())))
        rows = []
        for index in range(count):
            row = {name: value[index] for name, value in metrics.items()}
            if modes is not None:
                mode = modes[index]
                row = {name: row[name] for name in self.names_of_mode[mode]}
                row["mode"] = mode
            rows.append((first_step + index + 1, row))
        return rows


def scanned_modes(steps: dict[str, Callable], rows: Rows, unroll: bool = False) -> Callable:
    """(state, batches [k, ...], rng, mode_index [k]) -> (state, metrics [k, ...]):
    step i runs the step function of mode `rows.mode_names[mode_index[i]]`; every
    branch returns the union of the modes' metric names (zeros for names its mode
    lacks), and `rows` learns which names are each mode's."""
    names = rows.mode_names

    def call(state, batches, rng, mode_index):
        one_batch = jax.tree.map(lambda x: x[0], batches)
        shapes = {mode: jax.eval_shape(steps[mode], state, one_batch, rng)[1]
                  for mode in names}
        for mode, metrics in shapes.items():
            rows.names_of_mode[mode] = tuple(metrics)
        union = {}
        for metrics in shapes.values():
            union.update(metrics)

        def branch(mode):
            def run(state, batch):
                state, metrics = steps[mode](state, batch, rng)
                return state, {name: metrics[name] if name in metrics
                               else jnp.zeros(spec.shape, spec.dtype)
                               for name, spec in union.items()}
            return run

        branches = [branch(mode) for mode in names]

        def body(state, inputs):
            batch, index = inputs
            return jax.lax.switch(index, branches, state, batch)

        return jax.lax.scan(body, state, (batches, mode_index), unroll=unroll)

    return call
