"""CT-VAE's tables: the `:small` runs and seeds, the stage-2 variants tried, the graph
ablation, the `:gpu` runs brought back from a GPU, and the step times of both stages."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

from causal_disent.data import shapes3d_synth
from causal_disent.evaluation import ct_evaluation
from report import reference
from report.formatting import (MissingRecord, Results, fixed, group_runs,
                                             history_minutes, machine_name, mean_std, minutes,
                                             runs_machine, stage_seconds, table,
                                             whole_run_minutes)
from causal_disent.runs import records

# Shapes3D actions in the CT-VAE's order; the geometry columns are these pairs.
GEOMETRY = {"scale": (3, 9), "shape": (4, 10), "orientation": (5, 11)}


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


def _psnr(run: dict) -> str:
    stage_one = run["results"].get("mcqvae")
    return f"{stage_one['test_psnr']:.1f} dB" if stage_one else "–"


def _seed_runs(record: dict) -> list[tuple[dict, dict]]:
    """(stage-1 run, stage-2 run) per seed of a seeds record: one group of whole runs,
    or a "stage 1" and a "stage 2" group (stage 2 trained on each seed's stage 1)."""
    groups = group_runs(record)
    if set(groups) == {"stage 1", "stage 2"}:
        return list(zip(groups["stage 1"], groups["stage 2"]))
    [runs] = groups.values()
    return [(run, run) for run in runs]


def _seed_minutes(pair: tuple[dict, dict]) -> float:
    return (stage_seconds(pair[0], "mcqvae") + stage_seconds(pair[1], "ct")) / 60


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


# The MCQ-VAE's network of the `:small` records made before the configs took the
# authors' activations (models/conv.py).
FORMER_NETWORK = "`leaky_relu_in_blocks` activations"

CT_SMALL_RUNS = {  # record: the config it ran
    "ctvae_small_run_seed0_curve1200": "seed 0, stage-2 curve every 1200 steps (`:small` "
                                       f"with the {FORMER_NETWORK})",
    "ctvae_small_run_seed0": "seed 0, stage-2 curve every 2400 steps (`:small` "
                             f"with the {FORMER_NETWORK})",
    "ctvae_small_run_seed0_authors_activations": "seed 0, the authors' activations "
                                                 "(`:small` as configured)",
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


def ct_small_seeds_authors_activations(results: Results) -> str:
    """The same, with the MCQ-VAE's authors' activations (`:small` now): whole runs."""
    return ct_small_seeds(results, "ctvae_small_seeds_authors_activations")


def ct_small_seeds_previous(results: Results) -> str:
    """The same for the previous `:small` stage 2 (widths 32, one layer, constant noise)."""
    return ct_small_seeds(results, "ctvae_small_seeds_previous")


def ct_small_tried(results: Results) -> str:
    """Stage-2 variants on a trained `:small` stage 1."""
    record = results.record("ctvae_small_tried")
    rows = []
    for label, runs in group_runs(record).items():
        for run in runs:
            ct = _ct(run)
            seconds = stage_seconds(run, "ct")
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


# The `:gpu` runs brought back from one H200, each (title, folder, record): the
# configuration as it stands (structure noise annealed to 0), run three times by the
# same command (the third with issue 33's loop: 10 steps a call, data on the device;
# its command wrote no record, so its folder is its source), and the earlier run with
# the paper's constant noise (no record).
GPU_RUNS = (
    ("noise annealed to 0, run 1 (990b16c)", "gpu_2026-11-26_h200_ctvae_noise0", "ctvae_gpu"),
    ("run 2 (2a15770)", "gpu_2026-11-27_h200_ctvae_head", "ctvae_gpu_2a15770"),
    ("run 3, k = 10, device data (a44d96a)", "gpu_2026-11-28_h200_ctvae_k10", None),
    ("constant noise (a24a903)", "gpu_2026-11-26_h200_ctvae_40k", None),
)
# The runs of the configuration as it stands, for the front page.
GPU_HEADLINE_RUNS = GPU_RUNS[:3]


def _gpu_curve(folder: Path) -> dict[int, dict]:
    """The curve points of a run's results.json (its curves/ct.jsonl, point for point)."""
    curve = json.loads((folder / "results.json").read_text())["ct"]["curve"]
    return {point["step"]: point for point in curve}


def _gpu_run(results: Results, folder: str, record: str | None) -> tuple[dict, float, dict]:
    """A `:gpu` run's stage-2 results, training minutes and machine: from its record,
    or, for a command that wrote none, from the files brought back (results.json, the
    workdir's log.txt and provenance.jsonl, read as a record reads them)."""
    if record:
        gpu = results.record(record)
        return gpu["figures"]["ct"], whole_run_minutes(gpu), gpu["machine"]
    path = results.run_folder(folder)
    history = records.workdir_history(path)
    ct = json.loads((path / "results.json").read_text())["ct"]
    return ct, history_minutes(history), history["commands"][-1]["machine"]


def _curve_cells(point: dict | None) -> list[str]:
    if point is None:
        return ["–", "–"]
    return [f"{fixed(point['action_accuracy'], 2)} / {fixed(point['factor_accuracy'], 2)}",
            f"{fixed(point['action_accuracy_draws_mean'], 2)} / "
            f"{fixed(point['factor_accuracy_draws_mean'], 2)}"]


def ct_gpu(results: Results) -> str:
    """The `:gpu` runs' curves and final scores side by side (run folders brought
    back from a GPU)."""
    folders = [results.run_folder(folder) for _, folder, _ in GPU_RUNS]
    curves = [_gpu_curve(folder) for folder in folders]
    steps = sorted(set().union(*curves))
    rows = [[str(step), *(cell for curve in curves for cell in _curve_cells(curve.get(step)))]
            for step in steps]
    cts = [json.loads((folder / "results.json").read_text())["ct"] for folder in folders]
    rows.append([f"final, {cts[0]['num_pairs']} pairs",
                 *(cell for ct in cts for cell in (f"**{_headline(ct)}**", _draws(ct)))])
    headers = [cell for title, _, _ in GPU_RUNS for cell in (f"{title}: headline",
                                                              "8 draws, mean")]
    return table(["stage-2 step", *headers], rows)


def _pair_mix_scores(ct: dict) -> dict:
    """The headline reweighted to the authors' mix of test pairs: from the run's
    results, or, for runs scored before the key existed, from its per-action
    accuracy and factor confusion (the same computation; Shapes3D's factor sizes)."""
    return ct.get("authors_pair_mix") or ct_evaluation.pair_mix_scores(
        ct, shapes3d_synth.FACTOR_SIZES)


def _pair_mix(ct: dict) -> str:
    mixed = _pair_mix_scores(ct)
    return f"{fixed(mixed['action_accuracy'])} / {fixed(mixed['factor_accuracy'])}"


def _mean_pair(scores: list[dict]) -> str:
    return (f"{mean_std([s['action_accuracy'] for s in scores])} / "
            f"{mean_std([s['factor_accuracy'] for s in scores])}")


def ct_action_mix_seeds(results: Results) -> str:
    """Stage 2 trained on balanced actions (the default) and on the authors' mix of
    transitions, each seed's on the same stage 1, scored on both mixes of test pairs."""
    balanced = {stage_two["seed"]: _ct(stage_two) for _, stage_two in
                _seed_runs(results.record("ctvae_small_seeds_authors_activations"))}
    [mixed_runs] = group_runs(results.record("ctvae_small_stage2_authors_mix_seeds")).values()
    mixed = {run["seed"]: _ct(run) for run in mixed_runs}
    seeds = sorted(mixed)
    rows = [[f"seed {seed}", _headline(balanced[seed]), _pair_mix(balanced[seed]),
             _headline(mixed[seed]), _pair_mix(mixed[seed])] for seed in seeds]
    columns = []
    for runs in (balanced, mixed):
        cts = [runs[seed] for seed in seeds]
        columns += [f"**{_mean_pair(cts)}**", _mean_pair([_pair_mix_scores(c) for c in cts])]
    rows.append([f"mean ± std, {len(seeds)} seeds", *columns])
    return table(["stage 2", "trained on balanced actions: balanced test pairs",
                  "the same: the authors' test pairs",
                  "trained on the authors' mix: balanced test pairs",
                  "the same: the authors' test pairs"], rows)


def ct_pair_mix(results: Results) -> str:
    """The headline over our action-balanced test pairs beside the same checkpoint's
    accuracy on the authors' mix of pairs, for the `:small` seeds and `:gpu` runs."""
    rows = [[f"`:small` with the {FORMER_NETWORK}, seed {stage_two['seed']}",
             _headline(_ct(stage_two)), _pair_mix(_ct(stage_two))]
            for _, stage_two in _seed_runs(results.record("ctvae_small_seeds"))]
    for _, stage_two in _seed_runs(results.record("ctvae_small_seeds_authors_activations")):
        rows.append([f"`:small` now (the authors' activations), seed {stage_two['seed']}",
                     _headline(_ct(stage_two)), _pair_mix(_ct(stage_two))])
    mixed = results.record("ctvae_small_stage2_authors_mix_seed0")["figures"]["ct"]
    rows.append(["the same stage 1, stage 2 trained on the authors' mix "
                 "(`ct.objective.action_mix=authors`)", _headline(mixed), _pair_mix(mixed)])
    for title, folder, _ in GPU_RUNS:
        ct = json.loads((results.run_folder(folder) / "results.json").read_text())["ct"]
        rows.append([f"`:gpu`, {title}", _headline(ct), _pair_mix(ct)])
    return table(["run", "headline: actions balanced", "headline: the authors' pair mix"],
                 rows)


def ct_step_time(results: Results) -> str:
    """Stage-2 step at the paper's sizes against the authors' PyTorch code."""
    record = results.record("ct_step_time_cpu")
    ours, authors = _step_times(record)
    modes = ("standard", "action", "causal")
    path = ours["path"]
    gflop_per_s = ours["gflop_per_s"]
    rows = []
    for name, steps, rates in (
            (f"authors' PyTorch {authors['torch']} (encoder and decoder in every step)",
             authors, None),
            ("causal_disent, code cache", ours,
             [f"{gflop_per_s[f'{mode}:{path}']:.1f}" for mode in modes])):
        rows.append([name, *(f"{steps[mode]:.3f}" for mode in modes),
                     f"{steps['causal'] / steps['action']:.1f}×",
                     f"{steps['causal_peak_rss_gb']:.2f} GB",
                     " / ".join(rates) if rates else ""])
    rows.append(["speed-up", *(f"{ours['speedup'][mode]:.0f}×" for mode in modes), "", "", ""])
    return table([f"stage-2 step, seconds ({machine_name(record['machine'])}, one command)",
                  "standard", "action", "causal", "causal / action", "causal peak memory",
                  "ours, GFLOP/s"], rows)


def _step_times(record: dict) -> tuple[dict, dict]:
    """(our summary, the authors' times) of a ct_step_time record, which times both."""
    summary = record["figures"]["summary"]
    if "authors" not in summary:
        raise MissingRecord("ct_step_time_cpu.json has no authors' times; record it with "
                            "--authors_repo and --authors_python")
    return summary, summary["authors"]


def mcqvae_step_time(results: Results) -> str:
    """Stage-1 training step at the paper's size and at :small's."""
    record = results.record("mcqvae_step_time_cpu")
    rows = [[name, str(figures["batch_size"]), f"{figures['parameters']:,}",
             f"{figures['median_step_s']:.3f}", f"{figures['images_per_s']:.0f}",
             f"{figures['first_step_s']:.1f}"]
            for name, figures in record["figures"].items() if isinstance(figures, dict)]
    return table(["MCQ-VAE", "batch", "parameters", "seconds per step", "images/s",
                  "first step (compiling), s"], rows)


# The front page's rows ---------------------------------------------------------

def headline_accuracy_rows(results: Results) -> list[list[str]]:
    """Test action / factor accuracy against the paper: `:small` over seeds, `:gpu`."""
    seeds = results.record("ctvae_small_seeds")
    pairs = _seed_runs(seeds)
    cts = [_ct(stage_two) for _, stage_two in pairs]
    gpus = [_gpu_run(results, folder, record) for _, folder, record in GPU_HEADLINE_RUNS]
    paper = f"{reference.CT_VAE_ACCURACY[0]:.2f} / {reference.CT_VAE_ACCURACY[1]:.2f}"
    now = results.record("ctvae_small_run_seed0_authors_activations")
    now_pairs = _seed_runs(results.record("ctvae_small_seeds_authors_activations"))
    now_cts = [_ct(stage_two) for _, stage_two in now_pairs]
    return [
        ["CT-VAE, test action / factor accuracy, `:small` with the authors' MCQ-VAE "
         "activations (as configured)",
         f"{mean_std([c['action_accuracy'] for c in now_cts])} / "
         f"{mean_std([c['factor_accuracy'] for c in now_cts])} ({len(now_pairs)} seeds)",
         paper,
         f"{machine_name(now['machine'])}; seed 0's whole command "
         f"{minutes(now['wall_seconds'])} min, its first 10 shared with the test suite; "
         f"{min(map(_seed_minutes, now_pairs)):.0f}–{max(map(_seed_minutes, now_pairs)):.0f} "
         "min a seed, cores partly shared"],
        _width_row(results, paper),
        [f"CT-VAE, the same, `:small` with the {FORMER_NETWORK} (LeakyReLU inside "
         "the residual blocks, none after the 3×3 convolutions)",
         f"{mean_std([c['action_accuracy'] for c in cts])} / "
         f"{mean_std([c['factor_accuracy'] for c in cts])} ({len(pairs)} seeds)",
         paper,
         f"{runs_machine(seeds)}; the whole command "
         f"{minutes(results.record('ctvae_small_run_seed0')['wall_seconds'])} min on idle "
         f"cores, {min(map(_seed_minutes, pairs)):.0f}–{max(map(_seed_minutes, pairs)):.0f} "
         f"min a seed, cores partly shared"],
        [f"CT-VAE, the same, `:gpu` (paper sizes) with the {FORMER_NETWORK}, three "
         "runs of one command (the third at 10 steps a call): headline; 8 draws",
         " and ".join(_headline_and_draws(ct) for ct, _, _ in gpus),
         paper,
         f"{machine_name(gpus[0][2])}, "
         f"{', '.join(f'{minutes_:.1f}' for _, minutes_, _ in gpus)} min"],
    ]


def _width_row(results: Results, paper: str) -> list[str]:
    """Stage 2 at the authors' widths on one `:small` stage 1, over its seeds."""
    runs = [results.record(name) for name in results.names("ct_width_small_*")]
    cts = [run["figures"]["ct"] for run in runs]
    minutes_ = [whole_run_minutes(run) for run in runs]
    machines = ", ".join(sorted({machine_name(run["machine"]) for run in runs}))
    return ["CT-VAE, the same, stage 2 at the authors' widths (pair MLP 800, GNN 100) on "
            "`:small`'s stage 1",
            f"{mean_std([c['action_accuracy'] for c in cts])} / "
            f"{mean_std([c['factor_accuracy'] for c in cts])} ({len(cts)} seeds)",
            paper, f"{machines}; stage 2 {min(minutes_):.0f}–{max(minutes_):.0f} min a seed"]


def _headline_and_draws(ct: dict) -> str:
    """"headline; mean action / factor accuracy over the draws" of one run's stage 2."""
    draws = ct["draws"]
    return (f"{_headline(ct)}; {fixed(draws['action_accuracy']['mean'])} / "
            f"{fixed(draws['factor_accuracy']['mean'])}")


def headline_step_row(results: Results) -> list[str]:
    """The stage-2 causal step against the authors' code."""
    steps = results.record("ct_step_time_cpu")
    ours, authors = _step_times(steps)
    return ["CT-VAE stage-2 causal step (paper sizes), seconds",
            f"{ours['causal']:.2f} ({ours['speedup']['causal']:.0f}× faster)",
            f"{authors['causal']:.1f} (authors' code, timed in the same command)",
            machine_name(steps["machine"])]


def ct_width_probes(results: Results) -> str:
    """Paper-width stage 2 on one `:small` stage 1: the first 1000 steps of each run,
    per mode (benchmarks/ct_early_probes.py), one row per run of every probe record."""
    rows = []
    for name in results.names("ct_width_probes*"):
        for label, probe in results.record(name)["figures"]["probes"].items():
            settings = probe["settings"]
            first, last = probe["steps"]

            def cell(key):
                return "" if probe[key] is None else fixed(probe[key])

            rows.append([
                label, str(settings["seed"]),
                "on" if settings["root_weight"] else "off",
                f"{settings['learning_rate']:g}", str(settings["warmup_steps"]),
                f"{first}–{last}", cell("ce_x"), cell("ce_identity"),
                cell("standard_code_accuracy"), cell("ce_y"), cell("action_code_accuracy"),
                cell("causal_action_accuracy"), f"**{probe['regime']}**",
                str(probe.get("copies_x_from_step") or "–")])
    return table(["run", "seed", "skip term", "learning rate", "warm-up steps", "steps",
                  "ce_x", "ce_identity", "standard code acc.", "ce_y", "action code acc.",
                  "causal action acc.", "regime", "copies X from step"], rows)


def _density_range(densities: dict, name: str) -> str:
    values = densities[name]
    return f"{min(values):.2f}–{max(values):.2f}"


def ct_width_runs(results: Results) -> str:
    """Whole paper-width stage-2 runs on one `:small` stage 1 (`main --record`s named
    ct_width_small_*): the scores and, per action, the structure's densities, for
    the thresholded headline structure and over the draws; their mean over seeds."""
    rows, cts = [], []
    for name in results.names("ct_width_small_*"):
        record = results.record(name)
        ct = record["figures"]["ct"]
        [run] = record["runs"]
        headline, drawn = ct["densities"], ct["draws"]["densities"]
        rows.append([name.removeprefix("ct_width_small_"), _headline(ct), _draws(ct),
                     _geometry(ct),
                     f"{_density_range(headline, 'mask_density')} "
                     f"({_density_range(drawn, 'mask_density')})",
                     f"{_density_range(headline, 'edge_density')} "
                     f"({_density_range(drawn, 'edge_density')})",
                     minutes(history_minutes(run) * 60), machine_name(record["machine"])])
        cts.append(ct)
    if len(cts) > 1:
        rows.append([f"mean ± std, {len(cts)} seeds",
                     f"**{mean_std([c['action_accuracy'] for c in cts])} / "
                     f"{mean_std([c['factor_accuracy'] for c in cts])}**",
                     f"{mean_std([c['draws']['action_accuracy']['mean'] for c in cts])} / "
                     f"{mean_std([c['draws']['factor_accuracy']['mean'] for c in cts])}",
                     "", "", "", "", ""])
    return table(["run", "headline (most likely)", "8 draws, mean ± std",
                  "scale, shape, orientation (+ / −)",
                  "mask density over actions, thresholded (drawn)",
                  "edge density over actions, thresholded (drawn)",
                  "minutes, stage 2's commands", "machine"], rows)


# The CT-VAE paper's Table 1 --------------------------------------------------------

# Per column of the paper's Table 1: the dataset ours stands in for, and the seeds
# record (`summarize --record`, one group of whole `:small` runs) of its procedural
# stand-in. Shapes3D's is the `:small` seeds table above.
TABLE1_RECORDS = {
    "cars3d": ("cars3d_synth", "ctvae_table1_cars3d_synth"),
    "shapes3d": ("shapes3d_synth", "ctvae_small_seeds_authors_activations"),
    "sprites": ("sprites_synth", "ctvae_table1_sprites_synth"),
    "dsprites": ("dsprites_synth", "ctvae_table1_dsprites_synth"),
}
TABLE1_NAMES = {"cars3d": "Cars3D", "shapes3d": "Shapes3D", "sprites": "Sprites",
                "dsprites": "dSprites"}


def _minutes_range(values: list[float]) -> str:
    low, high = min(values), max(values)
    return f"{low:.0f}" if round(low) == round(high) else f"{low:.0f}–{high:.0f}"


def ct_table1(results: Results) -> str:
    """The paper's Table 1, its four columns as rows: `:small` on each procedural
    stand-in (headline and draws, mean ± std over its seeds) beside the paper's figure
    on the real dataset, with each seed's minutes per stage; a dataset not yet run
    says so. The last row orders the datasets by factor accuracy, ours and the paper's."""
    rows, ours_factor = [], {}
    for paper_name, (synth_name, record_name) in TABLE1_RECORDS.items():
        paper = reference.CT_VAE_TABLE1[paper_name]
        paper_cell = f"{paper['accuracy'][0]:.2f} / {paper['accuracy'][1]:.2f}"
        title = f"{TABLE1_NAMES[paper_name]} (ours: {synth_name})"
        if not results.names(record_name):  # not run yet
            rows.append([title, str(paper["actions"]), paper_cell, "not run yet", "", "",
                         "", "", ""])
            continue
        record = results.record(record_name)
        pairs = _seed_runs(record)
        cts = [_ct(stage_two) for _, stage_two in pairs]
        ours_factor[paper_name] = statistics.mean(c["factor_accuracy"] for c in cts)
        stage_one = [stage_seconds(one, "mcqvae") / 60 for one, _ in pairs]
        stage_two = [stage_seconds(two, "ct") / 60 for _, two in pairs]
        psnrs = [one["results"]["mcqvae"]["test_psnr"] for one, _ in pairs]
        rows.append([
            title, str(len(cts[0]["action_names"])), paper_cell,
            f"**{mean_std([c['action_accuracy'] for c in cts])} / "
            f"{mean_std([c['factor_accuracy'] for c in cts])}**",
            f"{mean_std([c['draws']['action_accuracy']['mean'] for c in cts])} / "
            f"{mean_std([c['draws']['factor_accuracy']['mean'] for c in cts])}",
            str(len(pairs)), mean_std(psnrs, 1) + " dB",
            f"{_minutes_range(stage_one)} / {_minutes_range(stage_two)}",
            runs_machine(record)])
    paper_order = sorted(reference.CT_VAE_TABLE1,
                         key=lambda name: -reference.CT_VAE_TABLE1[name]["accuracy"][1])
    ours_order = sorted(ours_factor, key=lambda name: -ours_factor[name])
    rows.append(["datasets by factor accuracy, highest first",
                 "", " > ".join(TABLE1_NAMES[n] for n in paper_order),
                 " > ".join(TABLE1_NAMES[n] for n in ours_order)
                 + ("" if len(ours_order) == len(paper_order) else
                    f" ({len(ours_order)} of {len(paper_order)} run)"),
                 "", "", "", "", ""])
    return table(["dataset", "actions", "paper: action / factor accuracy",
                  "ours: headline (most likely), mean ± std", "ours: 8 draws, mean",
                  "seeds", "stage 1 test PSNR", "minutes a seed, stage 1 / stage 2",
                  "machine"], rows)
