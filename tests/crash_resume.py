r"""kill -9 at random moments, then the same command: does the run end where an
uninterrupted one ends, bit for bit?

  python tests/crash_resume.py --trials=10 --stages=mcqvae,ct --steps=60

Runs the tiny config (configs/ctvae_shapes3d.py:tiny, each stage `--steps` steps,
checkpoints every 3) uninterrupted twice (the second finds its programs in the runs'
own compilation cache, as the trials do), then per trial: starts the same command in a
fresh workdir, sends SIGKILL after a random fraction (0.2–0.95) of the second
uninterrupted run's wall time (during start-up, compilation or its cache read,
training, a checkpoint write or an evaluation, wherever it falls), reruns the command
to the end, and compares every stage's final parameters and `results.json` with the
uninterrupted run's. Prints one line per trial and exits 1 if any differs.
tests/train/test_crash_resume.py runs two trials of stage 1.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]


@dataclasses.dataclass
class Trial:
    killed_after_s: float
    last_logged: str  # "<stage> <step>" of the last metrics row before the kill
    resumed_from: list[str]  # the resume lines of the rerun
    equal_params: bool
    equal_results: bool

    @property
    def ok(self) -> bool:
        return self.equal_params and self.equal_results


def command(workdir: Path, stages: list[str], steps: int, extra=()) -> list[str]:
    overrides = [f"--config.stages=({', '.join(repr(s) for s in stages)},)"]
    overrides += [f"--config.{stage}.train.num_steps={steps}" for stage in stages]
    return [sys.executable, "-m", "causal_disent.main",
            f"--config={REPO_ROOT / 'configs' / 'ctvae_shapes3d.py'}:tiny",
            f"--workdir={workdir}", *overrides, *extra]


def launch(workdir: Path, stages: list[str], steps: int, extra=()) -> subprocess.Popen:
    workdir.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT), JAX_PLATFORMS="cpu")
    # A compilation cache of these runs' own, never the test worker's (tests/conftest.py):
    # the uninterrupted runs fill it, so the trials mostly read it, and a trial killed
    # while writing an entry leaves a partial file, which JAX reads back with a warning
    # and compiles again.
    env["JAX_COMPILATION_CACHE_DIR"] = str(workdir.parent / "jax_cache")
    log = (workdir.parent / f"{workdir.name}.log").open("a")
    return subprocess.Popen(command(workdir, stages, steps, extra), env=env, cwd=REPO_ROOT,
                            stdout=log, stderr=subprocess.STDOUT)


def run_to_end(workdir: Path, stages: list[str], steps: int, extra=()) -> float:
    """Runs the command to completion; its wall time in seconds."""
    start = time.monotonic()
    process = launch(workdir, stages, steps, extra)
    if process.wait() != 0:
        log = (workdir.parent / f"{workdir.name}.log").read_text()
        raise RuntimeError(f"the run in {workdir} failed:\n{log[-3000:]}")
    return time.monotonic() - start


def final_params(workdir: Path, stage: str):
    import orbax.checkpoint as ocp

    from causal_disent.runs.checkpoint import checkpoint_dir

    with ocp.CheckpointManager(checkpoint_dir(workdir, stage)) as manager:
        restored = manager.restore(manager.latest_step(), args=ocp.args.Composite(
            state=ocp.args.StandardRestore()))
    return restored.state["params"]


def same_params(a: Path, b: Path, stages: list[str]) -> bool:
    import jax
    import numpy as np

    for stage in stages:
        left, right = final_params(a, stage), final_params(b, stage)
        if jax.tree.structure(left) != jax.tree.structure(right):
            return False
        if not all(np.array_equal(x, y) for x, y in zip(jax.tree.leaves(left),
                                                        jax.tree.leaves(right))):
            return False
    return True


def last_logged(workdir: Path) -> str:
    path = workdir / "metrics.jsonl"
    rows = []
    for line in path.read_text().splitlines() if path.exists() else []:
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError:  # the line the kill cut short
            pass
    return f"{rows[-1]['stage']} {rows[-1]['step']}" if rows else "nothing"


def run_trials(trials: int, stages: list[str], steps: int, root: Path, seed: int = 0,
               report=print, extra=()) -> list[Trial]:
    """`extra`: more command-line flags for every run (e.g. config overrides)."""
    rng = random.Random(seed)
    reference = root / "uninterrupted"
    run_to_end(reference, stages, steps, extra)  # compiles, filling the cache
    # The kills are timed on a run that, like the trials, finds its programs compiled.
    reference_seconds = run_to_end(root / "uninterrupted_warm", stages, steps, extra)
    report(f"uninterrupted, compiled programs cached: {reference_seconds:.1f} s")
    results = []
    for index in range(trials):
        workdir = root / f"trial_{index}"
        delay = rng.uniform(0.2, 0.95) * reference_seconds
        process = launch(workdir, stages, steps, extra)
        time.sleep(delay)
        process.send_signal(signal.SIGKILL)
        process.wait()
        logged = last_logged(workdir)
        run_to_end(workdir, stages, steps, extra)
        log = (root / f"{workdir.name}.log").read_text()
        trial = Trial(
            killed_after_s=delay, last_logged=logged,
            resumed_from=[line.split("] ", 1)[-1] for line in log.splitlines()
                          if "resuming from the checkpoint" in line or "already finished" in line],
            equal_params=same_params(reference, workdir, stages),
            equal_results=(json.loads((reference / "results.json").read_text())
                           == json.loads((workdir / "results.json").read_text())),
        )
        results.append(trial)
        report(f"trial {index}: killed after {delay:.1f} s (last row: {logged}); "
               f"{'; '.join(trial.resumed_from) or 'restarted from scratch'}; "
               f"params {'equal' if trial.equal_params else 'DIFFER'}, "
               f"results.json {'equal' if trial.equal_results else 'DIFFERS'}")
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=10)
    parser.add_argument("--stages", default="mcqvae,ct")
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--override", action="append", default=[],
                        help="A flag for every run, e.g. "
                        "--override=--config.mcqvae.train.steps_per_call=2 (repeatable).")
    parser.add_argument("--root", default=None, help="Where the workdirs go (default: a "
                        "new temporary directory).")
    args = parser.parse_args()
    import tempfile

    root = Path(args.root or tempfile.mkdtemp(prefix="crash_resume_"))
    trials = run_trials(args.trials, args.stages.split(","), args.steps, root, args.seed,
                        extra=args.override)
    passed = sum(trial.ok for trial in trials)
    print(f"{passed}/{len(trials)} resumed runs equal the uninterrupted one ({root})")
    sys.exit(0 if passed == len(trials) else 1)


if __name__ == "__main__":
    main()
