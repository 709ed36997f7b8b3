r"""How much of a training run the loop, not the compiled step, costs.

  python benchmarks/loop_overhead.py                       # every case, 150 steps each
  python benchmarks/loop_overhead.py --cases=betavae,ct --steps=100
  python benchmarks/loop_overhead.py --cases=betavae --profile=/tmp/traces

Each case trains one stage with `stages.run`, exactly as `causal_disent.main` does
(the input pipeline, host-to-device transfer, dispatch, logging, metrics rows,
checkpoints, signal checks; learning-curve points off), and reads the loop off a
`jax.profiler` trace with the Python tracer on: nothing in the library is wrapped or
replaced while it runs. The trace starts when the stage's first training row reaches
metrics.jsonl (its first log step, `train.log_every_steps`) and stops half a second
after its final checkpoint appears, so that it holds the loop and not JAX compiling
the stages or the stage's evaluation (TraceFromFirstRow).

The timed loop is the stage's `loop.fit` call on the host's main thread, from the
first call of the step that began after the trace did, to fit's return (a trace of a
whole fit starts after its first call instead). A call of the step that compiled (at
one step a call, CT-VAE's stage 2 compiles each mode's step when it first meets it) is
left out, with its steps; a compilation elsewhere (the learning-rate schedule's, at a
log step with a new number of rows) only for its own time. The loop's time is split by
the frame the host's main thread was in, the innermost one named here:

  data         the batch iterator (the pipeline's prefetching generator)
  step call    the step function of `dispatch`: the batch's transfer to the devices,
               preparing it (stage 2 from images: the frozen stage 1 encodes them),
               dispatching the jitted call
  device wait  waiting for the device: `dispatch` staying at most two calls ahead
               (block_until_ready) and the metrics' read-back at log and save steps
               (device_get)
  rows         the rest of a log step: the rows' conversion, handing them to the
               writer, the progress line
  saves        checkpoint saves (periodic and final) and the wait for them
  rest         the loop's own code between these: signal and deadline checks

Two shares of the window say how busy the step kept the machine: the device's busy
share (the union of its operations, benchmarks/trace_gaps.py: an accelerator's
streams, or on a CPU XLA's compute threads) and the host's share in the step (step
call + device wait). On an accelerator the first is the figure: 1 means the loop never
left the device waiting. On a CPU the two bracket it: part of each step's work leaves
no event on XLA's compute threads (the host's wait for it shows as idle device time),
so the device's share is a lower bound, and the host's share an upper one (work the
host does outside the step may overlap the device's). What the loop itself adds is
read directly from the parts.

The Python tracer records every Python call, which slows the host's Python a little:
the rates are a traced run's. `--steps` (the stage's train.num_steps) must reach past
the stage's first log step. A trace's events are held in memory until it stops, and
XLA:CPU records one for each operation it runs: CT-VAE's stage 2 at one step a call
makes over a hundred thousand a step, about a third of a GB of memory, so on a CPU
keep its traced steps to a few tens. `--profile=DIR` keeps each case's trace in
DIR/<case> and prints, under its case, where in the timed loop the device idled and
what the host's main thread was doing then (benchmarks/trace_gaps.py).

Cases (configs at their `:small` sizes on `*_synth` data): betavae (S = 1),
betavae_s8 (8 stacked seeds; betavae_s8_matmul: seed_execution vmap_matmul),
factorvae, mcqvae (CT-VAE stage 1), ct (stage 2, its codes encoded by the frozen
stage 1 in each step) and ct_cache (stage 2 on the code cache, built first: seconds on
a GPU, about 13 minutes on 2 CPU cores; the path `--steps_per_call` > 1 needs). The
last line is JSON with every figure. The measured figures, and those of the method
before this one (the bare step timed alone), are in docs/accelerators.md.

`--repeats=N` measures each case N times (the timed stage trained afresh in one
workdir, earlier stages and the code cache kept) and reports the run of median device
busy share, with every run's figures.
"""

