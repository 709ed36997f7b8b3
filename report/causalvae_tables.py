"""CausalVAE's tables: the `:small` runs against the paper (each decoder, ConditionVAE)
and their do() images against the simulator's counterfactuals, and where the
true graph ranks under the paper's label loss and under the PC algorithm."""

from __future__ import annotations

import json
import shlex
from typing import NamedTuple

from report import reference
from report.formatting import (
    Results,
    machine_name,
    mean_std,
    table,
    whole_run_minutes,
)
from causal_disent.runs.records import RecordError


def _names(figures: dict) -> list[str]:
    return [name.replace("_", " ") for name in figures["label_names"]]


def _edge_list(graph: list[list[int]], names: list[str],
               strengths: list[list[float]] | None = None) -> str:
    """A DAG as "cause → effect" pairs (graph[i][j] = 1 means i → j), each with its
    learned strength when `strengths` (the weighted adjacency) is given."""
    return ", ".join(f"{names[i]} → {names[j]}"
                     + ("" if strengths is None else f" ({strengths[i][j]:.2f})")
                     for i, row in enumerate(graph) for j, edge in enumerate(row)
                     if edge) or "no edge"


GRAPH_DATASETS = {"pendulum": "Pendulum", "flow": "Flow"}


class SmallRun(NamedTuple):
    """One `main --record` of configs/causalvae_<dataset>.py:small at seed 0."""
    record: str
    dataset: str
    model: str  # as the tables name it
    flag: str = ""  # the override that made it, if any


SMALL_RUNS = (
    SmallRun("causalvae_pendulum_small", "pendulum", "per concept (default)"),
    SmallRun("causalvae_pendulum_small_joint", "pendulum", "joint",
             "--config.causalvae.model.decoder=joint"),
    SmallRun("causalvae_pendulum_small_condition_vae", "pendulum", "ConditionVAE",
             "--config.causalvae.model.variant=condition_vae"),
    SmallRun("causalvae_flow_small", "flow", "per concept (default)"),
    SmallRun("causalvae_flow_small_condition_vae", "flow", "ConditionVAE",
             "--config.causalvae.model.variant=condition_vae"),
)


def _paper_mic_tic(run: SmallRun, variant: str) -> str:
    """The paper's Table 1 entry, where it has one: its CausalVAE decodes per concept,
    so the joint decoder has none."""
    paper = reference.CAUSALVAE_TABLE1_MIC_TIC.get((run.dataset, variant))
    if paper is None or run.model == "joint":
        return ""
    return f" ({paper[0]} / {paper[1]})"


def causalvae_small(results: Results) -> str:
    """CausalVAE `:small` against the paper: MIC / TIC and the learned graph, per
    dataset, decoder and for ConditionVAE (seed 0 each)."""
    rows = []
    for run in SMALL_RUNS:
        record = results.record(run.record)
        causal = record["figures"]["causalvae"]
        has_graph = causal["variant"] != "condition_vae"
        rows.append([
            f"{GRAPH_DATASETS[run.dataset]}, {run.model}"
            + (f" (`{run.flag}`)" if run.flag else ""),
            f"{causal['mic']:.1f} / {causal['tic']:.1f}"
            + _paper_mic_tic(run, causal["variant"]),
            _edge_list(causal["learned_graph"], _names(causal), causal["learned_adjacency"])
            if has_graph else "none (no causal layer)",
            str(causal["shd"]) if has_graph else "–",
            ("yes" if causal["in_true_equivalence_class"] else "no") if has_graph else "–",
            f"{causal['test_bce']:.0f}", f"{whole_run_minutes(record):.0f}"])
    return table(["data, model (seed 0)", "MIC / TIC (paper)",
                  "learned graph (edge strength)", "SHD", "in the true class", "test BCE",
                  "minutes"], rows)


