r"""What compiling each stage's first state costs (train/resume.py `fresh_state`:
the program that draws the initial parameters and optimiser state, run once per
stage) with XLA's default options and with FIRST_STATE_COMPILER_OPTIONS, and
whether both give the same bits.

  python benchmarks/first_state_compilation.py                  # every case
  python benchmarks/first_state_compilation.py --cases=betavae,ctvae

Each case runs its config's stages for two steps in-process (`stages.run`, test
scores on 64 images), keeping each stage's `create_state`. Then each is compiled
afresh twice (in-memory caches cleared, no compilation cache), with XLA's defaults
and with the chosen options, and run: compile seconds and run milliseconds (of a
second call) of each, and "same" when every array of the two states is bitwise
equal. The chosen options are this platform's FIRST_STATE_COMPILER_OPTIONS, or on a
platform without any (a GPU) CANDIDATE_OPTIONS, the ones to try there;
`--compiler_options='{"xla_backend_optimization_level": 0}'` tries others. The last
line is JSON with every figure.

Measured on 2 idle CPU cores (2026-11-28; the table in docs/running.md): -O1 took
the compile from 2.5-14.4 s to 1.4-2.3 s per stage, every state bitwise the same;
-O0 (tried with --compiler_options) moved CT-VAE's states by a few ulps.
"""

from __future__ import annotations

import contextlib
import json
import platform
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # runs from a checkout without installing the package

import jax  # noqa: E402
import numpy as np  # noqa: E402

from causal_disent import cli  # noqa: E402
from causal_disent.runs import records  # noqa: E402
from causal_disent.train import resume, stages  # noqa: E402
from causal_disent.utils import arguments  # noqa: E402
from causal_disent.utils.sharding import replicated  # noqa: E402

CASES = {
    # name: (config, overrides)
    "betavae": ("configs/betavae_dsprites_synth.py:small", {}),
    "betavae_s8": ("configs/betavae_dsprites_synth.py:small", {"num_seeds": 8}),
    "factorvae": ("configs/factorvae_dsprites_synth.py:small", {}),
    "laddervae": ("configs/laddervae_dsprites_synth.py:small", {}),
    "ctvae": ("configs/ctvae_shapes3d.py:small", {"ct.train.code_source": "encode"}),
    "causalvae": ("configs/causalvae_pendulum.py:small", {}),
}
CANDIDATE_OPTIONS = {"xla_backend_optimization_level": 1}
STEPS = 2  # per stage: enough for a first state, a save and a run's end


def configured(case: str):
    """The case's config, every stage cut to STEPS steps and 64 test images."""
    path, overrides = CASES[case]
    config = cli.load_config_file(str(REPO / path), lock=False)
    config.update_from_flattened_dict(overrides)
    for section in config.values():
        train = section.get("train") if hasattr(section, "get") else None
        if train is None or "num_steps" not in train:
            continue
        # A k set by the config stays (CT-VAE :gpu's 10); "auto" (0) is made 1, what it
        # would choose on intervals of one step anyway.
        k = train.steps_per_call = max(train.get("steps_per_call", 1), 1)
        train.num_steps = STEPS * k
        for name in ("log_every_steps", "checkpoint_every_steps"):
            if name in train:
                train[name] = k
        for name in ("eval_every_steps", "num_epochs"):
            if name in train:
                train[name] = 0
        for name in ("num_eval_images", "num_curve_images"):
            if name in train:
                train[name] = 64
        if "eval" in section:
            section.eval.num_test_pairs = 64
    return config


@contextlib.contextmanager
def kept_first_states():
    """Keeps (stage, create_state, mesh) of every fresh state the run makes."""
    kept, original = [], resume.fresh_state

    def keeping(create_state, mesh, stage=None):
        kept.append((stage or "?", create_state, mesh))
        return original(create_state, mesh, stage)

    resume.fresh_state = keeping
    try:
        yield kept
    finally:
        resume.fresh_state = original


