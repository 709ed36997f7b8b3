"""A compiled call's memory against what the host has left, before it first runs.

On a GPU or TPU, XLA knows the device's memory and fails an allocation that does not
fit with RESOURCE_EXHAUSTED, which train/out_of_memory.py turns into one line. On a
CPU the device memory is the host's, and Linux grants every allocation until the
kernel kills the process: a β-VAE :tiny run with `vae.optim.batch_size=100000` was
killed ("Killed", status 137) on a 24 GiB machine while its first step ran, and a
`:small` run with `vae.train.eval_batch_size=73728` while its first evaluation ran,
with nothing said. XLA plans every buffer of a program when it compiles it
(`memory_analysis()`), so the need is known before the call: a call that needs more
than the host has available raises MemoryError instead, which the stage (or
`causal_disent.evaluate`) reports as running out of the host's memory, naming the
fields to lower. The training runner compiles its calls ahead itself; evaluations
wrap their jitted functions in `compiled_ahead`.
"""

from pathlib import Path

import jax
from absl import logging

from causal_disent.utils import console

_GIB = 2**30
_TIGHT = 0.75  # of the available memory: above it, the console says so
# What a checkpoint written in the background costs, in bytes of the state it saves:
# the calls that follow cannot write over the state Orbax still reads (their outputs
# take new buffers), and Orbax's writer holds about as much again while it writes
# (measured on 2 CPU cores: 0.84-0.93 of the state for random arrays of 0.2-3.4 GiB,
# 1.86 with a donating call beside it; a 520-million-parameter β-VAE whose step fitted
# beside one copy was killed after its first save).
SAVE_COST = 2
# Where Linux says what is left: the whole host, and a container's memory cgroup
# (v2, then v1: a limit of about 2**63 means none).
_MEMINFO = Path("/proc/meminfo")
_CGROUP_LIMITS = ((Path("/sys/fs/cgroup/memory.max"), Path("/sys/fs/cgroup/memory.current")),
                  (Path("/sys/fs/cgroup/memory/memory.limit_in_bytes"),
                   Path("/sys/fs/cgroup/memory/memory.usage_in_bytes")))


def available_bytes() -> int | None:
    """The bytes this process can still allocate without the kernel reclaiming them by
    killing it: MemAvailable, or less under a container's limit; None where Linux's
    files are not there (macOS)."""
    found = []
    try:
        for line in _MEMINFO.read_text().splitlines():
            if line.startswith("MemAvailable:"):
                found.append(int(line.split()[1]) * 1024)
    except (OSError, ValueError, IndexError):
        pass
    for limit_file, usage_file in _CGROUP_LIMITS:
        try:
            limit = int(limit_file.read_text().strip())  # "max" (no limit) is a ValueError
            found.append(limit - int(usage_file.read_text().strip()))
        except (OSError, ValueError):
            continue
        break
    return min(found) if found else None


def new_bytes(executable) -> int | None:
    """The bytes a call of the compiled `executable` allocates on this host beyond its
    inputs: its temporaries and the outputs not written over donated inputs, on each
    of the host's devices it runs on (XLA plans one device's program; CPU devices
    share the host's memory), or None if XLA gives no plan."""
    stats = executable.memory_analysis()
    if stats is None:
        return None
    shardings = jax.tree.leaves((executable.input_shardings, executable.output_shardings))
    devices = max((len(sharding.addressable_devices) for sharding in shardings), default=1)
    per_device = stats.temp_size_in_bytes + stats.output_size_in_bytes - stats.alias_size_in_bytes
    return per_device * devices


def array_bytes(tree) -> int:
    """The bytes of a pytree's arrays, each counted once however many devices hold a
    replica of it (a checkpoint copies one)."""
    return sum(int(getattr(leaf, "nbytes", 0)) for leaf in jax.tree.leaves(tree))


def check_fits(executable, what: str, stage: str | None = None,
               field: str | None = None, saved_state_bytes: int = 0) -> None:
    """MemoryError when `what` (a compiled call on CPU devices) would allocate more
    than the host has available, and a console note naming `field` (default:
    `stage`.optim.batch_size and the model's sizes) when it would leave under a
    quarter of it (the input pipeline allocates its batches beside it: 16.8 of 22 GiB
    was killed); nothing on other platforms, which report it themselves.
    `saved_state_bytes`: the state's bytes, when a checkpoint of it may be written in
    the background while the calls go on; such a save costs `SAVE_COST` times them."""
    if jax.devices()[0].platform != "cpu":
        return
    needed, available = new_bytes(executable), available_bytes()
    if needed is None or available is None:
        return
    planned = f"{what} needs {needed / _GIB:.1f} GiB beyond its inputs, by XLA's plan of it, "
    if saved_state_bytes:
        saving = SAVE_COST * saved_state_bytes
        planned += (f"and a checkpoint being written {saving / _GIB:.1f} GiB beside it "
                    f"({SAVE_COST} times the state's {saved_state_bytes / _GIB:.1f} GiB); "
                    "the host has ")
        needed += saving
    else:
        planned += "and the host has "
    planned += f"{available / _GIB:.1f} GiB available"
    prefix = f"[{stage}] " if stage else ""
    logging.info("%s%s", prefix, planned)  # log.txt: what a killed run had been told
    if needed > available:
        raise MemoryError(planned)
    if needed > _TIGHT * available:
        lower = field or f"{stage}.optim.batch_size or the sizes in {stage}.model"
        console.say(f"{prefix}note: {planned}; if the system kills the run (status 137, "
                    f"\"Killed\"), lower {lower}")


def compile_checked(jitted, args: tuple, what: str, stage: str | None = None,
                    field: str | None = None, saved_state_bytes: int = 0):
    """`jitted` compiled for `args` and its memory held against the host's
    (`check_fits`, with the other arguments) before anything runs it: the executable
    to call with `args`' kind of input."""
    executable = jitted.trace(*args).lower().compile()
    check_fits(executable, what, stage, field, saved_state_bytes)
    return executable


def compiled_ahead(jitted, what: str, field: str):
    """`jitted` (a jax.jit function without static arguments), or on CPU devices the
    same function compiled ahead of its first call with each kind of input (the
    leaves' shapes, dtypes and shardings), its memory held against the host's
    (`check_fits`, naming `field` in the note) before that program first runs; later
    calls of the kind run the same executable, as jit's own cache would."""
    if jax.devices()[0].platform != "cpu":
        return jitted
    executables = {}

    def call(*args):
        leaves, structure = jax.tree.flatten(args)
        kind = (structure, tuple((jax.typeof(leaf), getattr(leaf, "sharding", None))
                                 for leaf in leaves))
        executable = executables.get(kind)
        if executable is None:
            executable = compile_checked(jitted, args, what, field=field)
            executables[kind] = executable
        return executable(*args)

    return call
