r"""The host's share of a stacked run's figures: S seeds' figure sets, as a β-VAE
`:small` seed draws them (the consistency heat maps of 10 latents, 8 test images
over their reconstructions, the traversal grid of 10 latents × 3 images × 7
offsets of 64 × 64 images), drawn from made-up arrays so that no model runs: each
set drawn and written where it is saved, then the same with the figures handed to
worker processes (utils/figure_workers.py), as a stacked run's end does.

  python benchmarks/figure_drawing.py                 # 8 seeds, as many workers as cores
  python benchmarks/figure_drawing.py --seeds=3 --workers=3

On a GPU host the model calls behind these figures take milliseconds, so this is
most of what a stacked run's figures cost there; on a CPU the model calls come on
top (`python -m causal_disent.main --workdir=W --mode=figures` times all of it for a
finished run W). Prints seconds and the ratio; the last line is JSON.
"""

import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

from causal_disent import cli  # noqa: E402
from causal_disent.evaluation import consistency_scores, drawings  # noqa: E402
from causal_disent.runs import records  # noqa: E402
from causal_disent.utils import arguments, figure_workers, figures, threads  # noqa: E402

LATENTS, TRAVERSED, OFFSETS, SHOWN = 10, 3, 7, 8


def draw_seed(seed: int, folder: Path) -> None:
    """One seed's three figures, saved with `figures.save_drawn` as a run saves them
    (inside `saved_in_parallel` a worker builds each figure and writes it)."""
    rng = np.random.default_rng(seed)
    scores = {"inv": rng.random((LATENTS, LATENTS)).tolist(),
              "eqv": rng.random((LATENTS, LATENTS)).tolist(),
              "scn": rng.random(LATENTS).tolist(), "inv_off_diagonal": 0.5,
              "eqv_mean": 0.5, "scn_mean": 0.5, "num_samples": 1024}
    consistency_scores.save_consistency_figure(scores, folder / f"{seed}_consistency.png")
    images = rng.integers(0, 256, (SHOWN, 64, 64, 1), dtype=np.uint8)
    figures.save_drawn(folder / f"{seed}_reconstructions.png",
                       drawings.draw_reconstruction_figure, images,
                       rng.integers(0, 256, images.shape, dtype=np.uint8), "reconstructions")
    grid = rng.integers(0, 256, (LATENTS, TRAVERSED * OFFSETS, 64, 64, 1), dtype=np.uint8)
    figures.save_drawn(
        folder / f"{seed}_traversals.png", figures.draw_image_grid,
        grid, title="Latent traversals\nsecond line",
        row_labels=[f"z{j} (σ 1.00)" for j in range(LATENTS)],
        column_labels=[f"{offset:+d}σ" for _ in range(TRAVERSED) for offset in range(-3, 4)])


def time_sets(seeds: int, workers: int, folder: Path) -> float:
    start = time.perf_counter()
    with figure_workers.saved_in_parallel(workers):
        for seed in range(seeds):
            draw_seed(seed, folder)
    return time.perf_counter() - start


def main() -> None:
    parser = arguments.OneLineArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=arguments.positive_int, default=8)
    parser.add_argument("--workers", type=arguments.non_negative_int, default=0,
                        help="default: the cores, at most the seeds")
    parser.add_argument("--repeats", type=arguments.positive_int, default=3,
                        help="the best of this many")
    records.add_record_flag(parser)
    args = parser.parse_args()
    recorder = records.script_recorder(args.record)
    workers = args.workers or min(args.seeds, threads.worker_count())
    with tempfile.TemporaryDirectory() as folder:
        draw_seed(0, Path(folder))  # imports and font caches warm
        in_place = min(time_sets(args.seeds, 1, Path(folder)) for _ in range(args.repeats))
        in_workers = min(time_sets(args.seeds, workers, Path(folder))
                         for _ in range(args.repeats))
    print(f"{args.seeds} seeds' figures (3 each), best of {args.repeats}: drawn in place "
          f"{in_place:.2f} s, in {workers} worker processes {in_workers:.2f} s "
          f"({in_place / in_workers:.2f}x); {threads.worker_count()} cores")
    result = {"seeds": args.seeds, "workers": workers, "cores": threads.worker_count(),
              "in_place_s": in_place, "in_workers_s": in_workers,
              "speedup": in_place / in_workers}
    print(json.dumps(result))
    records.write_or_exit(recorder, result)


if __name__ == "__main__":
    cli.run_script(main)
