r"""Whole runs, not steps: S seeds trained as S sequential `causal_disent.main` runs
(--config.seed=k, one process each) against one run with --config.num_seeds=S, each
timed from process start to exit (backend start, data rendering, compilation,
training, the end-of-run evaluation and the checkpoints all included). Then each
seed's test NLL from both, which should agree: the stacked run's seed k is the
sequential run with seed k (train/seed_stacking.py), up to float rounding.

  python benchmarks/seed_stacking_runs.py                    # S = 8, β-VAE :small
  python benchmarks/seed_stacking_runs.py --seeds=8 --config=configs/factorvae_dsprites_synth.py:small
  python benchmarks/seed_stacking_runs.py --config.vae.train.steps_per_call=10 \
      --config.vae.train.device_data=on           # every run with these settings

benchmarks/seed_stacking.py times the compiled step alone; this one answers what a
user waits for, each run compiling from nothing (`--compilation_cache=off`: with the
command line's cache, sequential runs after the first read most of their programs
back, and a stacked run's programs are its own). Workdirs go under --root (a fresh
temporary folder by default); rerun with the same --root after a time limit cut the
benchmark short, and only the runs that had not finished run again.

Measured on one H100 (jax 0.11.2, 16 host cores; β-VAE :small, S = 8, vmap):
  8 sequential runs  43.7 36.9 39.3 38.5 41.9 38.7 38.0 40.8 s: 318 s
  one stacked run    87 s: 3.67x less wall time
  test NLL per seed  75.4 / 74.7, 73.1 / 73.5, 70.8 / 69.8, 74.3 / 74.2, 74.9 / 74.9,
                     73.1 / 73.0, 105.2 / 106.8, 75.2 / 74.2 (sequential / stacked:
                     the GPU's float rounding differs between the two programs, and
                     over 2000 steps that moves a seed's NLL by up to 1.5 %)
Neither run is bound by the GPU: a stand-alone step takes 1.5 ms (S = 1) and 8.7 ms
(S = 8) (benchmarks/seed_stacking.py), yet the runs' logs show 145 and 54 steps/s; the
rest of each step's time goes outside the compiled step (the input pipeline and the
loop, not timed apart here).

With --sequential_runs=N (< S) only seeds 0..N-1 run one by one, and the S
sequential runs' time is projected as S times their mean (each run does the same
work but for its seed; on an H200 six of them took 57-63 s): a GPU session's few
minutes then hold the comparison, which eight sequential runs alone (8-9 minutes of
an H200 at :small) do not beside anything else. The projection is printed as such
and kept in the record.

Each run's time is also split at its log.txt lines (PHASES): imports, setup (init,
training data, the step-0 curve point), training (compilation, steps, curve points,
saves), evaluation, figures and exit, so that a GPU run says where its fixed costs
lie; then finer, from the log's own lines (`setup_and_seed_seconds`): the model's
first state, the device table's images and placing, the step-0 curve point, and
each seed's test scores and figures. Run with JAX_LOG_COMPILES=1 in the environment
(the GPU launcher does), each run's log also says how much of each part was XLA
compiling (`compile_seconds`). The last line is JSON with every figure.
"""

import argparse
import datetime
import json
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # runs from a checkout without installing the package

from causal_disent import cli  # noqa: E402
from causal_disent.runs import records  # noqa: E402
from causal_disent.runs.seeds import seed_workdir  # noqa: E402
from causal_disent.utils import arguments  # noqa: E402


TIMING_FILE = "wall_seconds.json"


