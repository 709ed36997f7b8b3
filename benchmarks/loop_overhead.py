r"""How much of a training run the loop, not the compiled step, costs.

  python benchmarks/loop_overhead.py                       # every case, 200 steps each
  python benchmarks/loop_overhead.py --cases=betavae,ct --steps=100

Each case trains one stage with `stages.run`, exactly as `causal_disent.main` does
(the input pipeline, host-to-device transfer, dispatch, logging, metrics rows,
checkpoints, signal checks; learning-curve points off), and times the loop from the
end of its first step (compilation) to its return. Then it times the bare compiled
step of the same stage on one batch already on the device, for the same number of
steps and the same sequence of modes, with nothing else in the loop. It prints both
rates, their ratio, and where the loop's time went:

  data       waiting for the next host batch (the pipeline's background thread)
  step call  the step function: host -> device transfer of the batch, preparing it
             (stage 2: images -> codes) and dispatching the jitted step
  rows       writing metrics.jsonl and TensorBoard rows at each log step
  saves      checkpoint saves (periodic and final) and the wait for them
  rest       the remainder: the host waiting for the device when it reads a log
             step's metrics back (on an idle host, most of the device's compute
             time lands here), progress lines, signal and deadline checks

A line under each case gives the loop's own step function (batch placement and the
compiled call of `--steps_per_call` steps) called back to back with nothing else:
between the bare step and the loop, it separates what the k-step call costs by itself
from what the rest of the loop costs. `--unroll_call=auto|on|off` sets the timed
stage's train.unroll_call (k steps unrolled, or a loop, whose control XLA:GPU runs on
the host). `--profile=DIR` traces each case's timed loop with jax.profiler into
DIR/<case> and prints, under its case, where the device idled and what the host's
main thread was doing then (benchmarks/trace_gaps.py); the rates are then a traced
run's.

Cases (configs at their `:small` sizes on `*_synth` data): betavae (S = 1),
betavae_s8 (8 stacked seeds; betavae_s8_matmul: seed_execution vmap_matmul),
factorvae, mcqvae (CT-VAE stage 1) and ct (stage 2, its codes encoded by the frozen
stage 1 in each step: the code cache of the paper config would first encode all
480 000 images, minutes on a CPU). The last line is JSON with every figure.

Measured on 2 idle CPU cores (jax 0.10.2, `--steps=100`, 2026-11-26; ms per step):

  case        loop/s  bare/s  ratio   bare   data  step call  rows  saves   rest
  betavae       7.22    7.39  0.977  135.4   0.57       89.0  0.34   1.11   47.5
  betavae_s8    1.09    1.09  0.993  915.5   4.63      613.9  0.56   4.49  298.0
  factorvae     5.08    5.31  0.958  188.5   0.66      125.2  1.53   2.34   67.1
  mcqvae        2.91    2.92  0.995  342.5   0.61      119.3  0.39   1.31  222.6
  ct            5.67   24.20  0.234   41.3   0.23      149.0  1.50   0.91   24.7

On the CPU the loop costs 0.5-4 % beside steps of 135-915 ms. For ct the ratio is not
loop overhead: the loop's step call encodes the batch's 32 images with the frozen
stage 1 (the encode path), the bare step starts from their codes, which is what the
code cache gives the loop.

After train.steps_per_call and train.device_data (2 idle CPU cores, `--steps=100`,
same day; the bare step's own rate moved by up to 10 % between runs):

  case        k  loop/s  bare/s  ratio
  betavae     1    7.28    7.67  0.949
  factorvae   1    5.23    5.82  0.900
  mcqvae      1    2.84    2.91  0.979
  betavae     4    7.46    7.03  1.062   (--steps_per_call=4: unrolled on a CPU)
  mcqvae      4    3.17    3.09  1.025

On one H200 (`--steps=400`; results/gpu_2026-11-26_h200_loop_overhead/):

  case        k, data          loop/s  bare/s  ratio
  betavae     1, host          217.0   778.5   0.279
  betavae_s8  1, host           66.0   152.1   0.434
  factorvae   1, host          149.9   550.2   0.272
  mcqvae      1, host          123.5   540.7   0.228
  betavae     10, device       346.1   756.5   0.457
  betavae_s8  10, device       102.4   150.8   0.679
  mcqvae      10, host         139.1   576.3   0.241   (its table is over 4 GB)

and at 990b16c (metric rows on a thread of their own), `--steps=1000`:

  betavae     10, device       547.4  1120.2   0.489
  betavae_s8  10, device       131.0   153.6   0.853

The one-seed run keeps the bare step's pace between checkpoints; a stall of about
0.7 s after the checkpoint at step 500 (both cases) sets its ratio
(docs/accelerators.md). At 2a15770 (the saves' check compiled with the first call;
another H200, results/gpu_2026-11-27_h200_loop_overhead/):

  betavae     10, device       575.3   735.5   0.782   (--steps=2000)
  betavae_s8  10, device       135.5   153.7   0.881   (--steps=1000)

the stall now 0.16 s a save at one seed, 0.27 s at eight.

`--cases=ct_cache` times stage 2 on the code cache (built first: seconds on a GPU,
about 13 minutes on 2 CPU cores), the path `--steps_per_call` > 1 needs.

`--repeats=N` measures each case N times (the timed stage trained afresh in one
workdir, earlier stages and the code cache kept) and reports the run of median ratio,
with every run's rates. On a shared CPU host the bare step's pace drifts between runs
(CT-VAE stage 2's from 6.2 to 8.8 steps/s), more than one ratio can resolve: stage 2
on its cache gave 0.85-1.03 over five runs at k = 1 (median 0.92) and 0.93-1.33 at
k = 4 with device data (median 0.99), 2026-11-28.
"""