from __future__ import annotations

import dataclasses
import json
import platform
import shutil
import sys
import tempfile
import threading
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # runs from a checkout without installing the package

import jax  # noqa: E402

from causal_disent import cli  # noqa: E402
from causal_disent.runs import metrics_log, records  # noqa: E402
from causal_disent.train import stages  # noqa: E402
from causal_disent.utils import arguments  # noqa: E402
from benchmarks import trace_gaps  # noqa: E402

CASES = {
    # name: (config, stage timed, overrides)
    "betavae": ("configs/betavae_dsprites_synth.py:small", "vae", {}),
    "betavae_s8": ("configs/betavae_dsprites_synth.py:small", "vae", {"num_seeds": 8}),
    # The same with the seeds' convolutions as batched matmuls (train/seed_stacking.py).
    "betavae_s8_matmul": ("configs/betavae_dsprites_synth.py:small", "vae",
                          {"num_seeds": 8, "seed_execution": "vmap_matmul"}),
    "factorvae": ("configs/factorvae_dsprites_synth.py:small", "vae", {}),
    "mcqvae": ("configs/ctvae_shapes3d.py:small", "mcqvae", {"stages": ("mcqvae",)}),
    "ct": ("configs/ctvae_shapes3d.py:small", "ct", {"ct.train.code_source": "encode"}),
    "ct_cache": ("configs/ctvae_shapes3d.py:small", "ct", {"ct.train.code_source": "cache"}),
}
DEFAULT_CASES = ("betavae", "betavae_s8", "factorvae", "mcqvae", "ct")
PARTS = ("data", "step call", "device wait", "rows", "saves", "rest")
# The Python tracer on (it names the host's frames), the programs' HLO left out.
PROFILE_OPTIONS = jax.profiler.ProfileOptions()
PROFILE_OPTIONS.python_tracer_level = 1
PROFILE_OPTIONS.enable_hlo_proto = False

# Frames as the Python tracer names them: "$file.py:line function".
LOOP_FILE, LOOP_FUNCTION = "loop.py", "fit"
WINDOW_START = ("loop.py", "start_timing")  # ends when the first call is done
DISPATCH = ("loop.py", "dispatch")
# JAX's frame that compiles (or loads) a program. A call of the step that compiled is
# left out with its steps; elsewhere only the compilation's own time is.
LEFT_OUT = "compiling"
# The innermost of these frames names the part the time inside it goes to.
NAMED_PARTS = {DISPATCH: "step call", ("api.py", "block_until_ready"): "device wait",
               ("api.py", "device_get"): "device wait", ("loop.py", "log_if_due"): "rows",
               ("loop.py", "save"): "saves", ("checkpoint.py", "wait"): "saves",
               ("compiler.py", "compile_or_get_cached"): LEFT_OUT}
# A frame directly in fit's loop from any other file is the batch iterator resuming
# (fit's `zip` over it): the files of fit's own calls, and the interpreter's.
LOOP_OWN_FILES = ("loop.py", "checkpoint.py", "contextlib.py", "builtins", "<unknown>")


def frame(name: str) -> tuple[str, str] | None:
    """("file.py", "function") of a Python tracer event's name; None for the other
    events (XLA's and the runtime's own)."""
    if not name.startswith(trace_gaps.PYTHON_EVENT_PREFIX):
        return None
    place, _, function = name[1:].partition(" ")
    return place.rsplit(":", 1)[0], function


@dataclasses.dataclass
class LoopTrace:
    """The timed loop in a trace, split into PARTS (nanoseconds)."""

    start_ns: int  # the window: from the first timed call to fit's return
    end_ns: int
    calls: int  # of the step, timed
    compiling: list[tuple[int, int]]  # left out, disjoint: calls of the step that
    # compiled, and the compilations in other calls
    parts_ns: dict[str, int]

    @property
    def window_ns(self) -> int:
        return self.end_ns - self.start_ns - sum(end - start for start, end in self.compiling)