def timed_run(config: str, workdir: Path, overrides: list[str]) -> float:
    """Wall seconds of one `python -m causal_disent.main` run; its output goes to
    workdir/stdout.txt, and a failure stops the benchmark with that file's tail.

    The time is kept in workdir/wall_seconds.json, so that rerunning the benchmark
    with the same --root (a device command's time limit cut it short) times only
    the runs that had not finished; a run cut short is started again from nothing."""
    # Every run compiles from nothing, as these runs did before the command line kept a
    # cache of compiled programs: later sequential runs would otherwise skip theirs.
    command = [sys.executable, "-m", "causal_disent.main", f"--config={config}",
               f"--workdir={workdir}", "--compilation_cache=off", *overrides]
    timing = workdir / TIMING_FILE
    if timing.exists():
        earlier = json.loads(timing.read_text())
        if earlier["command"][1:] != command[1:]:
            sys.exit(f"error: {workdir} holds a run of another command "
                     f"({' '.join(earlier['command'][1:])}); give another --root")
        print(f"{workdir.name}: {earlier['seconds']:.1f} s, timed earlier", flush=True)
        return earlier["seconds"]
    shutil.rmtree(workdir, ignore_errors=True)  # a run cut short would resume, not start
    workdir.mkdir(parents=True)
    started_at, start = time.time(), time.perf_counter()
    with open(workdir / "stdout.txt", "w") as out:
        completed = subprocess.run(command, cwd=REPO, stdout=out, stderr=subprocess.STDOUT)
    seconds = time.perf_counter() - start
    if completed.returncode != 0:
        tail = (workdir / "stdout.txt").read_text().splitlines()[-20:]
        sys.exit(f"{' '.join(command)} failed (exit {completed.returncode}):\n" + "\n".join(tail))
    timing.write_text(json.dumps({"command": command, "seconds": seconds,
                                  "started_at": started_at}))
    print(f"{workdir.name}: {seconds:.1f} s", flush=True)
    return seconds


# Where a run's wall time went, between the first log.txt line at or after each
# marker (the last one for the "last" markers): (phase, marker that ends it, last?).
PHASES = (
    ("imports", None, False),  # process start -> the run's first log line
    ("setup", "compiling the", False),  # init, training data, the step-0 curve point
    ("training", "steps/s", True),  # compilation, steps, curve points, saves
    ("evaluation", "results:", True),  # the test scores (every seed's)
    ("figures", "summary", False),
)


def phase_seconds(run_dir: Path) -> dict[str, float]:
    """Seconds of each of PHASES and of "exit" (the summary to the process's end),
    from the run's log.txt and the start and length kept in its TIMING_FILE; {} for
    a run timed before its start was kept, or whose log lacks a marker."""
    timing_file = run_dir / TIMING_FILE
    if not timing_file.is_file():
        return {}
    timing = json.loads(timing_file.read_text())
    ends = phase_ends(log_lines(run_dir))
    if "started_at" not in timing or ends is None:
        return {}
    seconds, previous = {}, timing["started_at"]
    for phase, ended in ends:
        seconds[phase], previous = ended - previous, ended
    seconds["exit"] = timing["started_at"] + timing["seconds"] - previous
    return seconds


def phase_ends(lines: list[tuple[float, str]]) -> list[tuple[str, float]] | None:
    """(phase, when it ended) for each of PHASES, from a run's `log_lines`; None
    without lines or when a marker is missing."""
    if not lines:
        return None
    ends, previous = [], lines[0][0]
    for phase, marker, last in PHASES:
        if marker is None:
            ended = lines[0][0]
        else:
            times = [when for when, message in lines if marker in message and when >= previous]
            if not times:
                return None
            ended = times[-1] if last else times[0]
        ends.append((phase, ended))
        previous = ended
    return ends


# The line JAX logs after compiling a program when JAX_LOG_COMPILES=1.
_COMPILED = re.compile(r"Finished XLA compilation of .* in ([0-9.]+(?:e-?[0-9]+)?) sec")


def compile_seconds(run_dir: Path) -> dict[str, float]:
    """Seconds XLA spent compiling within each of PHASES and "exit", each program
    counted in the part where its compilation ended, from the lines JAX logs with
    JAX_LOG_COMPILES=1 (launch/gpu_loop_benchmarks.sh sets it); {} without them."""
    lines = log_lines(run_dir)
    ends = phase_ends(lines)
    compiled = [(when, float(match.group(1))) for when, message in lines
                if (match := _COMPILED.search(message))]
    if ends is None or not compiled:
        return {}
    totals = dict.fromkeys([phase for phase, _ in ends] + ["exit"], 0.0)
    for when, seconds in compiled:
        totals[next((phase for phase, ended in ends if when <= ended), "exit")] += seconds
    return totals


