r"""Stage-2 (CT layer) training-step time per mode, as training runs it: getting the
batch's codes is inside the timed step.

  python benchmarks/ct_step_time.py                 # paper stage-2 sizes, batch 16
  python benchmarks/ct_step_time.py --steps=5 --gnn_backend=jraph
  python benchmarks/ct_step_time.py --num_nodes=256 --graph_hidden=32 --gnn_hidden=32 \
      --gnn_layers=1 --encoder=small                # the :small run's sizes

Paper stage-2 sizes: batch 16, A = 12 actions, N = 64 nodes, K = 64 codes, pair MLP
800, 2 GNN layers of 100. Two ways to get a batch's codes, each timed with every
mode:
  * cache:  rows of the dataset's code cache ([480 000, N] uint8, Shapes3D's size)
            looked up by image index and sent to the device (what the paper config
            does: it encodes each image once; see causal_disent/train/ct_codes.py);
  * encode: the frozen MCQ-VAE encoder on the batch's 2B images (rendered already,
            as the input pipeline's background thread delivers them).
The encoder is the paper's (Conv 64/128/256, 6 residual blocks of 256, D = 128) with
N / 64 codebooks over its 8 × 8 grid, so that it yields N codes (`--encoder=small`:
the :small run's). The cache's one-off build time is estimated from the measured
render + encode rate on --cache_sample images. Each (mode, path) runs in its own
process so that its peak resident memory is its own. Per mode: the median seconds
per step (compilation excluded), FLOPs per step from XLA's cost analysis (CT step,
plus the encoder's for `encode`) and the achieved GFLOP/s.

With --authors_repo (a checkout of Strong-AI-Lab/ct-vae) and --authors_python (an
interpreter with PyTorch and torch-geometric; see benchmarks/authors_ct_step.py),
the authors' own step runs right after ours in each mode, on the same machine, so
that the two are timed in the same hour and their ratio is not a comparison across
hosts:

  python benchmarks/ct_step_time.py --steps=5 --paths=cache \
      --authors_repo=/tmp/ct-vae --authors_python=/tmp/torchenv/bin/python

The last line is JSON: {"standard": s, "action": s, "causal": s, "causal_peak_rss_gb":
g} for the default path (cache), then "path", the other path's times under
"encode", and "flops", "gflop_per_s", "cache_build_s"; with the authors' code also
"authors" ({mode: s, "causal_peak_rss_gb", "torch", "threads"}) and "speedup"
({mode: their seconds / ours}).

Why a causal step costs about 8 action steps: the work is the N²·H pair-MLP
readouts (and, smaller, the GNN's attention). An action step evaluates two pair
MLPs (the action's and ∅'s, every row, since the straight-through gradient of the
intervention mask needs both values on every row) and one GNN; a causal step
shares the ∅ MLP across actions but still evaluates the A = 12 action MLPs and 12
GNNs, so (1 + 12) / 2 = 6.5x is the floor for the pair MLPs alone (the authors'
FLOP counts give 855 / 148 = 5.8x).
"""

import argparse
import functools
import json
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from causal_disent import cli  # noqa: E402
from causal_disent.runs import records  # noqa: E402
from causal_disent.utils import arguments  # noqa: E402

from configs import ctvae_shapes3d  # noqa: E402

PAPER = ctvae_shapes3d.get_config()
SIZES = dict(batch=PAPER.ct.optim.batch_size, num_actions=12, num_nodes=64,
             num_codes=PAPER.mcqvae.model.num_codes, graph_hidden=PAPER.ct.model.graph_hidden,
             gnn_hidden=PAPER.ct.model.gnn_hidden, gnn_layers=PAPER.ct.model.gnn_layers)
PATHS = ("cache", "encode")
MODES = ("standard", "action", "causal")  # objectives/ct.MODES, named before JAX starts
DEFAULT_PATH = "cache"
CACHE_IMAGES = 480_000  # Shapes3D
ENCODERS = {"paper": None, "small": "small"}  # --encoder -> the config variant of its sizes
GRID = 8  # the encoders' code grid on 64 × 64 images