def loop_trace(main_thread) -> LoopTrace:
    """The last `loop.fit` call among the host main thread's events (start, end, name;
    a re-iterable in start order, as a trace's line holds them), its window, its timed
    calls and its parts. Two passes, keeping only the frames the parts are named by: a
    traced run holds millions of events, most of them JAX tracing and compiling.
    ValueError when the trace holds no whole timed loop."""
    fits, timings, dispatches = [], [], []
    for start, end, name in main_thread:
        if name.endswith(f" {LOOP_FUNCTION}") and frame(name) == (LOOP_FILE, LOOP_FUNCTION):
            fits.append((start, end))
        elif name.endswith(f" {WINDOW_START[1]}") and frame(name) == WINDOW_START:
            timings.append((start, end))
        elif name.endswith(f" {DISPATCH[1]}") and frame(name) == DISPATCH:
            dispatches.append(start)
    if not fits:
        raise ValueError("the trace holds no loop.fit call on the host's main thread: "
                         "trace a whole stage, with the Python tracer on")
    fit_start, fit_end = max(fits)
    # After the first call (compiling), or, in a trace that began inside the loop, at
    # the first call that began after the trace did.
    ends = [end for start, end in timings if fit_start <= start < fit_end]
    later_calls = [start for start in dispatches if fit_start < start < fit_end]
    if not (ends or later_calls) or (ends and ends[0] >= fit_end):
        raise ValueError("the traced loop.fit holds no call of the step after its first: "
                         "train at least two calls")
    window_start = ends[0] if ends else later_calls[0]
    parts = dict.fromkeys(PARTS, 0)
    calls, compiling = 0, []
    for top, nested in _top_level_calls(main_thread, window_start, fit_end):
        compiles = [event[:2] for event in nested if NAMED_PARTS[frame(event[2])] == LEFT_OUT]
        if compiles and frame(top[2]) == DISPATCH:  # the call and its steps
            compiling.append(top[:2])
            continue
        compiling += compiles  # elsewhere (e.g. at a log step) only the compilation
        calls += frame(top[2]) == DISPATCH
        for part, nanoseconds in _attributed(top, nested).items():
            if part != LEFT_OUT:
                parts[part] += nanoseconds
    found = LoopTrace(window_start, fit_end, calls, trace_gaps.merged(compiling), parts)
    parts["rest"] += found.window_ns - sum(parts.values())
    return found


def _top_level_calls(events, start_ns: int, end_ns: int):
    """(call, the named frames inside it) for each event of fit's loop that starts in
    [start_ns, end_ns) and lies in no other such event."""
    top, nested = None, []
    for event in events:
        start, end, name = event
        if start < start_ns:
            continue
        if start >= end_ns:
            break
        if top is None or start >= top[1]:
            if top is not None:
                yield top, nested
            top, nested = event, []
            continue
        if name.startswith(trace_gaps.PYTHON_EVENT_PREFIX) and frame(name) in NAMED_PARTS:
            nested.append(event)
    if top is not None:
        yield top, nested


def _attributed(top: tuple[int, int, str], named_inside) -> dict[str, int]:
    """The nanoseconds of one call of fit's loop, split by the innermost named frame
    (NAMED_PARTS) around each moment; `named_inside`: those frames within it, in
    start order (the frames that name no part take their caller's)."""
    named = frame(top[2])
    part = NAMED_PARTS.get(named) or (
        "data" if named is not None and named[0] not in LOOP_OWN_FILES else "rest")
    totals = {part: top[1] - top[0]}
    open_events = [(top[1], part)]  # (end, part), innermost last
    for start, end, name in named_inside:
        while len(open_events) > 1 and open_events[-1][0] <= start:
            open_events.pop()
        parent_end, parent_part = open_events[-1]
        end = min(end, parent_end)  # an event that overlaps its parent's end is cut there
        part = NAMED_PARTS[frame(name)]
        if part != parent_part:
            totals[part] = totals.get(part, 0) + end - start
            totals[parent_part] -= end - start
        open_events.append((end, part))
    return totals