def log_lines(run_dir: Path) -> list[tuple[float, str]]:
    """The run's log.txt as (epoch seconds, message), a message of several lines
    joined; [] without a log."""
    log = run_dir / "log.txt"
    if not log.is_file():
        return []
    lines = []
    for line in log.read_text().splitlines():
        day, clock, _level, message = (line.split(" ", 3) + ["", "", "", ""])[:4]
        try:  # logging's local time, as time.time() counts it
            when = datetime.datetime.strptime(f"{day} {clock}", "%Y-%m-%d %H:%M:%S,%f")
        except ValueError:  # the next line of a message of several lines
            if lines:
                lines[-1] = (lines[-1][0], f"{lines[-1][1]}\n{line}")
            continue
        lines.append((when.timestamp(), message))
    return lines


def setup_and_seed_seconds(run_dir: Path) -> dict:
    """Finer than PHASES, from the log's own lines: setup's parts ("init": the
    model's first state; "images": the training images read or rendered for the
    device table, "placing": the table copied to the devices, both as the run
    logged them; "step-0 point": from the placing to the first curve point), and per
    seed the test scores ("scores", "evaluating on" to "results:"), the pause before
    each seed's scores after the first (its state taken out and its checkpoint
    started: "between") and this process's share of its figures ("figures").
    Whatever the log does not hold is left out."""
    lines = log_lines(run_dir)

    def first(marker: str) -> tuple[float, str] | None:
        return next(((when, message) for when, message in lines if marker in message), None)

    def logged_seconds(marker: str) -> float | None:
        found = first(marker)
        return None if found is None else float(found[1].split(marker)[1].split()[0])

    details = {}
    init, built = first("initialising the model"), first("parameters; training")
    if init and built:
        details["init"] = built[0] - init[0]
    for name, marker in (("images", "read or rendered in"),
                         ("placing", "placed on the devices in")):
        value = logged_seconds(marker)
        if value is not None:
            details[name] = value
    placed, point = first("placed on the devices in"), first("step 0: test NLL")
    if placed and point and point[0] >= placed[0]:
        details["step-0 point"] = point[0] - placed[0]
    starts = [when for when, message in lines if "evaluating on" in message]
    ends = [when for when, message in lines if "results:" in message]
    if starts and len(starts) == len(ends):
        details["scores"] = [end - start for start, end in zip(starts, ends)]
        details["between"] = [start - end for start, end in zip(starts[1:], ends)]
    figures = [float(message.split("figures:")[1].split()[0])
               for _, message in lines if "'s figures:" in message]
    if figures:
        details["figures"] = figures
    return details


def format_details(details: dict) -> str:
    """`setup_and_seed_seconds` in one line: "init 7.2, images 10.0, ... scores
    [2.5 0.8], ..."."""
    return ", ".join(
        f"{name} {value:.1f}" if not isinstance(value, list)
        else f"{name} [{' '.join(f'{item:.2f}' for item in value)}]"
        for name, value in details.items())


def test_nll(run_dir: Path) -> float:
    return json.loads((run_dir / "results.json").read_text())["vae"]["test_nll"]


