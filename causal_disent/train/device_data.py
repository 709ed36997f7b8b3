"""Training data kept on the devices (`train.device_data`).

The host pipeline renders or reads every batch and copies it to the devices each
step. When the training images (or stage 2's code cache) fit in device memory they
can instead be copied once, as a table replicated on every device; the host then
sends only each step's row indices, drawn from the same seeded order, and the
compiled step gathers its batch itself. The batches are the host pipeline's to the
byte, so training matches it within float rounding (XLA may fuse the gather with
the first layer).

`train.device_data`: "auto" (on for GPUs and TPUs when the table fits; on a CPU the
devices are host memory, so there is nothing to save), "on" (also on a CPU; still
falls back to the host pipeline, with one log line, when the table does not fit) or
"off". A table fits when it is at most `train.device_data_max_gb` and at most
MAX_SHARE_OF_FREE_MEMORY of the free memory of every device that reports it (GPUs
and TPUs), so that a large limit cannot take the memory the step needs; with several
processes, the device with least free memory of all decides for every process, since
all must run the same compiled step.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable

import jax
import numpy as np
from jax.sharding import Mesh

from causal_disent.data import pipeline
from causal_disent.train import config_ranges
from causal_disent.utils import console
from causal_disent.utils.sharding import replicated

SETTINGS = ("auto", "on", "off")


@dataclasses.dataclass(frozen=True)
class DeviceData:
    """A table on the devices and the batches that index it.

    `table`: host arrays, rows on the leading axis, placed on every device once.
    `batches`: this host's batches of row indices (and any small per-row values),
    in the host pipeline's order. `gather(table, batch)`: the step's batch, traced
    inside the compiled step."""

    table: dict[str, np.ndarray]
    batches: Iterable[dict]
    gather: Callable[[dict, dict], dict]


def check_config(config) -> None:
    """ValueError for a train section's device_data or device_data_max_gb out of range."""
    for path, section in config_ranges.sections_with(config, "device_data"):
        if section.device_data not in SETTINGS:
            raise ValueError(f"{path}.device_data must be one of {SETTINGS}, got "
                             f"{section.device_data!r}")
        limit = section.get("device_data_max_gb", 0.0)
        if (not isinstance(limit, (int, float)) or isinstance(limit, bool)
                or not np.isfinite(limit) or limit < 0):
            raise ValueError(f"{path}.device_data_max_gb must be a finite number >= 0, "
                             f"got {limit!r}")


# Of a device's free memory, the most a table may take: the rest is for the model, its
# optimiser state and the step's activations.
MAX_SHARE_OF_FREE_MEMORY = 0.5


def enabled(train_config, platform: str | None = None) -> bool:
    """Whether the train section's `device_data` asks for a table on devices of
    `platform` (default: JAX's), whatever its size: known before the table is."""
    setting = train_config.get("device_data", "off")
    platform = platform or jax.devices()[0].platform
    return not (setting == "off" or (setting == "auto" and platform == "cpu"))


def wanted(stage: str, train_config, table_bytes: int, platform: str | None = None) -> bool:
    """Whether `stage` keeps its table of `table_bytes` on the devices, by the train
    section's `device_data` (`enabled`) and `device_data_max_gb`, the devices'
    `platform` (default: JAX's) and their free memory; says why when it does not fit."""
    if not enabled(train_config, platform):
        return False
    limit = train_config.get("device_data_max_gb", 0.0) * 1e9
    if table_bytes > limit:
        console.say(f"[{stage}] training data of {table_bytes / 1e9:.2f} GB does not fit "
                    f"train.device_data_max_gb = {limit / 1e9:g}: batches come from the "
                    "host pipeline")
        return False
    free = least_free_device_bytes()
    if free is not None and table_bytes > MAX_SHARE_OF_FREE_MEMORY * free:
        console.say(f"[{stage}] training data of {table_bytes / 1e9:.2f} GB is over "
                    f"{MAX_SHARE_OF_FREE_MEMORY:.0%} of a device's free memory "
                    f"({free / 1e9:.2f} GB): batches come from the host pipeline")
        return False
    console.say(f"[{stage}] training data on the devices "
                f"({table_bytes / 1e6:.1f} MB on each)")
    return True