def compiled_and_run(create_state, mesh, options: dict | None):
    """(compile seconds, run seconds of a second call, the state on the host)."""
    jax.clear_caches()  # else the run's own compilation is reused
    lowered = jax.jit(create_state, out_shardings=replicated(mesh)).lower()
    started = time.perf_counter()
    compiled = lowered.compile(compiler_options=options)
    compile_seconds = time.perf_counter() - started
    jax.block_until_ready(compiled())
    started = time.perf_counter()
    state = jax.block_until_ready(compiled())
    return compile_seconds, time.perf_counter() - started, jax.device_get(state)


def bitwise_equal(a, b) -> bool:
    leaves_a, leaves_b = jax.tree.leaves(a), jax.tree.leaves(b)
    return len(leaves_a) == len(leaves_b) and all(
        np.asarray(x).tobytes() == np.asarray(y).tobytes() for x, y in zip(leaves_a, leaves_b))


def measure(case: str, options: dict) -> list[dict]:
    with tempfile.TemporaryDirectory() as workdir, kept_first_states() as kept:
        stages.run(configured(case), workdir)
    rows = []
    for stage, create_state, mesh in kept:
        default = compiled_and_run(create_state, mesh, None)
        chosen = compiled_and_run(create_state, mesh, options)
        leaves = jax.tree.leaves(default[2].params)
        rows.append({"case": case, "stage": stage,
                     "parameters": int(sum(np.size(leaf) for leaf in leaves)),
                     "compile_seconds": [default[0], chosen[0]],
                     "run_ms": [default[1] * 1e3, chosen[1] * 1e3],
                     "bitwise_same": bitwise_equal(default[2], chosen[2])})
    return rows


def main() -> None:
    parser = arguments.OneLineArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", default=",".join(CASES))
    parser.add_argument("--compiler_options", default="",
                        help="JSON object of XLA options to compare with the defaults "
                             "(default: the platform's first-state options, else "
                             f"{json.dumps(CANDIDATE_OPTIONS)})")
    records.add_record_flag(parser)
    args = parser.parse_args()
    recorder = records.script_recorder(args.record)
    cases = [case.strip() for case in args.cases.split(",") if case.strip()]
    unknown = [case for case in cases if case not in CASES]
    if unknown:
        sys.exit(f"error: unknown case {unknown[0]!r}; known: {', '.join(CASES)}")
    try:
        options = json.loads(args.compiler_options) if args.compiler_options else None
    except json.JSONDecodeError as error:
        sys.exit(f"error: --compiler_options is not a JSON object ({error}); give e.g. "
                 f"--compiler_options='{json.dumps(CANDIDATE_OPTIONS)}'")
    if options is not None and not isinstance(options, dict):
        sys.exit(f"error: --compiler_options must be a JSON object, got {args.compiler_options}")
    jax.config.update("jax_enable_compilation_cache", False)
    device = jax.devices()[0]
    if options is None:
        options = resume.FIRST_STATE_COMPILER_OPTIONS.get(device.platform, CANDIDATE_OPTIONS)
    print(f"{platform.processor() or platform.machine()}, {device.platform} "
          f"({device.device_kind}), jax {jax.__version__}; chosen options {options}")
    print(f"{'case':11s} {'stage':9s} {'parameters':>11s}   compile s: {'default':>7s} "
          f"{'chosen':>7s}   run ms: {'default':>7s} {'chosen':>7s}   bits")
    rows = []
    for case in cases:
        for row in measure(case, options):
            rows.append(row)
            (c0, c1), (r0, r1) = row["compile_seconds"], row["run_ms"]
            print(f"{case:11s} {row['stage']:9s} {row['parameters']:11,d}   {'':11s}"
                  f"{c0:7.2f} {c1:7.2f}   {'':8s}{r0:7.1f} {r1:7.1f}   "
                  f"{'same' if row['bitwise_same'] else 'DIFFERENT'}", flush=True)
    figures = {"device": device.device_kind, "platform": device.platform,
               "options": options, "first_states": rows}
    print(json.dumps(figures))
    records.write_or_exit(recorder, figures)


if __name__ == "__main__":
    cli.run_script(main)