def parse_args(argv: list[str] | None = None) -> tuple[argparse.Namespace, list[str]]:
    """The script's flags, and the `--config.X=V` overrides given to every run (e.g.
    `--config.vae.train.steps_per_call=10 --config.vae.train.device_data=on`)."""
    parser = arguments.OneLineArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", default="configs/betavae_dsprites_synth.py:small")
    parser.add_argument("--seeds", type=arguments.positive_int, default=8)
    parser.add_argument("--sequential_runs", type=arguments.non_negative_int, default=0,
                        help="time only this many sequential runs (seeds 0, 1, ...) and "
                             "project the --seeds runs' time from their mean (default: all)")
    parser.add_argument("--root", default="", help="folder for the workdirs (default: a new temporary one)")
    records.add_record_flag(parser)
    args, rest = parser.parse_known_args(argv)
    unknown = [flag for flag in rest if not flag.startswith("--config.")]
    if unknown:
        sys.exit(f"error: unrecognised arguments {' '.join(unknown)}; give a run's "
                 f"settings as --config.X=V")
    if args.seeds < 2:
        sys.exit(f"error: --seeds={args.seeds}: a stacked run needs at least 2 seeds")
    if not 0 <= args.sequential_runs <= args.seeds:
        sys.exit(f"error: --sequential_runs={args.sequential_runs} must lie in 1..--seeds "
                 f"({args.seeds}), or be 0 for all of them")
    args.sequential_runs = args.sequential_runs or args.seeds
    return args, rest


def main() -> None:
    args, overrides = parse_args()
    recorder = records.script_recorder(args.record)
    root = Path(args.root or tempfile.mkdtemp(prefix="seed_stacking_runs_"))

    timed = args.sequential_runs
    sequential = [timed_run(args.config, root / f"seed_{k}", [f"--config.seed={k}", *overrides])
                  for k in range(timed)]
    stacked = timed_run(args.config, root / "stacked",
                        [f"--config.num_seeds={args.seeds}", *overrides])
    sequential_total = sum(sequential) * args.seeds / timed
    sequential_nll = [test_nll(root / f"seed_{k}") for k in range(timed)]
    stacked_nll = [test_nll(seed_workdir(root / "stacked", k)) for k in range(args.seeds)]

    print(f"{args.config} {' '.join(overrides)}, S = {args.seeds}, workdirs in {root}")
    print("sequential runs (s): " + " ".join(f"{s:.1f}" for s in sequential))
    projected = (f" (projected: {args.seeds} × the mean of the {timed} timed)"
                 if timed < args.seeds else "")
    print(f"{args.seeds} sequential runs {sequential_total:.0f} s{projected}, one stacked run "
          f"{stacked:.0f} s: {sequential_total / stacked:.2f}x less wall time")
    names = [f"seed_{k}" for k in range(timed)] + ["stacked"]
    phases = {name: phase_seconds(root / name) for name in names}
    print("where each run's time went (s): " + ", ".join(
        phase for phase, _, _ in PHASES) + ", exit")
    for name in names:
        if phases[name]:
            print(f"  {name}: " + " ".join(f"{value:.1f}" for value in phases[name].values()))
    details = {name: setup_and_seed_seconds(root / name) for name in names}
    print("their parts (s; per seed in brackets):")
    for name in names:
        print(f"  {name}: {format_details(details[name])}")
    compiling = {name: compile_seconds(root / name) for name in names}
    if any(compiling.values()):
        print("XLA compiling within each of those (s; runs with JAX_LOG_COMPILES=1):")
        for name, seconds in compiling.items():
            if seconds:
                print(f"  {name}: " + " ".join(f"{value:.1f}" for value in seconds.values()))
    print("test NLL per seed, sequential / stacked:")
    for k, b in enumerate(stacked_nll):
        a = f"{sequential_nll[k]:.2f}" if k < timed else "–"
        print(f"  seed {k}: {a} / {b:.2f}")
    figures = {"config": args.config, "overrides": overrides, "seeds": args.seeds,
               "sequential_s": sequential, "sequential_total_s": sequential_total,
               "sequential_projected": timed < args.seeds,
               "stacked_s": stacked, "speedup": sequential_total / stacked,
               "sequential_test_nll": sequential_nll, "stacked_test_nll": stacked_nll,
               "phase_seconds": phases, "part_seconds": details,
               "compile_seconds": compiling}
    print(json.dumps(figures))
    records.write_or_exit(recorder, figures)


if __name__ == "__main__":
    cli.run_script(main)
