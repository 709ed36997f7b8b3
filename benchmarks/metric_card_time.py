r"""Time of the full metric card, per metric, for one representation.

  python benchmarks/metric_card_time.py [--dataset=dsprites_synth] [--model=conv]
      [--num_samples=10000] [--metrics=all] [--record=results/NAME.json]

--model: identity / random (codes from the factors, no images: the cost of the
scoring alone), or conv, a freshly initialised CausalVAE-style convolutional
encoder (widths 32, 32, 64, 64, hidden 256, 10 codes; untrained, which does not
change its cost) run through the same rendering, jitted batch encoding and
image-index cache as a trained model's card: the cost of scoring a real model.
Prints one line per metric, then the card's figures as JSON (last line).
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

# Runs from a checkout without installing the package.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

from causal_disent import cli  # noqa: E402
from causal_disent.data import registry  # noqa: E402
from causal_disent.evaluation import card, representations  # noqa: E402
from causal_disent.models.causalvae import ConvEncoder  # noqa: E402
from causal_disent.runs import records  # noqa: E402
from causal_disent.utils import arguments  # noqa: E402


def conv_representation(dataset, latent_width: int = 10) -> representations.CachedCodes:
    encoder = ConvEncoder(widths=(32, 32, 64, 64), hidden=256, latent_width=latent_width)
    params = encoder.init(jax.random.key(0), jnp.zeros((1, *dataset.image_shape)))
    rep = representations.ImageRepresentation(
        "conv", f"untrained conv encoder, {latent_width} codes", encoder.apply, params,
        batch_size=512)
    return representations.CachedCodes(dataset, rep)


def main() -> None:
    parser = arguments.OneLineArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", default="dsprites_synth")
    parser.add_argument("--model", default="conv", choices=("conv", "identity", "random"))
    parser.add_argument("--num_samples", type=arguments.positive_int, default=10_000)
    parser.add_argument("--metrics", default="all")
    records.add_record_flag(parser)
    args = parser.parse_args()
    recorder = records.script_recorder(args.record)
    try:  # unknown names, before any work
        metrics = card.parse_metric_names(args.metrics)
        dataset = registry.get_dataset(args.dataset)
    except ValueError as error:
        sys.exit(f"error: {error}")
    rep = {
        "conv": lambda: conv_representation(dataset),
        "identity": lambda: representations.identity_representation(dataset),
        "random": lambda: representations.random_representation(dataset, seed=0),
    }[args.model]()
    start = time.perf_counter()
    result = card.metric_card(dataset, rep, metrics,
                              args.num_samples, log=lambda line: print(line, flush=True))
    figures = {
        "dataset": args.dataset, "model": args.model, "num_samples": args.num_samples,
        "seconds_per_metric": {name: m["seconds"] for name, m in result["metrics"].items()},
        "total_seconds": round(time.perf_counter() - start, 1),
        "images_encoded": getattr(rep, "images_encoded", 0),
        "cpus": os.cpu_count(), "platform": jax.devices()[0].platform,
    }
    print(json.dumps(figures))
    records.write_or_exit(recorder, figures)


if __name__ == "__main__":
    cli.run_script(main)
