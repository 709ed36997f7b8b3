r"""What writing a run's training rows costs the training loop's own thread.

The loop (train/loop.py) hands each log interval's rows to a writer thread
(train/reporting.MetricsWriter: metrics.jsonl and TensorBoard) and goes on
dispatching steps. On an accelerator its thread mostly waits for the device with the
interpreter lock released; each time it wakes it needs the lock back, and a writer
thread busy with Python work holds it for up to the interpreter's switch interval
(5 ms). So the writer's Python time, not only its share of a core, delays the next
dispatch, and the device idles meanwhile.

  python benchmarks/metric_writing.py                     # defaults below
  python benchmarks/metric_writing.py --device_ms=0.9 --calls_per_log=100

Two parts, with made-up rows of β-VAE's metrics (five scalars and a 10-latent KL),
their values as the loop hands them over (`--row_values=numpy`: as it did before):
1. one log interval's rows (`--rows`, default 100) written by each writer alone:
   metrics.jsonl, the project's TensorBoard events (runs/tensorboard.py: one event per
   row, written by the calling thread) and tensorboardX's SummaryWriter as the
   project used it before (one event per scalar, through its logger thread's queue);
2. the loop emulated: `--calls` calls in which the thread sleeps `--device_ms` (the
   device's work, lock released; default 9.2 ms, ten β-VAE `:small` steps on an H200)
   then does a little Python work, handing the rows to a real MetricsWriter every
   `--calls_per_log` calls, with each writer set: none, metrics.jsonl alone, with the
   project's TensorBoard, with SummaryWriter. Prints each setting's ms per call over
   the device's and the share of the device's time lost.
Part 1 keeps the best of `--repeats`, part 2 the median (contention varies).

A JSON line with every figure follows the table.
"""

from __future__ import annotations

import contextlib
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

from causal_disent import cli  # noqa: E402
from causal_disent.runs import metrics_log, records, tensorboard  # noqa: E402
from causal_disent.train import loop, multi_step, reporting  # noqa: E402
from causal_disent.utils import arguments  # noqa: E402

SCALARS = ("loss", "elbo", "grad_norm", "kl", "reconstruction")
LATENTS = 10
SETTINGS = ("none", "jsonl", "jsonl+tensorboard", "jsonl+summary_writer")


def made_up_rows(count: int, first_step: int = 1, values: str = "python"
                 ) -> list[tuple[int, dict]]:
    """`count` training rows from one call's made-up metrics, as the loop hands them
    to the writer: Python numbers and lists (`values` "python", train/loop.py converts
    each fetched array once) or numpy scalars and arrays ("numpy", as it did before)."""
    rng = np.random.default_rng(first_step)
    metrics = {**{name: rng.random(count).astype(np.float32) for name in SCALARS},
               "kl_per_latent": rng.random((count, LATENTS)).astype(np.float32)}
    if values == "python":
        metrics = loop._as_python(metrics)
    return multi_step.Rows()(first_step - 1, metrics)


class SummaryWriterRows:
    """tensorboard.add_rows as the project wrote rows before: tensorboardX's
    SummaryWriter, one add_scalar per finite scalar, flushed once per call."""

    def __init__(self):
        self.writers = {}

    def __call__(self, workdir, stage, rows, prefix):
        from tensorboardX import SummaryWriter

        key = (str(workdir), stage)
        if key not in self.writers:
            self.writers[key] = SummaryWriter(str(tensorboard.board_dir(workdir, stage)),
                                              flush_secs=30)
        writer = self.writers[key]
        for step, values in rows:
            for name, value in values.items():
                scalar = tensorboard._finite_scalar(value)
                if scalar is not None:
                    writer.add_scalar(f"{prefix}/{name}", scalar, global_step=int(step))
        writer.flush()

    def close(self):
        for writer in self.writers.values():
            writer.close()
        self.writers.clear()


@contextlib.contextmanager
def writing(setting: str):
    """The writers of `setting` in place of reporting's (restored after)."""
    saved = reporting.metrics_log.append_training_rows, reporting.tensorboard.add_rows
    summary_writer = SummaryWriterRows()
    nothing = lambda *args, **kwargs: None  # noqa: E731
    reporting.metrics_log.append_training_rows = (
        nothing if setting == "none" else saved[0])
    reporting.tensorboard.add_rows = {
        "jsonl+tensorboard": saved[1], "jsonl+summary_writer": summary_writer,
    }.get(setting, nothing)
    try:
        yield
    finally:
        summary_writer.close()
        reporting.metrics_log.append_training_rows, reporting.tensorboard.add_rows = saved