def _trained_seed(record: dict) -> int:
    """The seed a `main --record`'s run trained with: the `--config.seed` of the first
    command that trained its workdir (the config's 0 without one)."""
    commands = record["runs"][0].get("commands") or [{"command": record["command"]}]
    for argument in shlex.split(commands[0]["command"]):
        if argument.startswith("--config.seed="):
            return int(argument.split("=", 1)[1])
    return 0


def _seed_records(results: Results, dataset: str) -> list[tuple[int, dict]]:
    """(seed, record) of the default model's `:small` runs on `dataset`: seed 0's
    record and each `<it>_seed<S>` beside it, by seed."""
    base = next(run.record for run in SMALL_RUNS if run.dataset == dataset)  # the default's
    found = []
    for name in [base, *results.names(f"{base}_seed*")]:
        record = results.record(name)
        seed = _trained_seed(record)
        if seed != (0 if name == base else int(name.rsplit("_seed", 1)[1])):
            raise RecordError(f"results/{name}.json trained seed {seed}, not the one its "
                              "name says: rename it or rerun its command")
        found.append((seed, record))
    return sorted(found, key=lambda pair: pair[0])


def causalvae_seeds(results: Results) -> str:
    """The default CausalVAE `:small` over the seeds that have records, per dataset:
    mean ± sample std of the scores, each seed's SHD, class and minutes."""
    rows = []
    for dataset, title in GRAPH_DATASETS.items():
        seeds = _seed_records(results, dataset)
        causal = [record["figures"]["causalvae"] for _, record in seeds]
        rows.append([
            title, ", ".join(str(seed) for seed, _ in seeds),
            mean_std([c["mic"] for c in causal], 2), mean_std([c["tic"] for c in causal], 2),
            " / ".join(str(c["shd"]) for c in causal),
            " / ".join("yes" if c["in_true_equivalence_class"] else "no" for c in causal),
            mean_std([c["test_bce"] for c in causal], 0),
            " / ".join(f"{whole_run_minutes(record):.0f}" for _, record in seeds)])
    return table(["data (default model)", "seeds", "MIC", "TIC", "SHD (each seed)",
                  "in the true class (each seed)", "test BCE", "minutes (each seed)"], rows)


def _per_mille(scores: dict, key: str) -> str:
    """A region's MSE ×1000 of the do() image, and of the no-op reconstruction."""
    return (f"{1000 * scores['model'][key]:.1f} "
            f"({1000 * scores['model_reconstruction'][key]:.1f})")


def causalvae_counterfactuals(results: Results) -> str:
    """Each `:small` run's do() images against the simulator's true counterfactuals
    (the run's own scores, `counterfactual` in its results), per concept and model."""
    rows = []
    for dataset in dict.fromkeys(run.dataset for run in SMALL_RUNS):
        runs = [(run.model, results.record(run.record)["figures"]["causalvae"]["counterfactual"])
                for run in SMALL_RUNS if run.dataset == dataset]
        for concept, first in runs[0][1]["concepts"].items():
            role = "cause" if first["descendants"] else "effect"
            for i, (model, counterfactual) in enumerate(runs):
                scores = counterfactual["concepts"][concept]
                rows.append([f"{GRAPH_DATASETS[dataset]}: {concept.replace('_', ' ')} ({role})"
                             if i == 0 else "", model, _per_mille(scores, "mse"),
                             _per_mille(scores, "mse_changed"), _per_mille(scores, "mse_kept")])
    return table(["do(concept)", "model", "whole (no-op)", "changed pixels (no-op)",
                  "kept pixels (no-op)"], rows)


def headline_row(results: Results) -> list[str]:
    """The front page's row: MIC / TIC and SHD against the paper's Table 1."""
    record = results.record("causalvae_pendulum_small")
    causal = record["figures"]["causalvae"]
    paper = reference.CAUSALVAE_PENDULUM_MIC_TIC
    return ["CausalVAE on Pendulum, MIC / TIC (%), SHD to the true DAG, `:small`",
            f"{causal['mic']:.1f} / {causal['tic']:.1f}, SHD {causal['shd']} (seed 0)",
            f"{paper[0]} / {paper[1]}, no SHD reported",
            f"{machine_name(record['machine'])}, {whole_run_minutes(record):.0f} min"]