from __future__ import annotations

import contextlib
import json
import platform
import shutil
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # runs from a checkout without installing the package

import jax  # noqa: E402

from causal_disent import cli  # noqa: E402
from causal_disent.runs import checkpoint, records  # noqa: E402
from causal_disent.train import loop, reporting, runner, stages  # noqa: E402
from causal_disent.utils import arguments  # noqa: E402
from causal_disent.utils.sharding import batch_sharded, global_batch, replicated  # noqa: E402
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
    # The code cache encodes all 480 000 images first: seconds on a GPU, about 13
    # minutes on 2 CPU cores.
    "ct_cache": ("configs/ctvae_shapes3d.py:small", "ct", {"ct.train.code_source": "cache"}),
}
DEFAULT_CASES = ("betavae", "betavae_s8", "factorvae", "mcqvae", "ct")
PARTS = ("data", "step call", "rows", "saves")
# The Python tracer on (which frame the host is in when the device idles), the
# programs' HLO left out of the trace file.
PROFILE_OPTIONS = jax.profiler.ProfileOptions()
PROFILE_OPTIONS.python_tracer_level = 1
PROFILE_OPTIONS.enable_hlo_proto = False


class Recorder:
    """Wraps the loop's parts for one stage and keeps what the bare timing needs; with
    `profile_dir`, also traces the timed loop there (jax.profiler)."""

    def __init__(self, stage: str, profile_dir: str | None = None):
        self.stage = stage
        self.profile_dir = profile_dir
        self.tracing = False
        self.seconds = dict.fromkeys(PARTS, 0.0)
        self.training = self.mesh = self.first_batch = self.state = None
        self.step_fn = None  # the loop's own step function (runner.compiled_step_fn)
        self.first_step = self.timed_from = self.timed_to = None
        self.steps_per_call = 1
        self.calls = 0
        # Calls that compiled a mode first met after the first call (CT-VAE stage 2
        # compiles each mode when it first runs): left out of the loop's time.
        self.compiling_seconds, self.compiling_calls = 0.0, 0
        self.modes_seen: set = set()

    def add(self, part: str, started: float) -> None:
        if self.timed_from is not None:  # after the first (compiling) step
            self.seconds[part] += time.perf_counter() - started

    @contextlib.contextmanager
    def installed(self):
        original_step_fn = runner.compiled_step_fn
        original_fit = loop.fit
        original_write = reporting.MetricsWriter.write
        original_save = checkpoint.StageCheckpoints.save
        original_wait = checkpoint.StageCheckpoints.wait
        original_timing = reporting.Progress.start_timing
        recorder = self

        def step_fn_factory(training, mesh, stage="", steps_per_call=1, unroll_call="auto"):
            step_fn, rows_of_call = original_step_fn(training, mesh, stage, steps_per_call,
                                                     unroll_call)
            if stage != recorder.stage:
                return step_fn, rows_of_call
            recorder.training, recorder.mesh, recorder.step_fn = training, mesh, step_fn
            recorder.steps_per_call = steps_per_call

            def timed_step(state, local_batch, step):
                if recorder.first_batch is None:
                    recorder.first_batch, recorder.first_step = local_batch, step
                modes = ({training.mode_of_step(s) for s in range(step, step + steps_per_call)}
                         if training.mode_of_step is not None and steps_per_call == 1 else set())
                compiles = recorder.calls > 0 and bool(modes - recorder.modes_seen)
                recorder.modes_seen |= modes
                started = time.perf_counter()
                new_state, metrics = step_fn(state, local_batch, step)
                if compiles:
                    jax.block_until_ready(new_state)
                    recorder.compiling_seconds += time.perf_counter() - started
                    recorder.compiling_calls += 1
                else:
                    recorder.add("step call", started)
                recorder.state = new_state
                recorder.calls += 1
                return new_state, metrics

            return timed_step, rows_of_call

        def timed_batches(batches):
            iterator = iter(batches)
            while True:
                started = time.perf_counter()
                try:
                    batch = next(iterator)
                except StopIteration:
                    return
                recorder.add("data", started)
                yield batch

        def fit(**kwargs):
            if kwargs["stage"] != recorder.stage:
                return original_fit(**kwargs)
            kwargs["local_batches"] = timed_batches(kwargs["local_batches"])
            try:
                state = original_fit(**kwargs)
                recorder.timed_to = time.perf_counter()
            finally:
                if recorder.tracing:
                    jax.profiler.stop_trace()
                    recorder.tracing = False
            return state

        def timing(progress, step):
            if progress.stage == recorder.stage:
                if recorder.profile_dir is not None:
                    jax.profiler.start_trace(recorder.profile_dir,
                                             profiler_options=PROFILE_OPTIONS)
                    recorder.tracing = True
                recorder.timed_from = time.perf_counter()
            return original_timing(progress, step)

        def write(writer, stage, rows):
            started = time.perf_counter()
            original_write(writer, stage, rows)
            if stage == recorder.stage:
                recorder.add("rows", started)

        def timed_saving(original):
            def timed(checkpoints, *args, **kwargs):
                started = time.perf_counter()
                original(checkpoints, *args, **kwargs)
                if checkpoints.directory.name == recorder.stage:
                    recorder.add("saves", started)
            return timed

        patches = [(runner, "compiled_step_fn", step_fn_factory), (runner, "fit", fit),
                   (reporting.MetricsWriter, "write", write),
                   (checkpoint.StageCheckpoints, "save", timed_saving(original_save)),
                   (checkpoint.StageCheckpoints, "wait", timed_saving(original_wait)),
                   (reporting.Progress, "start_timing", timing)]
        originals = [(owner, name, getattr(owner, name)) for owner, name, _ in patches]
        for owner, name, replacement in patches:
            setattr(owner, name, replacement)
        try:
            yield self
        finally:
            for owner, name, original in originals:
                setattr(owner, name, original)


