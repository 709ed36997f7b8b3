"""Batches of rendered images in a stateless, seeded order.

The batch of step s is a pure function of (seed, s): epoch e = s // steps_per_epoch
reads a permutation of the split drawn from (seed, e). A run resumed from a
checkpoint at step s therefore sees exactly the batches an uninterrupted run would,
with no iterator state to save. Each host renders only its slice of the global batch.
"""

import queue
import threading
from collections.abc import Callable, Iterator

import numpy as np

from causal_disent.utils import threads


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

    def epoch_permutation(self, epoch: int) -> np.ndarray:
        """The order of `indices`' positions in `epoch`: a function of (seed, epoch,
        length) only."""
        if epoch != self._cached_epoch:
            rng = np.random.default_rng([self.seed, epoch])
            self._cached_permutation = rng.permutation(len(self.indices))
            self._cached_epoch = epoch
        return self._cached_permutation

    def global_batch_indices(self, step: int) -> np.ndarray:
        """[global_batch_size] flat dataset indices of `step` (drop-remainder epochs)."""
        epoch, position = divmod(step, self.steps_per_epoch)
        start = position * self.global_batch_size
        return self.indices[self.epoch_permutation(epoch)[start : start + self.global_batch_size]]

    def local_batch_indices(
        self, step: int, process_index: int = 0, process_count: int = 1
    ) -> np.ndarray:
        """This host's contiguous slice of the global batch."""
        local_size = self.global_batch_size // process_count
        start = process_index * local_size
        return self.global_batch_indices(step)[start : start + local_size]


def batch_stream(make_batch, first_step: int, last_step: int,
                 prefetch: int) -> Iterator[dict[str, np.ndarray]]:
    """`make_batch(step)` for steps [first_step, last_step), computed `prefetch`
    batches ahead in a background thread (so that rendering overlaps the device
    step) when `prefetch` > 0. Every training stage's host batches come through
    here."""
    batches = map(make_batch, range(first_step, last_step))
    return prefetched(batches, prefetch) if prefetch > 0 else batches


def image_batches(
    dataset,
    batcher: EpochShuffledBatches,
    first_step: int,
    last_step: int,
    process_index: int = 0,
    process_count: int = 1,
    prefetch: int = 2,
    auxiliary: Callable[[np.ndarray], np.ndarray] | None = None,
) -> Iterator[dict[str, np.ndarray]]:
    """{"image": uint8 [local_batch, H, W, ch]} for steps [first_step, last_step), and
    "auxiliary": `auxiliary(indices)` of the same images when given (data/auxiliary.py)."""

    def render(step: int) -> dict[str, np.ndarray]:
        idx = batcher.local_batch_indices(step, process_index, process_count)
        return indexed_images(dataset, idx, auxiliary)

    return batch_stream(render, first_step, last_step, prefetch)


def indexed_images(dataset, index: np.ndarray, auxiliary=None) -> dict[str, np.ndarray]:
    """{"image": the dataset's images at `index`} and "auxiliary": `auxiliary(index)`
    when given."""
    batch = {"image": dataset.images(index)}
    if auxiliary is not None:
        batch["auxiliary"] = auxiliary(index)
    return batch


def seed_stacked_image_batches(dataset, batchers: list[EpochShuffledBatches], first_step: int,
                               last_step: int, process_index: int = 0, process_count: int = 1,
                               prefetch: int = 2, auxiliary=None) -> Iterator[dict]:
    """The batches of several models trained at once, one per batcher (each seed its
    own order): {"image": uint8 [S_local, batch, H, W, ch]} (and "auxiliary" [S_local,
    batch, n] when given), each model's whole global batch, this host's contiguous
    share of the S models."""
    count = len(batchers)
    local = batchers[process_index * count // process_count:
                     (process_index + 1) * count // process_count]

    def render(step: int) -> dict[str, np.ndarray]:
        per_seed = [indexed_images(dataset, batcher.global_batch_indices(step), auxiliary)
                    for batcher in local]
        return {key: np.stack([batch[key] for batch in per_seed]) for key in per_seed[0]}

    return batch_stream(render, first_step, last_step, prefetch)


def labelled_batches(image_source, labels: np.ndarray, batcher: EpochShuffledBatches,
                     first_step: int, last_step: int, process_index: int = 0,
                     process_count: int = 1, prefetch: int = 2):
    """{"image": uint8 [b, H, W, ch], "labels": float32 [b, n]} (this host's share)
    for steps [first_step, last_step); `image_source` is the dataset or its
    `CachedImages`."""

    def batch(step: int) -> dict[str, np.ndarray]:
        index = batcher.local_batch_indices(step, process_index, process_count)
        return {"image": image_source.images(index), "labels": labels[index]}

    return batch_stream(batch, first_step, last_step, prefetch)


def all_images(dataset, indices: np.ndarray, chunk: int = 4096) -> np.ndarray:
    """The images at `indices`, in order, as one uint8 array [N, *image_shape].

    For rendering a whole split at once (the device table, CachedImages): chunks of
    `chunk` images are rendered on a thread per core (utils/threads.py), each
    written straight into the result (no second copy to join the chunks).
    `dataset.images` must therefore be safe to call from several threads, as the
    prefetching thread already needs. An error in any chunk is raised here."""
    indices = np.asarray(indices, np.int64)
    images = np.empty((len(indices), *dataset.image_shape), np.uint8)

    def fill(start: int) -> None:
        images[start:start + chunk] = dataset.images(indices[start:start + chunk])

    for _ in threads.ordered_map(fill, range(0, len(indices), chunk)):
        pass
    return images


class CachedImages:
    """The images of some flat indices rendered once and kept in memory (uint8): for
    datasets whose rendering costs more than a training step."""

    def __init__(self, dataset, indices: np.ndarray):
        indices = np.asarray(indices, np.int64)
        self._row = np.full(dataset.num_images, -1, np.int64)
        self._row[indices] = np.arange(len(indices))
        self._images = all_images(dataset, indices)

    def images(self, index: np.ndarray) -> np.ndarray:
        rows = self._row[np.asarray(index)]
        if (rows < 0).any():
            raise ValueError("index outside the cached images")
        return self._images[rows]


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