def _graph_records(results: Results) -> list[tuple[str, dict]]:
    """benchmarks/causalvae_lu_graph_ranking.py's record per dataset."""
    return [(title, results.record(f"causalvae_graph_{name}")["figures"])
            for name, title in GRAPH_DATASETS.items()]


def causalvae_lu_rank(results: Results) -> str:
    """Where the true graph ranks under the paper's label loss l_u, over every DAG."""
    rows = []
    for title, figures in _graph_records(results):
        no_bias, bias = figures["results"]
        edges = [sum(map(sum, fit["best_graph"])) for fit in (no_bias, bias)]
        likelihood = figures["knn_likelihood"]
        rows.append([title, f"{no_bias['true_graph_rank']} / {bias['true_graph_rank']} of "
                            f"{no_bias['num_dags']}",
                     f"{edges[0]} / {edges[1]} edges, SHD {no_bias['best_graph_shd']} / "
                     f"{bias['best_graph_shd']}",
                     f"{likelihood['true_graph_rank']}; best at SHD "
                     f"{likelihood['best_graph_shd']}, "
                     f"{'in' if likelihood['best_in_true_class'] else 'outside'} the true class"])
    return table(["data", "true graph's rank under l_u (no bias / bias)",
                  "l_u's best graph (no bias / bias)",
                  "true graph's rank under a k-NN BIC likelihood"], rows)


def _test_text(test: list, names: list[str]) -> str:
    i, j, given, p_value, _ = test
    condition = f" given {', '.join(names[k] for k in given)}" if given else ""
    return f"{names[i]} ⊥ {names[j]}{condition} ({p_value:.2f})"


def causalvae_pc_tests(results: Results) -> str:
    """The conditional-independence tests PC ran for seed 0, and which it accepted."""
    rows = []
    for title, figures in _graph_records(results):
        names, tests = _names(figures), figures["pc"]["runs"][0]["tests"]
        rejected = [test[3] for test in tests if not test[4]]
        rows.append([title, "; ".join(_test_text(t, names) for t in tests if t[4]),
                     f"{len(rejected)} tests, p ≤ {max(rejected):.3f}"])
    return table(["data", "accepted independences (p)", "every other test"], rows)


def _span(values: list[float]) -> str:
    low, high = f"{min(values):.0f}", f"{max(values):.0f}"
    return low if low == high else f"{low}–{high}"


def causalvae_pc_result(results: Results) -> str:
    """PC's graph for each seed, against the true one."""
    rows = []
    for title, figures in _graph_records(results):
        names, runs = _names(figures), figures["pc"]["runs"]
        dags = {json.dumps(run["dag"]) for run in runs}
        seeds = ", ".join(str(run["seed"]) for run in runs)
        rank = figures["pc"]["ci_disagreement_rank"]["pc_tests"]
        rows.append([
            title, seeds,
            _edge_list(runs[0]["dag"], names) + ("" if len(dags) == 1 else " (seed 0; others differ)"),
            " / ".join("yes" if run["cpdag_equals_true_cpdag"] else "no" for run in runs),
            " / ".join(str(run["shd"]) for run in runs),
            " / ".join("yes" if run["in_true_class"] else "no" for run in runs),
            f"{rank['true_graph_rank']} of {rank['num_dags']} (tie of {rank['tie_size']})",
            _span([run["seconds"] for run in runs])])
    return table(["data", "seeds", "PC's DAG", "CPDAG equals the true one", "SHD to the true DAG",
                  "in the true class", "true graph's rank by CI disagreement",
                  "seconds a run"], rows)
