r"""CausalVAE runs' interventions against the simulator's true counterfactuals, side by
side.

  python benchmarks/causalvae_counterfactuals.py --workdirs=W_per_concept,W_joint,W_cvae

Each workdir is a finished CausalVAE-stage run on the same dataset (any variant and
decoder). Every model is scored on the same test images and intervention values
(evaluation/counterfactual_scores.py): for each concept, the pixel MSE between the
model's do(concept = v) image and the true counterfactual, over the whole image, the
pixels the true intervention changes, and the pixels it keeps (for do(effect): where
the causes are drawn), and the same for the unintervened reconstruction. Prints one
table per region; last line JSON.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import jax
import numpy as np

# Runs from a checkout without installing the package.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from causal_disent import cli  # noqa: E402
from causal_disent.data import registry, splits  # noqa: E402
from causal_disent.evaluation import causalvae_evaluation, trained_runs  # noqa: E402
from causal_disent.runs import causalvae as causalvae_run  # noqa: E402
from causal_disent.utils import arguments  # noqa: E402
from causal_disent.evaluation.counterfactual_scores import (  # noqa: E402
    counterfactual_pairs,
    score_counterfactuals,
)
from causal_disent.runs import records  # noqa: E402
from causal_disent.utils.sharding import make_data_mesh  # noqa: E402


def main() -> None:
    parser = arguments.OneLineArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workdirs", required=True, help="comma-separated finished runs")
    parser.add_argument("--num_images", type=arguments.positive_int, default=256)
    parser.add_argument("--seed", type=int, default=0)
    records.add_record_flag(parser)
    args = parser.parse_args()
    recorder = records.script_recorder(args.record)
    workdirs = [Path(w) for w in args.workdirs.split(",") if w]
    if not workdirs:
        sys.exit("error: --workdirs names no run; give finished CausalVAE runs, "
                 "--workdirs=W1,W2")
    first = trained_runs.load_config(workdirs[0])
    first.causalvae.train.compare_workdirs = tuple(str(w) for w in workdirs)
    dataset = registry.dataset_from_config(first.data)
    split = splits.dataset_split(dataset, first.data.split_fractions, first.data.split_seed)
    labels = dataset.labels(np.arange(dataset.num_images)).astype(np.float32)
    scaling = causalvae_run.label_scaling(first.data.name, labels[split["train"]])
    mesh = make_data_mesh(jax.devices()[:1])
    models = causalvae_evaluation.compared_models(first, mesh, dataset)
    test = split["test"]
    chosen, values = counterfactual_pairs(test, labels[test], args.num_images, args.seed)
    scores = score_counterfactuals(dataset, chosen, values, scaling.prior_offset,
                                   scaling.prior_scale, models)
    names = list(models)
    for region in ("mse", "mse_changed", "mse_kept"):
        print(f"\n{region} (x1000), {scores['num_images']} test images of {first.data.name}")
        header = ["concept (kind)"] + names + [f"{name} no-op" for name in names]
        print(" | ".join(header))
        for concept, entry in scores["concepts"].items():
            cells = [f"{concept} ({entry['kind']})"]
            for key in names + [f"{name}_reconstruction" for name in names]:
                value = entry[key][region]
                cells.append("-" if value is None else f"{1000 * value:.2f}")
            print(" | ".join(cells))
    figures = {"workdirs": [str(w) for w in workdirs], **scores}
    print(json.dumps(figures))
    records.write_or_exit(recorder, figures, runs=[records.workdir_history(w) for w in workdirs])


if __name__ == "__main__":
    cli.run_script(main)