def build_encoder(encoder: str):
    """(jitted encode(params, uint8 images) -> [B, N] codes, params)."""
    import jax
    import jax.numpy as jnp

    from causal_disent import models
    from causal_disent.utils.images import images_to_unit_range

    num_codebooks, remainder = divmod(SIZES["num_nodes"], GRID * GRID)
    if remainder or num_codebooks < 1:
        raise SystemExit(f"--num_nodes must be a multiple of {GRID * GRID} (C codebooks × 8 × 8)")
    model_config = ctvae_shapes3d.get_config(ENCODERS[encoder]).mcqvae.model
    model_config.update(num_codebooks=num_codebooks, num_codes=SIZES["num_codes"])
    mcqvae = models.build_mcqvae(model_config, out_channels=3)
    params = mcqvae.init(jax.random.key(0), jnp.zeros((1, 64, 64, 3)))["params"]

    @jax.jit
    def encode(params, images):
        codes = mcqvae.apply({"params": params}, images_to_unit_range(images),
                             method=mcqvae.encode_codes)
        return codes.reshape(codes.shape[0], -1)

    return encode, params


def flops_of(jitted, *args) -> float:
    analysis = jitted.lower(*args).compile().cost_analysis()
    if isinstance(analysis, list):  # older jax: one dict per computation
        analysis = analysis[0]
    return float(analysis.get("flops", float("nan")))


def time_mode(mode: str, path: str, steps: int, gnn_backend: str, encoder: str) -> dict:
    import jax
    import numpy as np
    import optax

    from causal_disent import models
    from causal_disent.objectives import ct
    from causal_disent.train.state import TrainState, train_step

    s = SIZES
    model_config = ctvae_shapes3d.get_config().ct.model
    model_config.update(graph_hidden=s["graph_hidden"], gnn_hidden=s["gnn_hidden"],
                        gnn_layers=s["gnn_layers"], gnn_backend=gnn_backend)
    model = models.build_ct_layer(model_config, s["num_nodes"], s["num_codes"], s["num_actions"])
    rng = np.random.default_rng(0)
    keys = jax.random.split(jax.random.key(0), 4)
    if path == "cache":
        cache = rng.integers(0, s["num_codes"], (CACHE_IMAGES, s["num_nodes"]), dtype=np.uint8)
        encode_flops = 0.0

        def codes_of(batch):
            return (jax.device_put(cache[batch["x_index"]].astype(np.int32)),
                    jax.device_put(cache[batch["y_index"]].astype(np.int32)))
    else:
        encode, encoder_params = build_encoder(encoder)

        def codes_of(batch):
            return encode(encoder_params, batch["x"]), encode(encoder_params, batch["y"])

    batches = []
    for _ in range(3):
        batch = {"x_index": rng.integers(0, CACHE_IMAGES, s["batch"]),
                 "y_index": rng.integers(0, CACHE_IMAGES, s["batch"]),
                 "action": rng.integers(0, s["num_actions"], s["batch"]).astype(np.int32)}
        if path == "encode":
            batch["x"] = rng.integers(0, 256, (s["batch"], 64, 64, 3), dtype=np.uint8)
            batch["y"] = rng.integers(0, 256, (s["batch"], 64, 64, 3), dtype=np.uint8)
        batches.append(batch)
    if path == "encode":
        encode_flops = 2 * flops_of(encode, encoder_params, batches[0]["x"])

    x_codes, y_codes = codes_of(batches[0])
    params = model.init(
        {"params": keys[0], "gumbel": keys[1], "dropout": keys[2]}, x_codes, batches[0]["action"]
    )["params"]
    state = TrainState.create(apply_fn=model.apply, params=params, tx=optax.adam(5e-4))
    loss_fn = functools.partial(ct.MODES[mode], model=model, weights=ct.default_weights())
    step = jax.jit(functools.partial(train_step, loss_fn=loss_fn), donate_argnums=0)
    code_batch = {"x_codes": x_codes, "y_codes": y_codes, "action": batches[0]["action"]}
    step_flops = flops_of(step, state, code_batch, keys[3])

    def full_step(state, batch):
        x_codes, y_codes = codes_of(batch)
        return step(state, {"x_codes": x_codes, "y_codes": y_codes, "action": batch["action"]},
                    keys[3])

    start = time.perf_counter()
    state, metrics = full_step(state, batches[0])
    jax.block_until_ready(metrics)
    compile_s = time.perf_counter() - start
    times = []
    for i in range(steps):
        start = time.perf_counter()
        state, metrics = full_step(state, batches[i % len(batches)])
        jax.block_until_ready(metrics)
        times.append(time.perf_counter() - start)
    median = statistics.median(times)
    flops = step_flops + encode_flops
    return {"median_s": median, "first_step_s": compile_s,
            "peak_rss_gb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20,
            "flops": flops, "gflop_per_s": flops / median / 1e9,
            "parameters": sum(p.size for p in jax.tree.leaves(params))}


