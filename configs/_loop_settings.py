"""The training loop's settings, the same in every stage of every config: how a run
saves, feeds its devices and dispatches its steps. Not a config itself (configs/
files whose names start with "_" are shared parts); the configs call it, as
big_vision's configs share configs/common.py, and each stage keeps its own length,
log and checkpoint intervals and evaluation sizes. Any field can still be set per
run, e.g. --config.vae.train.steps_per_call=10."""

import ml_collections


def add_loop_settings(train: ml_collections.ConfigDict) -> None:
    """Sets `train`'s loop fields (train/loop.py, train/multi_step.py,
    train/device_data.py) to their defaults."""
    train.max_checkpoints_to_keep = 3
    # A periodic save also waits for this many seconds since the last one (0 = none):
    # on a GPU the steps of an interval sized for a CPU can pass in under a second,
    # and each save stalls the loop.
    train.min_seconds_between_checkpoints = 30.0
    train.prefetch_batches = 2
    # Steps per compiled call (train/multi_step.py): k > 1 runs k steps in one
    # dispatch; logs, checkpoints and curve points then fall on multiples of k.
    # 0 = auto: 1 on CPUs; on GPUs and TPUs up to 10, a divisor of the stage's intervals.
    train.steps_per_call = 0
    # Those k steps unrolled or a loop: "auto" unrolls on CPUs only (train/multi_step.py).
    train.unroll_call = "auto"
    # Training data on the devices, the host sending row indices (train/device_data.py):
    # "auto" = on GPUs and TPUs when it fits in device_data_max_gb per device and in
    # half of each device's free memory.
    train.device_data = "auto"
    train.device_data_max_gb = 16.0
