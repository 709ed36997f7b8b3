r"""Stage-2 (CT layer) training-step time per mode at the paper's stage-2 sizes.

  python benchmarks/ct_step_time.py            # batch 16, A = 12, N = 64, K = 64
  python benchmarks/ct_step_time.py --steps=5 --gnn_backend=jraph
  python benchmarks/ct_step_time.py --num_nodes=256 --graph_hidden=64   # other sizes

Each mode runs in its own process so that its peak resident memory is its own. A
step is forward, backward and the Adam update of the CT parameters, jitted,
compilation excluded, on codes (the frozen MCQ-VAE encoder runs once per image
outside the differentiated step). Prints per mode the median seconds per step; the
last line is {"standard": s, "action": s, "causal": s, "causal_peak_rss_gb": g}.
Reference (authors' PyTorch, same 2-core CPU): standard 2.7 s, action 2.3 s,
causal 40 s and ~13 GB.

Why a causal step costs about 8 action steps: the work is the N²·H pair-MLP
readouts (and, smaller, the GNN's attention). An action step evaluates two pair
MLPs (the action's and ∅'s, every row, since the straight-through gradient of the
intervention mask needs both values on every row) and one GNN; a causal step
shares the ∅ MLP across actions but still evaluates the A = 12 action MLPs and 12
GNNs, so (1 + 12) / 2 = 6.5x is the floor for the pair MLPs alone (the authors'
FLOP counts give 855 / 148 = 5.8x). Measured: 8.1x on this CPU, 7.4x on an H100.
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

SIZES = dict(batch=16, num_actions=12, num_nodes=64, num_codes=64, graph_hidden=800,
             gnn_hidden=100, gnn_layers=2)


def time_mode(mode: str, steps: int, gnn_backend: str) -> dict:
    import jax
    import numpy as np
    import optax

    from causal_disent.models.ct_layer import CausalTransition
    from causal_disent.objectives import ct
    from causal_disent.train.state import TrainState, train_step

    s = SIZES
    model = CausalTransition(
        num_nodes=s["num_nodes"], num_codes=s["num_codes"], num_actions=s["num_actions"],
        graph_hidden=s["graph_hidden"], gnn_hidden=s["gnn_hidden"],
        gnn_layers=s["gnn_layers"], gnn_backend=gnn_backend,
    )
    rng = np.random.default_rng(0)
    batches = [
        {
            "x_codes": rng.integers(0, s["num_codes"], (s["batch"], s["num_nodes"])).astype(np.int32),
            "y_codes": rng.integers(0, s["num_codes"], (s["batch"], s["num_nodes"])).astype(np.int32),
            "action": rng.integers(0, s["num_actions"], s["batch"]).astype(np.int32),
        }
        for _ in range(3)
    ]
    keys = jax.random.split(jax.random.key(0), 4)
    params = model.init(
        {"params": keys[0], "gumbel": keys[1], "dropout": keys[2]},
        batches[0]["x_codes"], batches[0]["action"],
    )["params"]
    state = TrainState.create(apply_fn=model.apply, params=params, tx=optax.adam(5e-4))
    loss_fn = functools.partial(ct.MODES[mode], model=model, weights=ct.default_weights())
    step = jax.jit(functools.partial(train_step, loss_fn=loss_fn), donate_argnums=0)
    start = time.perf_counter()
    state, metrics = step(state, batches[0], keys[3])
    jax.block_until_ready(metrics)
    compile_s = time.perf_counter() - start
    times = []
    for i in range(steps):
        start = time.perf_counter()
        state, metrics = step(state, batches[i % len(batches)], keys[3])
        jax.block_until_ready(metrics)
        times.append(time.perf_counter() - start)
    peak_gb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    return {"median_s": statistics.median(times), "first_step_s": compile_s,
            "peak_rss_gb": peak_gb, "parameters": sum(p.size for p in jax.tree.leaves(params))}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--gnn_backend", default="dense", choices=("dense", "jraph"))
    parser.add_argument("--modes", default="standard,action,causal")
    for name, value in SIZES.items():
        parser.add_argument(f"--{name}", type=int, default=value)
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    SIZES.update({name: getattr(args, name) for name in SIZES})
    if args.child:
        print(json.dumps(time_mode(args.child, args.steps, args.gnn_backend)))
        return
    results = {}
    for mode in args.modes.split(","):
        child = subprocess.run(
            [sys.executable, __file__, f"--child={mode}", f"--steps={args.steps}",
             f"--gnn_backend={args.gnn_backend}",
             *(f"--{name}={value}" for name, value in SIZES.items())],
            capture_output=True, text=True, check=True,
        )
        results[mode] = json.loads(child.stdout.strip().splitlines()[-1])
        print(f"{mode}: {json.dumps(results[mode])}", flush=True)
    summary = {mode: round(r["median_s"], 4) for mode, r in results.items()}
    if "causal" in results:
        summary["causal_peak_rss_gb"] = round(results["causal"]["peak_rss_gb"], 3)
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
