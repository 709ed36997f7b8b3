r"""Does a trained CT-VAE's causal graph carry information? Action retrieval on the
run's test transitions with the learned graph against the same graph's edges
placed at random, every edge, and no edge (Gendron et al., "Disentanglement of
Latent Representations via Causal Interventions", IJCAI 2023, §3.4 and §4).

  python benchmarks/ct_graph_ablation.py W [--num_pairs=2000]

W is a finished CT-VAE run. Every row takes each action's intervention mask and
graph at their most likely value (probability > 0.5, the headline's structure) and
then replaces the graph:
  learned   kept as it is;
  shuffled  each example's edges placed uniformly at random over the N² entries
            (the same count, so the same density; mean over 4 shuffles);
  full      every edge present;
  empty     no edge: a node hears only itself and the action node.
The transition GNN and the mask are the trained ones in every row. If the learned
graph carried no information, "shuffled" would score as well as "learned".

Prints a Markdown table (action and factor accuracy, then per action) and, last,
one JSON line with every figure and the learned graph's edge density and mask
density per action.
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
from causal_disent.data import registry, splits, transitions  # noqa: E402
from causal_disent.evaluation import ct_evaluation, ct_retrieval  # noqa: E402
from causal_disent.evaluation.trained_runs import load_config  # noqa: E402
from causal_disent.runs import ct as ct_run, mcqvae as mcqvae_run, records  # noqa: E402
from causal_disent.utils import arguments  # noqa: E402
from causal_disent.utils.sharding import make_data_mesh  # noqa: E402

ABLATIONS = ("none", "shuffled", "full", "empty")
ROW_NAMES = {"none": "learned", "shuffled": "shuffled (same density)", "full": "full",
             "empty": "empty"}
NUM_SHUFFLES = 4


def ablation_scores(workdir: Path, num_pairs: int) -> dict:
    config = load_config(workdir)
    mesh = make_data_mesh()
    dataset = registry.dataset_from_config(config.data)
    mcqvae, mcqvae_params = mcqvae_run.load_trained(
        config, ct_run.mcqvae_workdir(config, workdir), mesh, dataset)
    model, params = ct_run.load_trained(config, workdir, mesh, dataset,
                                        stage1_params=mcqvae_params)
    sampler = transitions.sampler_for(dataset, splits.configured_split(dataset, config.data),
                                      seed=config.seed)
    pairs = sampler.fixed_set("test", num_pairs)
    batch_size = config.ct.train.eval_batch_size
    encode = ct_retrieval.make_encoder(mcqvae, mesh)
    codes = [ct_retrieval.encode_images(encode, mcqvae_params, dataset, pairs[f"{name}_index"],
                                        mesh, batch_size) for name in ("x", "y")]
    rng = ct_run.stage_rngs(config)[2]
    learned = ct_retrieval.score_pairs(model.with_structure("most_likely"), params, *codes,
                                       mesh, batch_size, rng)
    rows = {}
    for ablation in ABLATIONS:
        layer = model.with_structure("most_likely", ablation)
        repeats = NUM_SHUFFLES if ablation == "shuffled" else 1
        scored = [ct_evaluation.action_retrieval_scores(ct_retrieval.action_probabilities(
            layer, params, *codes, mesh, batch_size, jax.random.fold_in(rng, repeat)),
            pairs["action"]) for repeat in range(repeats)]
        rows[ROW_NAMES[ablation]] = {
            key: float(np.mean([s[key] for s in scored]))
            for key in ("action_accuracy", "factor_accuracy")
        } | {"per_action_accuracy": np.mean(
            [[np.nan if a is None else a for a in s["per_action_accuracy"]] for s in scored],
            axis=0).round(4).tolist()}
    return {"workdir": str(workdir), "num_pairs": len(pairs["action"]),
            "action_names": list(transitions.dataset_action_names(dataset)),
            "learned_structure": {name: np.round(values, 4).tolist() for name, values in
                                  ct_evaluation.structure_densities(learned).items()},
            "rows": rows}


def markdown(result: dict) -> str:
    names = result["action_names"]
    lines = ["| graph | action acc. | factor acc. | " + " | ".join(names) + " |",
             "|---|---|---|" + "---|" * len(names)]
    for row_name, row in result["rows"].items():
        per_action = " | ".join(f"{value:.2f}" for value in row["per_action_accuracy"])
        lines.append(f"| {row_name} | {row['action_accuracy']:.3f} | "
                     f"{row['factor_accuracy']:.3f} | {per_action} |")
    density = result["learned_structure"]
    lines.append("| learned edge density | | | "
                 + " | ".join(f"{value:.2f}" for value in density["edge_density"]) + " |")
    lines.append("| learned mask density | | | "
                 + " | ".join(f"{value:.2f}" for value in density["mask_density"]) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = arguments.OneLineArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("workdir", type=Path)
    parser.add_argument("--num_pairs", type=arguments.positive_int, default=2000)
    records.add_record_flag(parser)
    args = parser.parse_args()
    recorder = records.script_recorder(args.record)
    result = ablation_scores(args.workdir.absolute(), args.num_pairs)
    print(markdown(result))
    print(json.dumps(result))
    records.write_or_exit(recorder, result, runs=[records.workdir_history(args.workdir)])


if __name__ == "__main__":
    cli.run_script(main)
