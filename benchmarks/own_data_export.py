r"""A built-in dataset exported to `.npz` and read back as one's own data trains to the
same figures: exports the dataset (`own_files.save_npz`), trains the config on the
built-in dataset and on the export (`--config.data.name=files`), and compares every
number of the two results.json files.

  .venv/bin/python benchmarks/own_data_export.py --dataset=shapes3d_synth \
      --config=configs/ctvae_shapes3d.py:tiny --out_dir=/tmp/export \
      --record=results/own_data_export_tiny.json

--concurrent trains both at once, each pinned to a core of its own, so that a `:small`
comparison takes one run's time on 2 cores and both run under the same conditions.

The export holds the images in flat-index order with their factor indices, so the
files dataset sees the same grid, splits and transition batches as the built-in one
(tests/data/test_own_data.py checks that part on a small grid); this command checks
the whole run. Shapes3D's export is 5.9 GB on disk.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

# Runs from a checkout without installing the package.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from causal_disent.data import own_files, registry  # noqa: E402
from causal_disent.runs import records  # noqa: E402
from causal_disent.utils import arguments  # noqa: E402

REPO_ROOT = Path(__file__).resolve().parents[1]


def numbers(tree, path: str = ""):
    """(dotted path, value) of every number in a results tree."""
    if isinstance(tree, dict):
        for key, value in tree.items():
            yield from numbers(value, f"{path}.{key}" if path else key)
    elif isinstance(tree, list):
        for index, value in enumerate(tree):
            yield from numbers(value, f"{path}[{index}]")
    elif isinstance(tree, (int, float)) and not isinstance(tree, bool):
        yield path, tree


def start_training(config: str, workdir: Path, flags: Sequence[str],
                   core: int | None) -> subprocess.Popen:
    """`causal_disent.main` on `config` in `workdir`, pinned to `core` when given; its
    stderr goes to `workdir`.stderr (a pipe nobody reads while the other run is
    awaited could fill and stall it)."""
    pin = None if core is None else (lambda: os.sched_setaffinity(0, {core}))
    workdir.parent.mkdir(parents=True, exist_ok=True)
    with open(_stderr_path(workdir), "w") as stderr:
        return subprocess.Popen(
            [sys.executable, "-m", "causal_disent.main", f"--config={config}",
             f"--workdir={workdir}", *flags],
            cwd=REPO_ROOT, env=dict(os.environ, PYTHONPATH=str(REPO_ROOT)),
            stdout=subprocess.DEVNULL, stderr=stderr, preexec_fn=pin)


def _stderr_path(workdir: Path) -> Path:
    return workdir.with_name(workdir.name + ".stderr")


def finished(process: subprocess.Popen, workdir: Path, started: float) -> tuple[dict, float]:
    """The results.json of a training started at `started`, and its seconds."""
    process.wait()
    return _results(process, workdir), time.perf_counter() - started


def _results(process: subprocess.Popen, workdir: Path) -> dict:
    if process.returncode:
        stderr = _stderr_path(workdir).read_text().strip()
        sys.exit(stderr.splitlines()[-1] if stderr else f"error: training {workdir} failed")
    return json.loads((workdir / "results.json").read_text())


def both_finished(runs: dict[str, subprocess.Popen], out: Path,
                  started: float) -> dict[str, tuple[dict, float]]:
    """{name: (results, seconds)} of trainings running at once, each timed to its own
    end (waiting on one would time the other to the later end)."""
    ended: dict[str, float] = {}
    while len(ended) < len(runs):
        for name, process in runs.items():
            if name not in ended and process.poll() is not None:
                ended[name] = time.perf_counter() - started
        time.sleep(0.2)
    return {name: (_results(process, out / name), ended[name])
            for name, process in runs.items()}


def train_both(config: str, out: Path, dataset_flags: Sequence[str],
               files_flags: Sequence[str], concurrent: bool) -> tuple[dict, float, dict, float]:
    """Trains on the built-in dataset and on the export, one after the other, or at
    once with each pinned to a core of its own (the same conditions for both)."""
    cores = sorted(os.sched_getaffinity(0))
    if concurrent and len(cores) < 2:
        sys.exit("error: --concurrent needs two cores to pin the two runs to, and this "
                 f"process may use {len(cores)}; drop --concurrent")
    started = time.perf_counter()
    if concurrent:
        done = both_finished(
            {"built_in": start_training(config, out / "built_in", dataset_flags, cores[0]),
             "files": start_training(config, out / "files", files_flags, cores[1])},
            out, started)
        return (*done["built_in"], *done["files"])
    first = finished(start_training(config, out / "built_in", dataset_flags, None),
                     out / "built_in", started)
    started = time.perf_counter()
    second = finished(start_training(config, out / "files", files_flags, None),
                      out / "files", started)
    return (*first, *second)


def main(argv: Sequence[str] | None = None) -> None:
    parser = arguments.OneLineArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", default="shapes3d_synth")
    parser.add_argument("--config", default="configs/ctvae_shapes3d.py:tiny")
    parser.add_argument("--out_dir", required=True, help="the export and both workdirs")
    parser.add_argument("--concurrent", action="store_true",
                        help="train both at once, each pinned to one core")
    records.add_record_flag(parser)
    args = parser.parse_args(argv)
    recorder = records.script_recorder(args.record)
    out = Path(args.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    try:
        dataset = registry.get_dataset(args.dataset)
    except ValueError as error:
        sys.exit(f"error: {error}")
    export = out / f"{args.dataset}.npz"
    start = time.perf_counter()
    if not export.exists():
        own_files.save_npz(export, dataset)
    export_seconds = time.perf_counter() - start
    built_in, built_in_seconds, files, files_seconds = train_both(
        args.config, out, [f"--config.data.name={args.dataset}"],
        ["--config.data.name=files", f"--config.data.path={export}"], args.concurrent)
    first, second = dict(numbers(built_in)), dict(numbers(files))
    timing = [path for path in first if "second" in path or path.endswith("minutes")]
    differing = sorted(path for path in set(first) | set(second)
                       if path not in timing and first.get(path) != second.get(path))
    summary = {
        "dataset": args.dataset, "config": args.config,
        "export_gb": round(export.stat().st_size / 1e9, 2),
        "export_seconds": round(export_seconds, 1),
        "numbers_compared": len(set(first) - set(timing)),
        "numbers_differing": differing,
        "headline": {path: [first.get(path), second.get(path)] for path in (
            "mcqvae.test_psnr", "ct.action_accuracy", "ct.factor_accuracy")},
        "training_seconds": {"built_in": round(built_in_seconds, 1),
                             "files": round(files_seconds, 1)},
        "concurrent": args.concurrent,
    }
    print(json.dumps(summary, indent=1))
    records.write_or_exit(recorder, summary)


if __name__ == "__main__":
    main()
