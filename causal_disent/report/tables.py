"""The results tables of README.md and docs/, each rendered from results/ records.

Every figure a table shows is read from a record (causal_disent/runs/records.py: a
file the measuring command wrote itself) or, for the GPU runs brought back before
records existed, from the run's own files under results/<run folder>/. Reference
figures (the papers', the authors' code's) come from `reference.py`, with their source.
A table names its records in TABLES; `python -m causal_disent.report` renders them.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Callable
from pathlib import Path

from causal_disent.report import reference
from causal_disent.runs import records

# Shapes3D actions in the CT-VAE's order; the geometry columns are these pairs.
GEOMETRY = {"scale": (3, 9), "shape": (4, 10), "orientation": (5, 11)}


class MissingRecord(records.RecordError):
    """A table needs a record that results/ does not hold."""


class Results:
    """The records of a results/ folder, read on demand."""

    def __init__(self, directory: Path):
        self.directory = Path(directory)

    def record(self, name: str) -> dict:
        path = self.directory / f"{name}.json"
        if not path.is_file():
            raise MissingRecord(f"{path} is missing: run the command that writes it "
                                f"(the page holding the table names it, with --record)")
        return records.read_record(path)

    def run_folder(self, name: str) -> Path:
        path = self.directory / name
        if not (path / "results.json").is_file():
            raise MissingRecord(f"{path}/results.json is missing")
        return path


# Formatting -------------------------------------------------------------------

def fixed(value: float, digits: int = 3) -> str:
    return f"{value:.{digits}f}"


def mean_std(values, digits: int = 3) -> str:
    values = list(values)
    if len(values) == 1:
        return fixed(values[0], digits)
    return f"{fixed(statistics.mean(values), digits)} ± {fixed(statistics.stdev(values), digits)}"


def minutes(seconds: float, digits: int = 1) -> str:
    return f"{seconds / 60:.{digits}f}"


def table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def machine_name(machine: dict) -> str:
    """"2 AMD EPYC cores" on CPU, the accelerator otherwise."""
    if machine.get("platform") == "cpu":
        return f"{machine['cores']} {machine['cpu']} cores"
    return machine["devices"]


def runs_machine(record: dict) -> str:
    """Where a record's workdirs trained, as their provenance says; for runs from
    before workdirs kept it, the machine that wrote the record (the same kind of
    machine for every CPU record here; their logs name only the platform)."""
    machines = {machine_name(command["machine"]) for group in record["figures"]["groups"].values()
                for run in group["runs"]
                for command in run.get("history", {}).get("commands", []) if "machine" in command}
    return ", ".join(sorted(machines)) or machine_name(record["machine"])


def record_command(record: dict) -> str:
    return f"`{record['command']}`"


# CT-VAE ---------------------------------------------------------------------------

def _ct(run: dict) -> dict:
    return run["results"]["ct"]


def _headline(ct: dict) -> str:
    return f"{fixed(ct['action_accuracy'])} / {fixed(ct['factor_accuracy'])}"


def _draws(ct: dict) -> str:
    draws = ct["draws"]
    return (f"{fixed(draws['action_accuracy']['mean'])} ± {fixed(draws['action_accuracy']['std'])}"
            f" / {fixed(draws['factor_accuracy']['mean'])} ± "
            f"{fixed(draws['factor_accuracy']['std'])}")


def _geometry(ct: dict) -> str:
    per_action = ct["per_action_accuracy"]
    return ", ".join(f"{per_action[plus]:.2f} / {per_action[minus]:.2f}"
                     for plus, minus in GEOMETRY.values())


def _stage_seconds(run: dict, stage: str) -> float | None:
    """A stage's training and evaluation time from the run's first logged command."""
    for session in run.get("history", {}).get("log_sessions", []):
        if stage in session["stage_seconds"]:
            return session["stage_seconds"][stage]
    return None


def _psnr(run: dict) -> str:
    stage_one = run["results"].get("mcqvae")
    return f"{stage_one['test_psnr']:.1f} dB" if stage_one else "–"


def _group_runs(record: dict) -> dict[str, list[dict]]:
    return {label: group["runs"] for label, group in record["figures"]["groups"].items()}


def _seed_runs(record: dict) -> list[tuple[dict, dict]]:
    """(stage-1 run, stage-2 run) per seed of a seeds record: one group of whole runs,
    or a "stage 1" and a "stage 2" group (stage 2 trained on each seed's stage 1)."""
    groups = _group_runs(record)
    if set(groups) == {"stage 1", "stage 2"}:
        return list(zip(groups["stage 1"], groups["stage 2"]))
    [runs] = groups.values()
    return [(run, run) for run in runs]


def _seed_minutes(pair: tuple[dict, dict]) -> float:
    return (_stage_seconds(pair[0], "mcqvae") + _stage_seconds(pair[1], "ct")) / 60


def ct_small_seeds(results: Results, name: str = "ctvae_small_seeds") -> str:
    """`:small` per seed and over seeds: the issue's CPU target."""
    pairs = _seed_runs(results.record(name))
    rows = []
    for stage_one, stage_two in pairs:
        ct = _ct(stage_two)
        rows.append([f"seed {stage_two['seed']}", _psnr(stage_one), _headline(ct), _draws(ct),
                     f"{_seed_minutes((stage_one, stage_two)):.1f}", _geometry(ct)])
    cts = [_ct(stage_two) for _, stage_two in pairs]
    psnrs = [stage_one["results"]["mcqvae"]["test_psnr"] for stage_one, _ in pairs]
    rows.append([f"mean ± std, {len(pairs)} seeds", mean_std(psnrs, 1) + " dB",
                 f"**{mean_std([c['action_accuracy'] for c in cts])} / "
                 f"{mean_std([c['factor_accuracy'] for c in cts])}**",
                 f"{mean_std([c['draws']['action_accuracy']['mean'] for c in cts])} / "
                 f"{mean_std([c['draws']['factor_accuracy']['mean'] for c in cts])}",
                 "", ""])
    return table(["run", "stage 1 test PSNR", "headline (most likely)", "8 draws, mean ± std",
                  "minutes, both stages", "scale, shape, orientation (+ / −)"], rows)


CT_SMALL_RUNS = {  # record: the config it ran
    "ctvae_small_run_seed0_curve1200": "seed 0, stage-2 curve every 1200 steps (`:small` "
                                       "before commit a9ba9b6)",
    "ctvae_small_run_seed0": "seed 0, stage-2 curve every 2400 steps (`:small` now)",
}


def ct_small_run(results: Results) -> str:
    """Whole `:small` commands, both stages, timed as the user runs them."""
    rows = []
    for name, title in CT_SMALL_RUNS.items():
        record = results.record(name)
        figures, [history] = record["figures"], record["runs"]
        [session] = history["log_sessions"]  # one command, start to end, never resumed
        stages = session["stage_seconds"]
        rows.append([title, f"{figures['mcqvae']['test_psnr']:.2f} dB",
                     f"**{_headline(figures['ct'])}**", _draws(figures["ct"]),
                     f"{minutes(stages['mcqvae'])} / {minutes(stages['ct'])}",
                     f"**{minutes(record['wall_seconds'], 2)}**", machine_name(record["machine"])])
    return table(["run", "stage 1 test PSNR", "headline (most likely)", "8 draws, mean ± std",
                  "stage 1 / stage 2 minutes", "wall minutes, the whole command", "machine"],
                 rows)


def ct_small_seeds_previous(results: Results) -> str:
    """The same for the previous `:small` stage 2 (widths 32, one layer, constant noise)."""
    return ct_small_seeds(results, "ctvae_small_seeds_previous")


def ct_small_tried(results: Results) -> str:
    """Stage-2 variants on a trained `:small` stage 1."""
    record = results.record("ctvae_small_tried")
    rows = []
    for label, runs in _group_runs(record).items():
        for run in runs:
            ct = _ct(run)
            seconds = _stage_seconds(run, "ct")
            rows.append([label, _headline(ct), _draws(ct),
                         "–" if seconds is None else minutes(seconds), _geometry(ct)])
    return table(["stage 2", "headline (most likely)", "8 draws, mean ± std",
                  "stage-2 minutes", "scale, shape, orientation (+ / −)"], rows)


def ct_graph_ablation(results: Results) -> str:
    """Learned graph against shuffled, full and empty ones, on two trained models."""
    names = {"ct_graph_ablation_small": "graph KL weight 0.4 (paper)",
             "ct_graph_ablation_small_graph_kl0": "graph KL weight 0"}
    figures = {name: results.record(name)["figures"] for name in names}
    rows = []
    for row in next(iter(figures.values()))["rows"]:
        rows.append([row] + [f"{fixed(f['rows'][row]['action_accuracy'])} / "
                             f"{fixed(f['rows'][row]['factor_accuracy'])}"
                             for f in figures.values()])
    for key, title in (("edge_density", "learned edge density, per action"),
                       ("mask_density", "learned mask density, per action")):
        rows.append([title] + [f"{min(f['learned_structure'][key]):.2f}–"
                               f"{max(f['learned_structure'][key]):.2f}"
                               for f in figures.values()])
    return table(["graph"] + list(names.values()), rows)


def _console_stage_seconds(folder: Path) -> dict[str, int]:
    """Each stage's time from the summary of a run's console log brought back from a
    GPU (lines prefixed with the machine's Unix time)."""
    seconds = {}
    for line in (folder / "console_log.txt").read_text().splitlines():
        row = records.SUMMARY_ROW.match(line.split(" ", 1)[-1])
        if row:
            seconds[row.group(1)] = records.summary_row_seconds(row)
    return seconds


def ct_gpu(results: Results) -> str:
    """The `:gpu` run's curve and final scores (a run folder brought back from a GPU)."""
    folder = results.run_folder("gpu_2026-11-26_h200_ctvae_40k")
    curve = [json.loads(line) for line in (folder / "ct.jsonl").read_text().splitlines()
             if line.strip()]
    rows = [[str(point["step"]),
             f"{fixed(point['action_accuracy'], 2)} / {fixed(point['factor_accuracy'], 2)}",
             f"{fixed(point['action_accuracy_draws_mean'], 2)} / "
             f"{fixed(point['factor_accuracy_draws_mean'], 2)}"] for point in curve]
    ct = json.loads((folder / "results.json").read_text())["ct"]
    rows.append([f"final, {ct['num_pairs']} pairs", f"**{_headline(ct)}**", _draws(ct)])
    return table(["stage-2 step", "headline action / factor", "8 draws, mean"], rows)


# Consistency, speed ---------------------------------------------------

CONSISTENCY_ROWS = {"AE": ["cons_ae"], "AE + C-I": ["cons_ae_ci"], "XAE": ["cons_xae"],
                    "XAE + C-I": ["cons_xae_ci"]}


def consistency_shapes3d(results: Results) -> str:
    """INV / EQV / SCN under both normalisations, with each model's test BCE."""
    summary = results.record("consistency_shapes3d_small")["figures"]["groups"]
    scorings = results.record("consistency_scorings_shapes3d_small")
    rows = []
    for label, group in summary.items():
        paths = [run["path"] for run in group["runs"]]
        scored = [scorings["figures"][path] for path in paths]
        cells = [label, str(len(paths)),
                 mean_std([run["scores"]["test_bce"] for run in group["runs"]], 1)]
        for key in ("inv_off_diagonal", "inv_diagonal", "eqv_mean", "scn_mean"):
            cells.append(f"{mean_std([s['authors'][key] for s in scored])} / "
                         f"{mean_std([s['variance'][key] for s in scored])}")
        # Seeds trained in one stacked run share its time: count it once.
        seconds = {run["history"].get("stacked_run", run["path"]): _stage_seconds(run, "vae")
                   for run in group["runs"]}
        cells.append(minutes(sum(s for s in seconds.values() if s is not None)))
        rows.append(cells)
    return table(["model", "seeds", "test BCE", "INV off-diag., authors' / unit-free",
                  "INV diagonal", "EQV mean", "SCN mean", "CPU minutes (all seeds)"], rows)


def ct_step_time(results: Results) -> str:
    """Stage-2 step at the paper's sizes against the authors' PyTorch code."""
    record = results.record("ct_step_time_cpu")
    ours = record["figures"]["summary"]
    authors = reference.AUTHORS_CT_STEP_SECONDS
    rows = []
    for name, steps in (("authors' PyTorch (encoder and decoder in every step)", authors),
                        (f"causal_disent, code cache ({machine_name(record['machine'])})",
                         ours)):
        rows.append([name, *(f"{steps[mode]:.3f}" for mode in ("standard", "action", "causal")),
                     f"{steps['causal'] / steps['action']:.1f}×",
                     f"{steps['causal_peak_rss_gb']:.2f} GB"])
    rows.append(["speed-up", *(f"{authors[mode] / ours[mode]:.0f}×"
                               for mode in ("standard", "action", "causal")), "", ""])
    return table(["stage-2 step, seconds", "standard", "action", "causal", "causal / action",
                  "causal peak memory"], rows)


LOOP_CASES = {"betavae": "β-VAE", "betavae_s8": "β-VAE, 8 stacked seeds",
              "factorvae": "FactorVAE", "mcqvae": "MCQ-VAE (stage 1)",
              "ct": "CT-VAE stage 2 (code cache)", "ct_cache": "CT-VAE stage 2 (code cache)"}


def _loop_cells(case: dict | None) -> str:
    if case is None:
        return "–"
    return (f"{case['loop_steps_per_s']:.1f} / {case['bare_steps_per_s']:.1f} "
            f"(**{case['ratio']:.2f}**)")


def _loop_table(before: dict, after: dict, before_title: str, after_title: str,
                skip: tuple[str, ...] = ()) -> str:
    rows = [[LOOP_CASES.get(name, name), _loop_cells(before["cases"].get(name)),
             _loop_cells(after["cases"].get(name))]
            for name in dict.fromkeys([*before["cases"], *after["cases"]]) if name not in skip]
    return table(["case", before_title, after_title], rows)


def mcqvae_step_time(results: Results) -> str:
    """Stage-1 training step at the paper's size and at :small's."""
    record = results.record("mcqvae_step_time_cpu")
    rows = [[name, str(figures["batch_size"]), f"{figures['parameters']:,}",
             f"{figures['median_step_s']:.3f}", f"{figures['images_per_s']:.0f}",
             f"{figures['first_step_s']:.1f}"]
            for name, figures in record["figures"].items() if isinstance(figures, dict)]
    return table(["MCQ-VAE", "batch", "parameters", "seconds per step", "images/s",
                  "first step (compiling), s"], rows)


def loop_overhead_gpu(results: Results) -> str:
    """The same on one GPU: the benchmark's own outputs brought back from the machine
    (their last line is its JSON)."""
    folder = results.directory / "gpu_2026-11-26_h200_loop_overhead"
    last = lambda name: json.loads((folder / name).read_text().strip().splitlines()[-1])  # noqa: E731
    return _loop_table(last("k1_host_data.txt"), last("k10_device_data.txt"),
                       "k = 1, host data: loop / bare steps/s (ratio)",
                       "k = 10, device data: loop / bare steps/s (ratio)",
                       # Its k = 1 `ct` case encoded images and compiled modes inside
                       # the timed loop (the folder's README.md): not a loop overhead.
                       skip=("ct",))


def records_index(results: Results) -> str:
    """Every record in results/: what wrote it, where and when."""
    rows = []
    for name, record in records.read_all(results.directory).items():
        rows.append([f"[{name}.json](../results/{name}.json)", record_command(record),
                     (record["commit"] or "–")[:12] + ("+dirty" if "dirty" in
                                                        (record["commit"] or "") else ""),
                     machine_name(record["machine"]), record["date"],
                     minutes(record["wall_seconds"])])
    return table(["record", "command", "commit", "machine", "date", "minutes"], rows)


def metric_card_bounds(results: Results) -> str:
    """Every metric's headline score for the ground-truth factors (the ceiling) and a
    random projection of them (the floor) on dsprites_synth."""
    from causal_disent.evaluation.card import headline_scores
    from causal_disent.evaluation.card_summary import COLUMN_TITLES

    cards = {model: results.record(f"metric_card_{model}_dsprites_synth")["figures"]
             for model in ("identity", "random")}
    scores = {model: headline_scores(card["representations"][model])
              for model, card in cards.items()}
    columns = list(scores["identity"])
    rows = [[f"{model} ({title})"] + [fixed(scores[model][column]) for column in columns]
            for model, title in (("identity", "ceiling"), ("random", "floor"))]
    return table(["representation"] + [COLUMN_TITLES.get(c, c) for c in columns], rows)


# The metric card's cost --------------------------------------------------------------

CARD_TIME_ROWS = {  # record: row title
    "metric_card_time_identity_dsprites_synth": "identity, dsprites_synth",
    "metric_card_time_random_dsprites_synth": "random projection, dsprites_synth",
    "metric_card_time_conv_dsprites_synth": "conv encoder (10 codes), dsprites_synth",
}
CARD_TIME_COLUMNS = ("mig", "sap", "dci", "betavae", "factorvae", "modularity_explicitness",
                     "unsupervised")


def metric_card_time(results: Results) -> str:
    """Seconds of a full card at the reference 10 000 samples, per metric
    (benchmarks/metric_card_time.py)."""
    rows = []
    for name, title in CARD_TIME_ROWS.items():
        figures = results.record(name)["figures"]
        seconds, total = figures["seconds_per_metric"], figures["total_seconds"]
        rows.append([title] + [f"{seconds[metric]:.1f}" for metric in CARD_TIME_COLUMNS]
                    + [f"{total:.0f}"])
    return table(["model, dataset", "MIG", "SAP", "DCI", "BetaVAE", "FactorVAE", "mod./expl.",
                  "TC", "total"], rows)


# CausalVAE --------------------------------------------------------------------------

def _names(figures: dict) -> list[str]:
    return [name.replace("_", " ") for name in figures["label_names"]]


def _edge_list(graph: list[list[int]], names: list[str]) -> str:
    """A DAG as "cause → effect" pairs (graph[i][j] = 1 means i → j)."""
    return ", ".join(f"{names[i]} → {names[j]}" for i, row in enumerate(graph)
                     for j, edge in enumerate(row) if edge) or "no edge"


GRAPH_DATASETS = {"pendulum": "Pendulum", "flow": "Flow"}


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


# The front page ------------------------------------------------------------------

def headline(results: Results) -> str:
    """The README's first table: each headline figure against the paper's."""
    seeds = results.record("ctvae_small_seeds")
    pairs = _seed_runs(seeds)
    cts = [_ct(stage_two) for _, stage_two in pairs]
    gpu = results.run_folder("gpu_2026-11-26_h200_ctvae_40k")
    gpu_ct = json.loads((gpu / "results.json").read_text())["ct"]
    gpu_name = (gpu / "gpu.txt").read_text().splitlines()[1].split(",")[0]
    steps = results.record("ct_step_time_cpu")
    ours = steps["figures"]["summary"]
    paper_ct = reference.CT_VAE_ACCURACY
    authors = reference.AUTHORS_CT_STEP_SECONDS
    rows = [
        ["CT-VAE, test action / factor accuracy, `:small`",
         f"{mean_std([c['action_accuracy'] for c in cts])} / "
         f"{mean_std([c['factor_accuracy'] for c in cts])} ({len(pairs)} seeds)",
         f"{paper_ct[0]:.2f} / {paper_ct[1]:.2f}",
         f"{runs_machine(seeds)}; the whole command "
         f"{minutes(results.record('ctvae_small_run_seed0')['wall_seconds'])} min on idle "
         f"cores, {min(map(_seed_minutes, pairs)):.0f}–{max(map(_seed_minutes, pairs)):.0f} "
         f"min a seed, cores partly shared"],
        ["CT-VAE, the same, `:gpu` (paper sizes): headline; 8 draws",
         f"{_headline(gpu_ct)}; {fixed(gpu_ct['draws']['action_accuracy']['mean'])} / "
         f"{fixed(gpu_ct['draws']['factor_accuracy']['mean'])}",
         f"{paper_ct[0]:.2f} / {paper_ct[1]:.2f}",
         f"1 {gpu_name}, {minutes(sum(_console_stage_seconds(gpu).values()))} min"],
        ["CT-VAE stage-2 causal step (paper sizes), seconds",
         f"{ours['causal']:.2f} ({authors['causal'] / ours['causal']:.0f}× faster)",
         f"{authors['causal']} (authors' code)", machine_name(steps["machine"])],
    ]
    return table(["figure", "causal_disent", "paper / reference", "machine, time"], rows)


TABLES: dict[str, Callable[[Results], str]] = {
    "headline": headline,
    "ct_small_seeds": ct_small_seeds,
    "ct_small_seeds_previous": ct_small_seeds_previous,
    "ct_small_run": ct_small_run,
    "ct_small_tried": ct_small_tried,
    "ct_graph_ablation": ct_graph_ablation,
    "ct_gpu": ct_gpu,
    "consistency_shapes3d": consistency_shapes3d,
    "ct_step_time": ct_step_time,
    "records_index": records_index,
    "mcqvae_step_time": mcqvae_step_time,
    "metric_card_bounds": metric_card_bounds,
    "metric_card_time": metric_card_time,
    "causalvae_lu_rank": causalvae_lu_rank,
    "causalvae_pc_tests": causalvae_pc_tests,
    "causalvae_pc_result": causalvae_pc_result,
    "loop_overhead_gpu": loop_overhead_gpu,
}


def render(name: str, results: Results) -> str:
    if name not in TABLES:
        raise KeyError(f"no table named {name!r}; known: {', '.join(TABLES)}")
    return TABLES[name](results)
