"""Host work spread over threads: rendering and reading images.

NumPy lets go of the interpreter lock while it draws, gathers or decodes arrays, so
threads render images in parallel (1.8x on 2 cores for dsprites_synth); on a GPU or
TPU host with many idle cores, this is what keeps the input in step with the device.
"""

import collections
import concurrent.futures
import os
from collections.abc import Callable, Iterable, Iterator

# Beyond this, more threads only add memory for their work in flight: the host of a
# TPU VM has a few hundred cores.
MAX_WORKERS = 32


def worker_count() -> int:
    """Threads for host work: the cores this process may use, at most MAX_WORKERS."""
    cores = (len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
             else os.cpu_count() or 1)
    return max(1, min(cores, MAX_WORKERS))


def ordered_map(function: Callable, items: Iterable, workers: int | None = None,
                ahead: int | None = None) -> Iterator:
    """`function(item)` for each item, in order, computed by `workers` threads
    (default: `worker_count()`) at most `ahead` items (default: 2 per worker) ahead
    of the consumer. An item's error is raised when its turn comes; when the
    consumer stops early, items not yet started are dropped."""
    workers = workers or worker_count()
    ahead = max(ahead or 2 * workers, 1)
    items = iter(items)
    pool = concurrent.futures.ThreadPoolExecutor(workers)
    pending: collections.deque = collections.deque()
    try:
        for item in items:
            pending.append(pool.submit(function, item))
            if len(pending) >= ahead:
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