def loop_line(profile):
    """The host line (thread) that ran the last `loop.fit`: the trace may have been
    started by another thread. ValueError when there is none."""
    found, latest = None, None
    for plane in profile.planes:
        if not plane.name.startswith("/host:"):
            continue
        for line in plane.lines:
            for event in line.events:
                name = event.name
                if (name.endswith(f" {LOOP_FUNCTION}")
                        and frame(name) == (LOOP_FILE, LOOP_FUNCTION)
                        and (latest is None or event.start_ns > latest)):
                    found, latest = line, event.start_ns
    if found is None:
        raise ValueError("the trace holds no loop.fit call: trace a stage's training, "
                         "with the Python tracer on")
    return found


class LineEvents:
    """A trace line's events as (start, end, name), read afresh on each iteration."""

    def __init__(self, line):
        self.line = line

    def __iter__(self):
        return ((event.start_ns, event.end_ns, event.name) for event in self.line.events)


def busy_in_window(operations, found: LoopTrace) -> int:
    """Nanoseconds in the loop's window (its compiling calls left out) in which the
    device ran at least one of its `operations` (start, end, name)."""
    busy = trace_gaps.merged((max(start, found.start_ns), min(end, found.end_ns))
                             for start, end, _ in operations)
    return sum(end - start for start, end in busy) - sum(
        max(0, min(end, c_end) - max(start, c_start))
        for start, end in busy for c_start, c_end in found.compiling)


def figures_of(profile, steps_per_call: int, line=None) -> tuple[dict, LoopTrace]:
    """The benchmark's figures of one traced run (rates, shares and ms per step), and
    the timed loop they were read from; `line`: the loop's (`loop_line`'s when None)."""
    found = loop_trace(LineEvents(line if line is not None else loop_line(profile)))
    steps = found.calls * steps_per_call
    if steps < 1:
        raise ValueError("every call of the timed loop compiled; nothing was left to "
                         "time: raise --steps")
    _, operations = trace_gaps.device_operations(profile)
    busy = busy_in_window(operations, found)
    per_step = lambda nanoseconds: nanoseconds / steps / 1e6  # noqa: E731
    in_step = found.parts_ns["step call"] + found.parts_ns["device wait"]
    return {"steps": steps, "loop_steps_per_s": steps / (found.window_ns / 1e9),
            "device_busy_share": busy / found.window_ns,
            "host_in_step_share": in_step / found.window_ns,
            "loop_ms_per_step": per_step(found.window_ns),
            "device_busy_ms_per_step": per_step(busy),
            "ms_per_step": {part: per_step(found.parts_ns[part]) for part in PARTS},
            "compilations_left_out": len(found.compiling),
            "compiling_seconds_left_out": sum(end - start
                                              for start, end in found.compiling) / 1e9
            }, found