def least_free_device_bytes() -> int | None:
    """The least free memory of any device of any process, in bytes (the same on every
    process), or None when a device does not report it (a CPU)."""
    devices = jax.local_devices()
    free = [_free_bytes(device) for device in devices]
    known = None if None in free else min(free)
    if jax.process_count() == 1 or devices[0].platform == "cpu":
        return known
    from jax.experimental import multihost_utils

    # In MiB as float32 (JAX's default integers would overflow); -1: this process's
    # devices do not say, and then no process uses the figure.
    mib = np.float32(-1 if known is None else known / 2**20)
    everyone = np.asarray(multihost_utils.process_allgather(mib))
    return None if (everyone < 0).any() else int(everyone.min() * 2**20)


def _free_bytes(device) -> int | None:
    try:
        stats = device.memory_stats()
    except Exception:  # a backend without the query; the configured limit still holds
        return None
    if not stats or "bytes_limit" not in stats:
        return None
    return int(stats["bytes_limit"]) - int(stats.get("bytes_in_use", 0))


def place(table: dict[str, np.ndarray], mesh: Mesh) -> dict[str, jax.Array]:
    """The table replicated on every device of `mesh` (each process holds all of it)."""
    sharding = replicated(mesh)
    return {name: jax.make_array_from_callback(value.shape, sharding,
                                               lambda index, value=value: value[index])
            for name, value in table.items()}


class DrawnRows:
    """The rows of a table that holds only the images `batchers` draw in steps
    [first_step, total_steps), and each step's batch as rows of that table.

    The batchers (one, or one per stacked seed) share their `indices`; an epoch's
    permutation depends only on (seed, epoch, length), so the positions in
    `indices` that a step draws are known without the images. A run shorter than
    an epoch draws a fraction of the split (β-VAE :small: 2000 steps of 64 images,
    128 000 of 663 552), and the table then holds just those: a fifth of the
    rendering, copying and device memory (a run with a whole epoch keeps every
    image). `positions`: the drawn positions in `indices`, ascending; the table's
    row r is image `indices[positions[r]]`."""

    def __init__(self, batchers: list[pipeline.EpochShuffledBatches], first_step: int,
                 total_steps: int):
        size = len(batchers[0].indices)
        drawn = np.zeros(size, bool)
        # Each batcher's order over positions: its permutations, not its images.
        self._orders = [pipeline.EpochShuffledBatches(np.arange(size),
                                                      batcher.global_batch_size, batcher.seed)
                        for batcher in batchers]
        for order in self._orders:
            drawn |= _drawn_positions(order, first_step, total_steps)
        self.positions = np.flatnonzero(drawn)
        self._row_of_position = (np.cumsum(drawn) - 1).astype(np.int32)

    def global_rows(self, order: int, step: int) -> np.ndarray:
        """The table rows of `step`'s global batch for batcher `order`."""
        return self._row_of_position[self._orders[order].global_batch_indices(step)]

    def local_rows(self, order: int, step: int, process_index: int,
                   process_count: int) -> np.ndarray:
        """This host's contiguous slice of them (EpochShuffledBatches.local_batch_indices)."""
        return self._row_of_position[
            self._orders[order].local_batch_indices(step, process_index, process_count)]


def _drawn_positions(order: pipeline.EpochShuffledBatches, first_step: int,
                     total_steps: int) -> np.ndarray:
    """[len(order.indices)] bool: the positions `order` (over positions) draws in steps
    [first_step, total_steps); all of them once the steps hold a whole epoch."""
    drawn = np.zeros(len(order.indices), bool)
    per_epoch = order.steps_per_epoch
    for epoch in range(first_step // per_epoch, -(-total_steps // per_epoch)):
        start = max(first_step, epoch * per_epoch)
        end = min(total_steps, (epoch + 1) * per_epoch)
        if end - start == per_epoch:  # a whole epoch draws all but its remainder:
            drawn[:] = True           # every image, rather than a table of them all but a few
            return drawn
        batch, offset = order.global_batch_size, epoch * per_epoch
        drawn[order.epoch_permutation(epoch)[(start - offset) * batch:
                                             (end - offset) * batch]] = True
    return drawn