def writer_seconds(rows: int, repeats: int, folder: Path, values: str) -> dict[str, float]:
    """Seconds for one writer alone to write `rows` rows, best of `repeats`."""
    batch = made_up_rows(rows, values=values)
    summary_writer = SummaryWriterRows()
    writers = {
        "jsonl": lambda workdir: metrics_log.append_training_rows(workdir, "vae", batch),
        "tensorboard": lambda workdir: tensorboard.add_rows(workdir, "vae", batch, "train"),
        "summary_writer": lambda workdir: summary_writer(workdir, "vae", batch, "train"),
    }
    seconds = {}
    for name, write in writers.items():
        workdir = folder / f"alone_{name}"
        write(workdir)  # files opened, imports done
        times = []
        for _ in range(repeats):
            started = time.perf_counter()
            write(workdir)
            times.append(time.perf_counter() - started)
        seconds[name] = min(times)
    summary_writer.close()
    tensorboard.close(folder / "alone_tensorboard", "vae")
    return seconds


def emulated_loop_seconds(setting: str, calls: int, device_ms: float, calls_per_log: int,
                          rows_per_log: int, workdir: Path, values: str) -> float:
    """Wall seconds of `calls` emulated calls with `setting`'s writers."""
    logs = [made_up_rows(rows_per_log, 1 + index * rows_per_log, values)
            for index in range(calls // calls_per_log + 1)]
    with writing(setting):
        writer = reporting.MetricsWriter(workdir)
        writer.write("vae", made_up_rows(1, values=values))  # thread started, files opened
        writer.flush()
        started = time.perf_counter()
        for call in range(calls):
            time.sleep(device_ms / 1e3)  # waiting for the device, lock released
            sum(range(200))  # the loop's own Python work between calls
            if (call + 1) % calls_per_log == 0:
                writer.write("vae", logs[call // calls_per_log])
        elapsed = time.perf_counter() - started
        writer.close()
        tensorboard.close(workdir, "vae")
    return elapsed


def main() -> None:
    parser = arguments.OneLineArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=arguments.positive_int, default=100,
                        help="rows per log interval")
    parser.add_argument("--calls", type=arguments.positive_int, default=300)
    parser.add_argument("--device_ms", type=float, default=9.2, help="device time per call")
    parser.add_argument("--calls_per_log", type=arguments.positive_int, default=10)
    parser.add_argument("--row_values", choices=("python", "numpy"), default="python",
                        help="the rows' values: as the loop hands them over, or numpy "
                             "scalars as it did before")
    parser.add_argument("--repeats", type=arguments.positive_int, default=3,
                        help="times each figure is measured")
    records.add_record_flag(parser)
    args = parser.parse_args()
    if not args.device_ms > 0:
        sys.exit(f"error: --device_ms must be positive, got {args.device_ms}")
    recorder = records.script_recorder(args.record)

    with tempfile.TemporaryDirectory() as folder:
        alone = writer_seconds(args.rows, args.repeats, Path(folder), args.row_values)
        print(f"{args.rows} rows ({args.row_values} values) written alone (ms): "
              + ", ".join(f"{name} {seconds * 1e3:.1f}" for name, seconds in alone.items()),
              flush=True)
        device_s = args.calls * args.device_ms / 1e3
        loop = {}
        for setting in SETTINGS:
            loop[setting] = float(np.median([
                emulated_loop_seconds(setting, args.calls, args.device_ms, args.calls_per_log,
                                      args.rows, Path(folder) / f"{setting}_{repeat}",
                                      args.row_values)
                for repeat in range(args.repeats)]))
    print(f"the loop emulated: {args.calls} calls of {args.device_ms:g} ms on the device, "
          f"{args.rows} rows every {args.calls_per_log} calls")
    print(f"{'writers':22s} {'ms/call':>8s} {'over device':>12s} {'device time lost':>17s}")
    for setting, seconds in loop.items():
        per_call = seconds / args.calls * 1e3
        print(f"{setting:22s} {per_call:8.2f} {per_call - args.device_ms:12.2f} "
              f"{1 - device_s / seconds:16.1%}")
    result = {"rows": args.rows, "row_values": args.row_values, "calls": args.calls, "device_ms": args.device_ms,
              "calls_per_log": args.calls_per_log, "repeats": args.repeats,
              "alone_ms": {name: seconds * 1e3 for name, seconds in alone.items()},
              "loop_ms_per_call": {setting: seconds / args.calls * 1e3
                                   for setting, seconds in loop.items()}}
    print(json.dumps(result))
    records.write_or_exit(recorder, result)


if __name__ == "__main__":
    cli.run_script(main)
