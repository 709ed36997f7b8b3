r"""A trained VAE-family run's interventional-consistency scores under both
normalisations (evaluation/consistency_scores.SCORINGS), on the first 1024 test images,
with the spread of its encodings.

  python benchmarks/consistency_scorings.py W [W ...]

W is a run's workdir (a stacked run's seeds are W/seeds/seed_<k>). The "authors"
normalisation divides the response's error, already over the response's standard
deviation, by the mean intervention size in latent units, so it depends on the
latents' scale: an autoencoder whose encodings spread by 30 scores INV near 1
whatever it does. The "variance" normalisation is unit-free. Printing both, with the
encodings' standard deviation, shows which one a figure can be read by.
"""

import json

import numpy as np

from causal_disent import cli
from causal_disent.data import splits
from causal_disent.evaluation import consistency_scores, trained_runs
from causal_disent.runs import records, vae as vae_run
from causal_disent.utils import arguments
from causal_disent.utils.sharding import make_data_mesh

SUMMARY_KEYS = ("inv_off_diagonal", "inv_diagonal", "eqv_mean", "scn_mean")


def scorings(workdir: str) -> dict:
    """{"encoding_std": [n], scoring: {summary key: value}} for the run in `workdir`."""
    mesh = make_data_mesh()
    run = trained_runs.open_run(workdir, mesh)
    test = splits.configured_split(run.dataset, run.config.data)["test"]
    images = run.dataset.images(test[:consistency_scores.NUM_SCORED_IMAGES])
    encodings = np.asarray(run.representations["encoder_mean"](images))
    model, params = vae_run.load_trained(run.config, run.workdir, mesh, run.dataset)
    out = {"encoding_std": np.round(encodings.std(axis=0), 2).tolist()}
    for scoring in consistency_scores.SCORINGS:
        scores = consistency_scores.consistency_scores(model, params, images, run.config.seed,
                                                       scoring=scoring)
        out[scoring] = {key: round(scores[key], 3) for key in SUMMARY_KEYS}
    return out


def main() -> None:
    parser = arguments.OneLineArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("workdirs", nargs="+")
    records.add_record_flag(parser)
    args = parser.parse_args()
    recorder = records.script_recorder(args.record)
    figures = {}
    for workdir in args.workdirs:
        figures[workdir] = scorings(workdir)
        print(workdir, json.dumps(figures[workdir]), flush=True)
    records.write_or_exit(recorder, figures,
                          runs=[records.workdir_history(w) for w in args.workdirs])


if __name__ == "__main__":
    cli.run_script(main)