def bare_rate(recorder: Recorder, steps: int) -> float:
    """Steps/s of the stage's jitted step(s) on one device-resident batch, in the
    loop's sequence of modes, with nothing else in the loop."""
    training, mesh = recorder.training, recorder.mesh
    batch = recorder.first_batch
    if recorder.steps_per_call > 1:  # one step's batch of the first call's k
        batch = jax.tree.map(lambda x: x[0], batch)
    if training.device_data is not None:  # the rows' data, gathered once on the host
        batch = training.device_data.gather(training.device_data.table, batch)
    batch = global_batch(batch, mesh)
    if training.prepare_batch is not None:
        batch = training.prepare_batch(batch)
    compiled = {mode: jax.jit(step, in_shardings=(replicated(mesh), batch_sharded(mesh),
                                                  replicated(mesh)),
                              out_shardings=(replicated(mesh), replicated(mesh)),
                              donate_argnums=0)
                for mode, step in training.steps.items()}
    first = recorder.first_step
    modes = [next(iter(compiled)) if training.mode_of_step is None
             else training.mode_of_step(first + k) for k in range(steps)]
    state = recorder.state
    for mode in dict.fromkeys(modes):  # compile each mode once, untimed
        state, _ = compiled[mode](state, batch, training.rng)
    jax.block_until_ready(state)
    started = time.perf_counter()
    for mode in modes:
        state, _ = compiled[mode](state, batch, training.rng)
    jax.block_until_ready(state)
    recorder.state = state  # the one it started from was donated
    return steps / (time.perf_counter() - started)