def configured(case: str, steps: int, steps_per_call: int = 1, device_data: str = "off",
               unroll_call: str = "auto"):
    path, stage, overrides = CASES[case]
    config = cli.load_config_file(str(REPO / path), lock=False)
    section = config[stage]
    section.train.num_steps = steps
    section.train.steps_per_call = steps_per_call
    section.train.unroll_call = unroll_call
    section.train.device_data = device_data
    for name in ("log_every_steps", "checkpoint_every_steps"):  # multiples of k
        section.train[name] = max(steps_per_call,
                                  section.train[name] // steps_per_call * steps_per_call)
    section.train.eval_every_steps = 0
    if "num_eval_images" in section.train:
        section.train.num_eval_images = 64
    if "eval" in section:
        section.eval.num_test_pairs = 64
    if stage == "ct":  # a short stage 1 to load; only stage 2 is timed
        config.mcqvae.train.num_steps = 20
        config.mcqvae.train.eval_every_steps = 0
        config.mcqvae.train.num_eval_images = 64
    for dotted, value in overrides.items():
        *parents, name = dotted.split(".")
        target = config
        for part in parents:
            target = target[part]
        target[name] = value
    return config, stage


class TraceFromFirstRow(threading.Thread):
    """Traces the stage's loop with jax.profiler (Python tracer on), from when
    `stage`'s first training row reaches WORKDIR/metrics.jsonl (its first log step,
    after the first calls compiled) to STOP_AFTER_SECONDS after its final checkpoint
    (WORKDIR/checkpoints/STAGE/LAST_STEP) appears, when the loop has returned. The
    compilation before and the evaluation after would otherwise fill the trace with
    millions of Python and XLA events (traced, CT-VAE's evaluation alone can exhaust
    a CPU host's memory).
    The tracer follows every thread, this one's caller included; a frame still open
    when the trace stops is not recorded, hence the wait after the checkpoint."""

    def __init__(self, workdir: str, stage: str, last_step: int, directory: str):
        super().__init__(daemon=True)
        self.path = metrics_log.metrics_path(workdir)
        self.final_checkpoint = Path(workdir) / "checkpoints" / stage / str(last_step)
        self.stage, self.directory = stage, directory
        self.tracing = threading.Event()  # started and not yet stopped
        self.finished = threading.Event()  # the run is over: stop looking
        self.traced = False
        self.error: Exception | None = None

    def run(self) -> None:
        if not self._wait_for_first_row():
            return
        try:
            jax.profiler.start_trace(self.directory, profiler_options=PROFILE_OPTIONS)
        except Exception as error:  # pylint: disable=broad-except
            self.error = error
            return
        self.traced = True
        self.tracing.set()
        while not self.finished.is_set() and not self.final_checkpoint.is_dir():
            self.finished.wait(ROW_POLL_SECONDS)
        if not self.finished.wait(STOP_AFTER_SECONDS):
            self.stop()

    def stop(self) -> None:
        """Stops the trace if it is running (from this thread or the run's)."""
        with STOPPING:
            if self.tracing.is_set():
                self.tracing.clear()
                jax.profiler.stop_trace()

    def _wait_for_first_row(self) -> bool:
        offset = 0
        while not self.finished.is_set():
            try:
                size = self.path.stat().st_size
            except FileNotFoundError:
                size = 0
            if size < offset:  # rewritten (a stage's rows discarded): read it again
                offset = 0
            if size > offset:
                with self.path.open("rb") as file:
                    file.seek(offset)
                    text = file.read(size - offset)
                complete = text[:text.rfind(b"\n") + 1]  # a line still being written waits
                offset += len(complete)
                if any(self._is_training_row(line) for line in complete.splitlines()):
                    return True
            self.finished.wait(ROW_POLL_SECONDS)
        return False

    def _is_training_row(self, line: bytes) -> bool:
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            return False
        return row.get("stage") == self.stage and "split" not in row


ROW_POLL_SECONDS = 0.01
STOP_AFTER_SECONDS = 0.5
STOPPING = threading.Lock()


def measure(case: str, steps: int, steps_per_call: int, device_data: str, workdir: str,
            unroll_call: str = "auto", trace_dir: str | None = None) -> dict:
    """One run of the case in `workdir`, traced from the timed stage's first log step
    (TraceFromFirstRow), its figures read off the trace (kept in `trace_dir` when
    given, with the window's device gaps under "trace")."""
    config, stage = configured(case, steps, steps_per_call, device_data, unroll_call)
    log_every = config[stage].train.log_every_steps
    if steps <= log_every:
        raise ValueError(f"--steps={steps} ends at or before the stage's first log step "
                         f"({log_every}), where the trace starts: give --steps > {log_every}")
    with tempfile.TemporaryDirectory() as scratch:
        directory = trace_dir or scratch
        watcher = TraceFromFirstRow(workdir, stage, steps, directory)
        watcher.start()
        try:
            stages.run(config, workdir)
        finally:
            watcher.finished.set()
            watcher.join()
            watcher.stop()
        if watcher.error is not None:
            raise ValueError(f"the trace could not start ({watcher.error})")
        if not watcher.traced:
            raise ValueError(f"the {stage} stage wrote no training row, so nothing was "
                             f"traced: raise --steps past its log interval")
        profile = trace_gaps.load(directory)
    line = loop_line(profile)
    figures, found = figures_of(profile, steps_per_call, line)
    if trace_dir is not None:
        try:
            figures["trace"] = trace_gaps.summary(trace_gaps.trace_gaps(
                profile, window=(found.start_ns, found.end_ns), main_thread=line))
        except ValueError as error:  # e.g. a GPU whose tracer recorded no kernels
            figures["trace"] = {"error": str(error)}
    return figures


REPEAT_FIGURES = ("loop_steps_per_s", "device_busy_share", "host_in_step_share")


def measure_repeated(case: str, steps: int, steps_per_call: int = 1, device_data: str = "off",
                     repeats: int = 1, unroll_call: str = "auto",
                     trace_dir: str | None = None) -> dict:
    """The case measured `repeats` times in one workdir, the timed stage trained afresh
    each time (its checkpoints and TensorBoard events removed; the stages before it,
    and CT-VAE's code cache, are kept). Returns the repeat of median device busy share
    (the lower middle one for an even count), with every repeat's figures under
    "repeats" when there are several: on a shared CPU host the step's own pace drifts
    from one run to the next."""
    stage = CASES[case][1]
    with tempfile.TemporaryDirectory() as workdir:
        runs = []
        for repeat in range(repeats):
            if repeat:
                remove_stage_outputs(Path(workdir), stage)
            runs.append(measure(case, steps, steps_per_call, device_data, workdir,
                                unroll_call, trace_dir))
    if repeats == 1:
        return runs[0]
    median = sorted(runs, key=lambda run: run["device_busy_share"])[(repeats - 1) // 2]
    return {**median, "repeats": [{name: run[name] for name in REPEAT_FIGURES}
                                  for run in runs]}


def remove_stage_outputs(workdir: Path, stage: str) -> None:
    """Removes what makes `stage` resume or skip in `workdir`: its checkpoints (and
    its TensorBoard events, which would otherwise hold two runs); and its rows in
    metrics.jsonl, so that the next run's trace starts at that run's first row."""
    for folder in ("checkpoints", "tensorboard"):
        shutil.rmtree(workdir / folder / stage, ignore_errors=True)
    metrics_log.discard_after(workdir, stage, 0)


def printed_row(case: str, figures: dict) -> str:
    parts = figures["ms_per_step"]
    return (f"{case:11s} {figures['loop_steps_per_s']:8.2f} "
            f"{figures['device_busy_share']:6.3f} {figures['host_in_step_share']:6.3f}   "
            f"{figures['loop_ms_per_step']:8.1f} {figures['device_busy_ms_per_step']:8.1f} "
            + " ".join(f"{parts[part]:11.2f}" for part in PARTS))


def main() -> None:
    parser = arguments.OneLineArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", default=",".join(DEFAULT_CASES))
    parser.add_argument("--steps", type=arguments.positive_int, default=150,
                        help="the timed stage's train.num_steps; the trace starts at its "
                             "first log step")
    parser.add_argument("--steps_per_call", type=arguments.positive_int, default=1,
                        help="the timed stage's train.steps_per_call")
    parser.add_argument("--device_data", default="off", choices=("auto", "on", "off"),
                        help="the timed stage's train.device_data")
    parser.add_argument("--unroll_call", default="auto", choices=("auto", "on", "off"),
                        help="the timed stage's train.unroll_call (auto: unrolled on CPUs)")
    parser.add_argument("--repeats", type=arguments.positive_int, default=1,
                        help="runs of each case; the median busy share is printed and "
                             "recorded")
    parser.add_argument("--profile", default="",
                        help="keep each case's trace in PROFILE/<case> and print where in "
                             "the timed loop the device waited")
    records.add_record_flag(parser)
    args = parser.parse_args()
    recorder = records.script_recorder(args.record)
    cases = [case.strip() for case in args.cases.split(",") if case.strip()]
    unknown = [case for case in cases if case not in CASES]
    if unknown:
        sys.exit(f"error: unknown case {unknown[0]!r}; known: {', '.join(CASES)}")
    if args.steps < 2 * args.steps_per_call:  # the first call compiles and is not timed
        sys.exit(f"error: --steps={args.steps} leaves no call to time after the first "
                 f"(compiling) one; give at least --steps={2 * args.steps_per_call}")
    if args.profile and args.repeats > 1:
        sys.exit(f"error: --profile keeps one trace of each case, and --repeats="
                 f"{args.repeats} asks for several; drop one of them")
    if args.steps % args.steps_per_call:
        sys.exit(f"error: --steps={args.steps} is not a multiple of --steps_per_call="
                 f"{args.steps_per_call} (the loop runs whole calls); use e.g. --steps="
                 f"{-(-args.steps // args.steps_per_call) * args.steps_per_call}")
    device = jax.devices()[0]
    print(f"{platform.processor() or platform.machine()}, {device.platform} "
          f"({device.device_kind}), jax {jax.__version__}, {args.steps} steps per case, "
          f"steps_per_call {args.steps_per_call}, unroll_call {args.unroll_call}, "
          f"device_data {args.device_data}; traced")
    print(f"{'case':11s} {'loop/s':>8s} {'device':>6s} {'host':>6s}   ms per step: "
          f"{'loop':>8s} {'busy':>8s} " + " ".join(f"{part:>11s}" for part in PARTS))
    print(f"{'':11s} {'':8s} {'busy':>6s} {'in step':>6s}")
    results = {}
    for case in cases:
        try:
            figures = results[case] = measure_repeated(
                case, args.steps, args.steps_per_call, args.device_data, args.repeats,
                args.unroll_call, str(Path(args.profile) / case) if args.profile else None)
        except ValueError as error:  # the trace holds no loop to time
            sys.exit(f"error: {case}: {error}")
        print(printed_row(case, figures), flush=True)
        if figures["compilations_left_out"]:
            print(f"  left out: {figures['compilations_left_out']} compilation(s) after the "
                  f"first call, {figures['compiling_seconds_left_out']:.1f} s", flush=True)
        if "trace" in figures:
            trace = figures["trace"]
            print(f"  traced into {Path(args.profile) / case}:"
                  + (f" no summary: {trace['error']}" if "error" in trace else ""), flush=True)
            if "error" not in trace:
                for line in trace_gaps.report(trace, trace_gaps.DEFAULT_MIN_GAP_US):
                    print(f"    {line}", flush=True)
        if "repeats" in figures:
            print("  each repeat (loop steps/s, device busy, host in step): " + ", ".join(
                f"{run['loop_steps_per_s']:.2f} / {run['device_busy_share']:.3f} / "
                f"{run['host_in_step_share']:.3f}" for run in figures["repeats"]), flush=True)
    figures = {"device": device.device_kind, "method": "trace", "steps": args.steps,
               "steps_per_call": args.steps_per_call, "unroll_call": args.unroll_call,
               "device_data": args.device_data, "repeats": args.repeats, "cases": results}
    print(json.dumps(figures))
    records.write_or_exit(recorder, figures)


if __name__ == "__main__":
    cli.run_script(main)
