r"""Throughput of the procedural Shapes3D renderer (CPU, single process).

  python benchmarks/shapes3d_synth_throughput.py [--repeats=N]

Prints the one-off template precompute time, then images/s for batches of 64 and
1024 random flat indices (median over repeats, fresh indices every repeat,
templates already cached), then a last line holding all figures as JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

# Runs from a checkout without installing the package.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from causal_disent.data.shapes3d_synth import Shapes3DSynth  # noqa: E402

BATCH_SIZES = (64, 1024)


def time_precompute(repeats: int) -> float:
    """Median seconds to build the 480 templates in a fresh instance."""
    seconds = []
    for _ in range(repeats):
        dataset = Shapes3DSynth()
        start = time.perf_counter()
        dataset.geometry_templates()
        seconds.append(time.perf_counter() - start)
    return float(np.median(seconds))


def images_per_second(render, batches: list[np.ndarray]) -> float:
    """Median images/s of `render` over the given batches (one warm-up call)."""
    render(batches[0])
    seconds = []
    for batch in batches:
        start = time.perf_counter()
        render(batch)
        seconds.append(time.perf_counter() - start)
    return len(batches[0]) / float(np.median(seconds))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=50, help="timed batches per size")
    parser.add_argument("--precompute_repeats", type=int, default=3)
    args = parser.parse_args()

    precompute_s = time_precompute(args.precompute_repeats)
    print(f"template precompute (480 geometries): {precompute_s:.3f} s")

    dataset = Shapes3DSynth()
    dataset.geometry_templates()
    rng = np.random.default_rng(0)
    figures = {"precompute_s": round(precompute_s, 4)}
    for batch_size in BATCH_SIZES:
        index_batches = [
            rng.integers(0, dataset.num_images, batch_size) for _ in range(args.repeats)
        ]
        factor_batches = [dataset.index_to_factors(index) for index in index_batches]
        from_index = images_per_second(dataset.images, index_batches)
        from_factors = images_per_second(dataset.render, factor_batches)
        print(
            f"batch {batch_size:5d}: images(index) {from_index:10.0f} images/s, "
            f"render(factors) {from_factors:10.0f} images/s"
        )
        figures[f"images_per_s_batch{batch_size}"] = round(from_index)
        figures[f"render_per_s_batch{batch_size}"] = round(from_factors)

    figures.update(
        numpy=np.__version__,
        python=platform.python_version(),
        cpus=os.cpu_count(),
        repeats=args.repeats,
    )
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
