"""Data parallelism with `jax.jit` over a one-axis mesh: batch sharded, state replicated."""

from collections.abc import Callable, Sequence

import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from causal_disent.utils import threads

DATA_AXIS = "data"


def make_data_mesh(devices: Sequence[jax.Device] | None = None) -> Mesh:
    """A mesh over `devices` (default: every device of every host) with one axis."""
    devices = jax.devices() if devices is None else list(devices)
    return Mesh(np.asarray(devices), (DATA_AXIS,))


def replicated(mesh: Mesh) -> NamedSharding:
    return NamedSharding(mesh, PartitionSpec())


def batch_sharded(mesh: Mesh, axis: int = 0) -> NamedSharding:
    """The batch axis (`axis`, the leading one unless steps are stacked before it)
    split over the data axis."""
    return NamedSharding(mesh, PartitionSpec(*([None] * axis), DATA_AXIS))


def check_batch_divisible(global_batch_size: int, mesh: Mesh, what: str) -> None:
    devices = mesh.size
    if global_batch_size % devices or global_batch_size % jax.process_count():
        raise ValueError(
            f"{what} = {global_batch_size} is not divisible by the {devices} devices "
            f"({jax.process_count()} hosts); choose a multiple of {devices}, e.g. "
            f"--config.{what}={max(devices, global_batch_size // devices * devices)}"
        )


def global_batch(local_batch, mesh: Mesh, sharding: NamedSharding | None = None):
    """Assembles each host's slice of a batch into one global array per leaf,
    batch-sharded over `mesh` unless `sharding` says otherwise."""
    sharding = sharding if sharding is not None else batch_sharded(mesh)
    return jax.tree.map(
        lambda x: jax.make_array_from_process_local_data(sharding, x), local_batch
    )


def process_slice(global_batch_size: int) -> slice:
    """This host's contiguous share of a global batch (what `global_batch` expects)."""
    count, index = jax.process_count(), jax.process_index()
    return slice(index * global_batch_size // count, (index + 1) * global_batch_size // count)


def padded_batches(num_items: int, batch_size: int):
    """(start, index [batch_size], rows to keep) for each global batch over
    `num_items` items; the last batch wraps around to the first items, so every
    batch has one shape and nothing recompiles."""
    for start in range(0, num_items, batch_size):
        index = np.arange(start, start + batch_size) % num_items
        yield start, index, min(batch_size, num_items - start)


def padded_global_batches(num_items: int, batch_size: int, mesh: Mesh | None,
                          host_rows: Callable[[np.ndarray], dict]):
    """Every evaluation loop's batches: (start, batch, keep) for each global batch of
    `batch_size` over `num_items` items.

    `host_rows(index)` returns this host's rows (a dict of arrays) of the items at
    `index`; `batch` is those rows assembled into batch-sharded arrays over `mesh`
    (None: left as host arrays, for single-device use), plus "valid" [batch_size]:
    1.0 for real items, 0.0 for the padding of the last batch, which wraps around to
    the first items (`padded_batches`). `keep` is the number of real rows, for
    outputs gathered per row; sums must weight rows by "valid".

    The next batches' rows are made on other threads (utils/threads.py) while the
    caller works on this one, so `host_rows` must be safe to call from several
    threads (it renders or reads, and keeps no state).
    """
    local = process_slice(batch_size) if mesh is not None else slice(None)

    def rows_of(batch: tuple) -> tuple[int, dict, int]:
        start, index, keep = batch
        valid = (np.arange(batch_size) < keep).astype(np.float32)
        return start, {**host_rows(index[local]), "valid": valid[local]}, keep

    for start, rows, keep in threads.ordered_map(rows_of, padded_batches(num_items, batch_size)):
        yield start, (rows if mesh is None else global_batch(rows, mesh)), keep