def cache_build_rate(encoder: str, sample: int, batch_size: int = 256) -> dict:
    """Render + encode rate (images/s) of shapes3d_synth over `sample` images."""
    import jax
    import numpy as np

    from causal_disent.data import registry

    dataset = registry.get_dataset("shapes3d_synth")
    encode, params = build_encoder(encoder)
    index = np.random.default_rng(0).choice(dataset.num_images, sample, replace=False)
    jax.block_until_ready(encode(params, dataset.images(index[:batch_size])))  # compile
    start = time.perf_counter()
    for begin in range(0, sample, batch_size):
        jax.block_until_ready(encode(params, dataset.images(index[begin:begin + batch_size])))
    rate = sample / (time.perf_counter() - start)
    return {"images_per_s": rate, "build_s": dataset.num_images / rate}


def _names_of(known):
    """An argparse type: a comma-separated list of names out of `known`."""
    def parse(text: str) -> str:
        unknown = [name for name in text.split(",") if name not in known]
        if unknown:
            raise argparse.ArgumentTypeError(
                f"unknown {', '.join(map(repr, unknown))}; give some of {', '.join(known)}, "
                f"comma-separated")
        return text
    return parse


def main():
    parser = arguments.OneLineArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=arguments.positive_int, default=10)
    parser.add_argument("--gnn_backend", default="dense", choices=("dense", "jraph"))
    parser.add_argument("--modes", type=_names_of(MODES), default=",".join(MODES))
    parser.add_argument("--paths", type=_names_of(PATHS), default=",".join(PATHS))
    parser.add_argument("--encoder", default="paper", choices=tuple(ENCODERS))
    parser.add_argument("--cache_sample", type=arguments.non_negative_int, default=2048,
                        help="images rendered and encoded to estimate the cache build (0: skip)")
    for name, value in SIZES.items():
        parser.add_argument(f"--{name}", type=arguments.positive_int, default=value)
    parser.add_argument("--authors_repo", type=Path, default=None,
                        help="a checkout of Strong-AI-Lab/ct-vae: time their step too")
    parser.add_argument("--authors_python", type=Path, default=None,
                        help="the interpreter (with torch, torch-geometric) for their code")
    parser.add_argument("--authors_steps", type=arguments.positive_int, default=3,
                        help="timed steps of their code per mode (their causal step is slow)")
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    records.add_record_flag(parser)
    args = parser.parse_args()
    if (args.authors_repo is None) != (args.authors_python is None):
        raise SystemExit("error: --authors_repo and --authors_python go together; give "
                         "both to time the authors' step, or neither")
    if args.authors_python is not None and not args.authors_python.is_file():
        raise SystemExit(f"error: --authors_python={args.authors_python} does not exist; "
                         "give the interpreter of a PyTorch environment")
    changed = [name for name, value in SIZES.items() if getattr(args, name) != value]
    if args.authors_repo is not None and changed:
        raise SystemExit(f"error: the authors' step runs at their config's sizes, so "
                         f"--{', --'.join(changed)} cannot change with --authors_repo; drop "
                         "one or the other")
    recorder = records.script_recorder(args.record if not args.child else None)
    SIZES.update({name: getattr(args, name) for name in SIZES})
    if args.child:
        if args.child == "cache_build":
            result = cache_build_rate(args.encoder, args.cache_sample)
        else:
            mode, path = args.child.split(":")
            result = time_mode(mode, path, args.steps, args.gnn_backend, args.encoder)
        print(json.dumps(result))
        return

    def child(name: str) -> dict:
        run = subprocess.run(
            [sys.executable, __file__, f"--child={name}", f"--steps={args.steps}",
             f"--gnn_backend={args.gnn_backend}", f"--encoder={args.encoder}",
             f"--cache_sample={args.cache_sample}",
             *(f"--{name}={value}" for name, value in SIZES.items())],
            capture_output=True, text=True,
        )
        if run.returncode:
            raise SystemExit(f"{name} failed:\n{run.stderr[-3000:]}")
        return json.loads(run.stdout.strip().splitlines()[-1])

    def authors_step(mode: str) -> dict:
        run = subprocess.run(
            [str(args.authors_python), str(Path(__file__).with_name("authors_ct_step.py")),
             f"--repo={args.authors_repo}", f"--mode={mode}", f"--steps={args.authors_steps}"],
            capture_output=True, text=True,
        )
        if run.returncode:
            last = (run.stderr.strip().splitlines() or ["(no output)"])[-1]
            raise SystemExit(f"error: the authors' {mode} step failed ({last}); see "
                             "benchmarks/authors_ct_step.py for the environment it needs")
        return json.loads(run.stdout.strip().splitlines()[-1])

    results: dict[str, dict] = {}
    authors: dict[str, dict] = {}
    for path in args.paths.split(","):
        for mode in args.modes.split(","):
            results[f"{mode}:{path}"] = child(f"{mode}:{path}")
            print(f"{mode} ({path}): {json.dumps(results[f'{mode}:{path}'])}", flush=True)
            if args.authors_repo is not None and mode not in authors:
                authors[mode] = authors_step(mode)
                print(f"{mode} (authors' code): {json.dumps(authors[mode])}", flush=True)
    build = None
    if args.cache_sample > 0 and "cache" in args.paths:
        build = child("cache_build")
        print(f"cache build ({args.encoder} encoder, shapes3d_synth): {json.dumps(build)}",
              flush=True)

    modes = args.modes.split(",")
    paths = args.paths.split(",")
    default = DEFAULT_PATH if DEFAULT_PATH in paths else paths[0]
    summary = {mode: round(results[f"{mode}:{default}"]["median_s"], 4) for mode in modes}
    if "causal" in modes:
        summary["causal_peak_rss_gb"] = round(results[f"causal:{default}"]["peak_rss_gb"], 3)
    summary["path"] = default
    for path in paths:
        if path != default:
            summary[path] = {mode: round(results[f"{mode}:{path}"]["median_s"], 4) for mode in modes}
    summary["flops"] = {f"{mode}:{path}": results[f"{mode}:{path}"]["flops"]
                        for path in paths for mode in modes}
    summary["gflop_per_s"] = {key: round(r["gflop_per_s"], 2) for key, r in results.items()}
    if build is not None:
        summary["cache_build_s"] = round(build["build_s"], 1)
    if authors:
        summary["authors"] = {mode: round(run["median_s"], 3) for mode, run in authors.items()}
        if "causal" in authors:
            summary["authors"]["causal_peak_rss_gb"] = round(authors["causal"]["peak_rss_gb"], 2)
        first = next(iter(authors.values()))
        summary["authors"].update(torch=first["torch"], threads=first["threads"])
        summary["speedup"] = {mode: round(authors[mode]["median_s"] / summary[mode], 1)
                              for mode in modes}
    print(json.dumps(summary))
    records.write_or_exit(recorder, {"summary": summary, "runs": results, "sizes": SIZES,
                                     "authors_runs": authors})


if __name__ == "__main__":
    cli.run_script(main)