def call_rate(recorder: Recorder, steps: int) -> float:
    """Steps/s of the loop's own step function (its batch placement and compiled call
    of k steps, unrolled or a loop as configured) called back to back on the first
    call's batch, in the loop's sequence of steps, with nothing else in the loop:
    between the bare step and the loop, it tells the k-step call's own cost (on a
    GPU, a loop's control runs on the host) from the rest of the loop's."""
    k = recorder.steps_per_call
    starts = [recorder.first_step + k * call for call in range(max(1, steps // k))]
    state = recorder.state
    state, _ = recorder.step_fn(state, recorder.first_batch, starts[0])  # warm, untimed
    jax.block_until_ready(state)
    started = time.perf_counter()
    for step in starts:
        state, _ = recorder.step_fn(state, recorder.first_batch, step)
    jax.block_until_ready(state)
    recorder.state = state
    return len(starts) * k / (time.perf_counter() - started)


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


def measure(case: str, steps: int, steps_per_call: int, device_data: str,
            workdir: str, unroll_call: str = "auto", profile_dir: str | None = None) -> dict:
    """One run of the case's timed stage in `workdir`, then its bare step and the
    loop's step function alone, timed right after it. With `profile_dir`, the timed
    loop is traced there and the figures hold the trace's gaps under "trace"
    (benchmarks/trace_gaps.py)."""
    config, stage = configured(case, steps, steps_per_call, device_data, unroll_call)
    with Recorder(stage, profile_dir).installed() as recorder:
        stages.run(config, workdir)
        loop_seconds = recorder.timed_to - recorder.timed_from - recorder.compiling_seconds
        # From the end of the first (compiling) call.
        timed_steps = (recorder.calls - 1 - recorder.compiling_calls) * steps_per_call
        if timed_steps < 1:
            sys.exit(f"error: every call of the {steps} steps compiled; nothing was left "
                     f"to time: raise --steps")
        loop_rate = timed_steps / loop_seconds
        rate = bare_rate(recorder, timed_steps)
        call = call_rate(recorder, timed_steps)
    parts = {part: seconds / timed_steps * 1e3 for part, seconds in recorder.seconds.items()}
    parts["rest"] = loop_seconds / timed_steps * 1e3 - sum(parts.values())
    figures = {"steps": timed_steps, "loop_steps_per_s": loop_rate, "bare_steps_per_s": rate,
               "ratio": loop_rate / rate, "ms_per_step": parts,
               "bare_ms_per_step": 1e3 / rate, "call_steps_per_s": call}
    if profile_dir is not None:
        try:
            figures["trace"] = trace_gaps.summary(trace_gaps.trace_gaps(
                trace_gaps.load(profile_dir)))
        except ValueError as error:  # e.g. a GPU whose tracer recorded no kernels
            figures["trace"] = {"error": str(error)}
    return figures


REPEAT_FIGURES = ("loop_steps_per_s", "bare_steps_per_s", "ratio", "call_steps_per_s")


def measure_repeated(case: str, steps: int, steps_per_call: int = 1, device_data: str = "off",
                     repeats: int = 1, unroll_call: str = "auto",
                     profile_dir: str | None = None) -> dict:
    """The case measured `repeats` times in one workdir, the timed stage trained afresh
    each time (its checkpoints and TensorBoard events removed; the stages before it,
    and CT-VAE's code cache, are kept). Returns the repeat of median ratio (the lower
    middle one for an even count), with every repeat's rates under "repeats" when
    there are several: on a shared CPU host the bare step's own pace drifts from one
    run to the next by more than one ratio can tell apart."""
    stage = CASES[case][1]
    with tempfile.TemporaryDirectory() as workdir:
        runs = []
        for repeat in range(repeats):
            if repeat:
                remove_stage_outputs(Path(workdir), stage)
            runs.append(measure(case, steps, steps_per_call, device_data, workdir,
                                unroll_call, profile_dir))
    if repeats == 1:
        return runs[0]
    median = sorted(runs, key=lambda run: run["ratio"])[(repeats - 1) // 2]
    return {**median, "repeats": [{name: run[name] for name in REPEAT_FIGURES}
                                  for run in runs]}


def remove_stage_outputs(workdir: Path, stage: str) -> None:
    """Removes what makes `stage` resume or skip in `workdir`: its checkpoints (and
    its TensorBoard events, which would otherwise hold two runs)."""
    for folder in ("checkpoints", "tensorboard"):
        shutil.rmtree(workdir / folder / stage, ignore_errors=True)


def main() -> None:
    parser = arguments.OneLineArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", default=",".join(DEFAULT_CASES))
    parser.add_argument("--steps", type=arguments.positive_int, default=200)
    parser.add_argument("--steps_per_call", type=arguments.positive_int, default=1,
                        help="the timed stage's train.steps_per_call")
    parser.add_argument("--device_data", default="off", choices=("auto", "on", "off"),
                        help="the timed stage's train.device_data")
    parser.add_argument("--unroll_call", default="auto", choices=("auto", "on", "off"),
                        help="the timed stage's train.unroll_call (auto: unrolled on CPUs)")
    parser.add_argument("--repeats", type=arguments.positive_int, default=1,
                        help="runs of each case; the median ratio is printed and recorded")
    parser.add_argument("--profile", default="",
                        help="trace each case's timed loop with jax.profiler into "
                             "PROFILE/<case> and print where the device waited (its rates "
                             "are then those of a traced run)")
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
        sys.exit(f"error: --profile traces one run of each case, and --repeats="
                 f"{args.repeats} asks for several; drop one of them")
    if args.steps % args.steps_per_call:
        sys.exit(f"error: --steps={args.steps} is not a multiple of --steps_per_call="
                 f"{args.steps_per_call} (the loop runs whole calls); use e.g. --steps="
                 f"{-(-args.steps // args.steps_per_call) * args.steps_per_call}")
    device = jax.devices()[0]
    print(f"{platform.processor() or platform.machine()}, {device.platform} "
          f"({device.device_kind}), jax {jax.__version__}, {args.steps} steps per case, "
          f"steps_per_call {args.steps_per_call}, unroll_call {args.unroll_call}, "
          f"device_data {args.device_data}")
    header = (f"{'case':11s} {'loop/s':>8s} {'bare/s':>8s} {'ratio':>6s}   ms per step: "
              f"{'bare':>6s} " + " ".join(f"{part:>9s}" for part in (*PARTS, "rest")))
    print(header)
    results = {}
    for case in cases:
        figures = results[case] = measure_repeated(
            case, args.steps, args.steps_per_call, args.device_data, args.repeats,
            args.unroll_call, str(Path(args.profile) / case) if args.profile else None)
        parts = figures["ms_per_step"]
        print(f"{case:11s} {figures['loop_steps_per_s']:8.2f} {figures['bare_steps_per_s']:8.2f} "
              f"{figures['ratio']:6.3f}   {'':13s}{figures['bare_ms_per_step']:6.1f} "
              + " ".join(f"{parts[part]:9.2f}" for part in (*PARTS, "rest")), flush=True)
        print(f"  the loop's step function alone, back to back: "
              f"{figures['call_steps_per_s']:.2f} steps/s "
              f"({figures['call_steps_per_s'] / figures['bare_steps_per_s']:.3f} of the bare "
              f"step)", flush=True)
        if "trace" in figures:
            trace = figures["trace"]
            print(f"  traced into {Path(args.profile) / case}:"
                  + (f" no summary: {trace['error']}" if "error" in trace else ""), flush=True)
            if "error" not in trace:
                for line in trace_gaps.report(trace, trace_gaps.DEFAULT_MIN_GAP_US):
                    print(f"    {line}", flush=True)
        if "repeats" in figures:
            print("  ratio of each repeat (loop / bare steps/s): " + ", ".join(
                f"{run['ratio']:.3f} ({run['loop_steps_per_s']:.2f} / "
                f"{run['bare_steps_per_s']:.2f})" for run in figures["repeats"]), flush=True)
    figures = {"device": device.device_kind, "steps": args.steps,
               "steps_per_call": args.steps_per_call, "unroll_call": args.unroll_call,
               "device_data": args.device_data,
               "repeats": args.repeats, "cases": results}
    print(json.dumps(figures))
    records.write_or_exit(recorder, figures)


if __name__ == "__main__":
    cli.run_script(main)
