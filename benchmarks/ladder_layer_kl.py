r"""KL to each layer's prior of trained LadderVAEs on their test images: a collapsed
layer (Sønderby et al., "Ladder Variational Autoencoders", NeurIPS 2016, §2.3)
shows as a KL near 0 nats.

  python benchmarks/ladder_layer_kl.py W [W ...] [--num_images=2048]
      [--record=results/NAME.json]

Each W is a finished LadderVAE run (for a many-seed run, one of W/seeds/seed_k);
the KL is the loss's own per-layer term (objectives/ladder_vae.py) with the warm-up
done, averaged over the first --num_images test images. Prints one JSON line per run:
{"workdir", "seed", "kl_per_layer" (nats, bottom layer first)}; --record keeps them
all, with each run's history, for `python -m report`.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

# Runs from a checkout without installing the package.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import jax  # noqa: E402
import numpy as np  # noqa: E402

from causal_disent import cli  # noqa: E402
from causal_disent.data import registry, splits  # noqa: E402
from causal_disent.evaluation.trained_runs import load_config  # noqa: E402
from causal_disent.objectives.ladder_vae import ladder_vae_loss  # noqa: E402
from causal_disent.runs import records, vae as vae_run  # noqa: E402
from causal_disent.utils import arguments  # noqa: E402
from causal_disent.utils.sharding import make_data_mesh  # noqa: E402

BATCH = 256


def layer_kl(workdir: Path, num_images: int) -> dict:
    """{"workdir", "seed", "kl_per_layer"} of one finished run."""
    path = workdir.absolute()
    config = load_config(path)
    if config.vae.objective.name != "ladder_vae":
        raise SystemExit(f"{workdir} is not a LadderVAE run (its vae.objective.name is "
                         f"{config.vae.objective.name!r})")
    dataset = registry.dataset_from_config(config.data)
    model, params = vae_run.load_trained(config, path, make_data_mesh(), dataset)
    test = splits.configured_split(dataset, config.data)["test"][:num_images]
    loss = jax.jit(lambda batch, rng: ladder_vae_loss(
        params, batch, rng, model=model, beta=1.0, warmup_steps=0, step=0)[1]["kl_per_layer"])
    per_batch = [np.asarray(loss({"image": dataset.images(test[start:start + BATCH])},
                                 jax.random.key(start)))
                 for start in range(0, len(test), BATCH)]
    sizes = [min(BATCH, len(test) - start) for start in range(0, len(test), BATCH)]
    return {"workdir": str(workdir), "seed": int(config.seed),
            "kl_per_layer": np.average(per_batch, axis=0, weights=sizes).round(3).tolist()}


def main() -> None:
    parser = arguments.OneLineArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("workdirs", nargs="+", type=Path)
    parser.add_argument("--num_images", type=arguments.positive_int, default=2048)
    records.add_record_flag(parser)
    args = parser.parse_args()
    recorder = records.script_recorder(args.record)
    runs = []
    for workdir in args.workdirs:
        runs.append(layer_kl(workdir, args.num_images))
        print(json.dumps(runs[-1]))
    records.write_or_exit(recorder, {"num_images": args.num_images, "runs": runs},
                          runs=[records.workdir_history(workdir) for workdir in args.workdirs])


if __name__ == "__main__":
    cli.run_script(main)
