"""Batches of rendered images in a stateless, seeded order.

The batch of step s is a pure function of (seed, s): epoch e = s // steps_per_epoch
reads a permutation of the split drawn from (seed, e). A run resumed from a
checkpoint at step s therefore sees exactly the batches an uninterrupted run would,
with no iterator state to save. Each host renders only its slice of the global batch.
"""

import queue
import threading
from collections.abc import Iterator

import numpy as np


class EpochShuffledBatches:
    """Global batch indices of each step; every epoch is a fresh permutation."""

    def __init__(self, indices: np.ndarray, global_batch_size: int, seed: int):
        if global_batch_size > len(indices):
            raise ValueError(
                f"batch size {global_batch_size} exceeds the split's "
                f"{len(indices)} images"
            )
        self.indices = np.asarray(indices)
        self.global_batch_size = global_batch_size
        self.seed = seed
        self.steps_per_epoch = len(self.indices) // global_batch_size
        self._cached_epoch = -1
        self._cached_permutation = None

    def global_batch_indices(self, step: int) -> np.ndarray:
        """[global_batch_size] flat dataset indices of `step` (drop-remainder epochs)."""
        epoch, position = divmod(step, self.steps_per_epoch)
        if epoch != self._cached_epoch:
            rng = np.random.default_rng([self.seed, epoch])
            self._cached_permutation = rng.permutation(len(self.indices))
            self._cached_epoch = epoch
        start = position * self.global_batch_size
        return self.indices[self._cached_permutation[start : start + self.global_batch_size]]

    def local_batch_indices(
        self, step: int, process_index: int = 0, process_count: int = 1
    ) -> np.ndarray:
        """This host's contiguous slice of the global batch."""
        local_size = self.global_batch_size // process_count
        start = process_index * local_size
        return self.global_batch_indices(step)[start : start + local_size]


def image_batches(
    dataset,
    batcher: EpochShuffledBatches,
    first_step: int,
    last_step: int,
    process_index: int = 0,
    process_count: int = 1,
    prefetch: int = 2,
) -> Iterator[dict[str, np.ndarray]]:
    """Yields {"image": uint8 [local_batch, H, W, ch]} for steps [first_step, last_step).

    Rendering runs `prefetch` batches ahead in a background thread so that it
    overlaps the device step.
    """

    def render(step: int) -> dict[str, np.ndarray]:
        idx = batcher.local_batch_indices(step, process_index, process_count)
        return {"image": dataset.images(idx)}

    steps = range(first_step, last_step)
    if prefetch <= 0:
        yield from map(render, steps)
        return
    yield from prefetched(map(render, steps), prefetch)


_DONE = object()


def prefetched(items: Iterator, size: int) -> Iterator:
    """Runs `items` in a daemon thread, `size` ahead; exceptions reach the consumer."""
    buffer: queue.Queue = queue.Queue(maxsize=size)
    stop = threading.Event()

    def produce():
        try:
            for item in items:
                if stop.is_set():
                    return
                buffer.put(item)
            buffer.put(_DONE)
        except BaseException as error:  # re-raised in the consumer's thread
            buffer.put(error)

    thread = threading.Thread(target=produce, daemon=True)
    thread.start()
    try:
        while (item := buffer.get()) is not _DONE:
            if isinstance(item, BaseException):
                raise item
            yield item
    finally:
        stop.set()
        # Unblock a producer waiting on a full queue so the thread can end.
        while not buffer.empty():
            buffer.get_nowait()
