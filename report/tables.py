"""The results tables of README.md and docs/, each rendered from results/ records.

Every figure a table shows is read from a record (causal_disent/runs/records.py: a
file the measuring command wrote itself) or, for the GPU runs brought back before
records existed, from the run's own files under results/<run folder>/. Reference
figures (the papers', the authors' code's) come from `reference.py`, with their source.
A table names its records in TABLES; `python -m report` renders them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable

from report import causalvae_tables, ct_tables, vae_tables
from report.formatting import (MissingRecord, Results, machine_name, minutes,
                                             record_command, table)
from causal_disent.runs import records

__all__ = ["MissingRecord", "Results", "TABLES", "render"]


# Speed, and the index of records ------------------------------------------------

LOOP_CASES = {"betavae": "β-VAE", "betavae_s8": "β-VAE, 8 stacked seeds",
              "factorvae": "FactorVAE", "mcqvae": "MCQ-VAE (stage 1)",
              "ct": "CT-VAE stage 2 (encoding each batch)",
              "ct_cache": "CT-VAE stage 2 (code cache)"}


def _loop_cells(case: dict | None) -> str:
    """Loop / bare steps/s (ratio); a case measured several times shows its median
    run and the range of the ratios; `run_steps`, where given, each run's length."""
    if case is None:
        return "–"
    spread = ""
    length = f" of {case['run_steps']} steps" if "run_steps" in case else ""
    if "repeats" in case:
        ratios = [run["ratio"] for run in case["repeats"]]
        spread = f"; {min(ratios):.2f}–{max(ratios):.2f} over {len(ratios)} runs{length}"
    elif length:
        spread = f"; one run{length}"
    return (f"{case['loop_steps_per_s']:.1f} / {case['bare_steps_per_s']:.1f} "
            f"(**{case['ratio']:.2f}**{spread})")


def _loop_table(before: dict, after: dict, before_title: str, after_title: str) -> str:
    rows = [[LOOP_CASES.get(name, name), _loop_cells(before["cases"].get(name)),
             _loop_cells(after["cases"].get(name))]
            for name in dict.fromkeys([*before["cases"], *after["cases"]])]
    return table(["case", before_title, after_title], rows)


GPU_LOOP_FOLDER = "gpu_2026-11-26_h200_loop_overhead"
# The benchmark's printed rows: case, loop/s, bare/s, ratio, then ms per step of the
# bare step and of each part of the loop.
_PRINTED_ROW = re.compile(r"^(\w+)" + r"\s+(-?[0-9.]+)" * 9 + r"\s*$")


def _printed_cases(text: str) -> dict:
    """The cases of a benchmark output whose JSON line did not come back (a command
    stopped at its time limit after printing its rows), read from the printed rows."""
    cases = {}
    for line in text.splitlines():
        row = _PRINTED_ROW.match(line)
        if row and row.group(1) in LOOP_CASES:
            loop, bare, ratio, bare_ms, *parts = map(float, row.groups()[1:])
            cases[row.group(1)] = {"loop_steps_per_s": loop, "bare_steps_per_s": bare,
                                   "ratio": ratio, "bare_ms_per_step": bare_ms,
                                   "ms_per_step": dict(zip(LOOP_PARTS, parts))}
    return cases


def _gpu_loop_runs(results: Results) -> dict[str, dict]:
    """The GPU loop measurements, the benchmark's own outputs brought back from the
    machine: k = 1 with host data (400 steps), k = 10 with device data (400 steps,
    then 1000 steps after the metrics writer's thread: β-VAE's printed row, the
    8 stacked seeds' record; then one record a case after the saves' check compiled
    with the first call; then β-VAE's record with the saves on a thread of their
    own, since undone; then one record a case with periodic saves at least 30 s
    apart)."""
    folder = results.directory / GPU_LOOP_FOLDER
    last = lambda name: json.loads((folder / name).read_text().strip().splitlines()[-1])  # noqa: E731
    stacked = results.record("loop_overhead_gpu_k10_s8")["figures"]
    later = {**_printed_cases((folder / "k10_device_data_1000_steps.txt").read_text()),
             **stacked["cases"]}
    threaded_saves = results.record("loop_overhead_gpu_k10_s1_398eddb")["figures"]
    return {"k1": last("k1_host_data.txt"), "k10": last("k10_device_data.txt"),
            "k10_1000": {**stacked, "cases": later},
            "k10_2a15770": _one_and_eight(results, "2a15770"),
            "k10_398eddb": threaded_saves, "k10_a44d96a": _one_and_eight(results, "a44d96a")}


def _one_and_eight(results: Results, commit: str) -> dict:
    """One command's two GPU records, one seed then eight stacked, as one column."""
    one, eight = (results.record(f"loop_overhead_gpu_k10_s{s}_{commit}")["figures"]
                  for s in (1, 8))
    return {**one, "steps": f"{one['steps']} / {eight['steps']}",
            "cases": {**one["cases"], **eight["cases"]}}


def loop_overhead_gpu(results: Results) -> str:
    """The same on one GPU, each column one measurement (the folders' README.md)."""
    runs = _gpu_loop_runs(results)
    names = dict.fromkeys(name for run in runs.values() for name in run["cases"])
    titles = ["k = 1, host data, 400 steps (8eb25b3)", "k = 10, device data, 400 steps (21a6fec)",
              "k = 10, device data, 1000 steps (990b16c)",
              "k = 10, device data, 2000 / 1000 steps (2a15770)",
              "k = 10, device data, 2000 steps, saves on a thread (398eddb)",
              "k = 10, device data, 2000 / 1000 steps, saves ≥ 30 s apart (a44d96a)"]
    rows = [[LOOP_CASES.get(name, name), *(_loop_cells(run["cases"].get(name))
                                           for run in runs.values())]
            # The k = 1 `ct` case encoded images and compiled modes inside the timed
            # loop (the folder's README.md): not a loop overhead.
            for name in names if name != "ct"]
    return table(["case", *(f"{title}: loop / bare steps/s (ratio)" for title in titles)], rows)


GPU_SAVES_FOLDER = "gpu_2026-11-27_h200_issue33"
SAVE_VARIANTS = {"current": "saves on a thread of their own, host ≤ 2 calls ahead (398eddb)",
                 "syncsave": "saves on the loop's thread, host ≤ 2 calls ahead",
                 "ahead": "saves on a thread of their own, host unbounded",
                 "old": "saves on the loop's thread, host unbounded (as at 2a15770)"}


def loop_overhead_gpu_saves(results: Results) -> str:
    """One-seed β-VAE on one H200 machine, one process per variant of the loop
    (that folder's ab.py): the benchmark's printed rows, read from its ab.txt."""
    text = (results.directory / GPU_SAVES_FOLDER / "ab.txt").read_text()
    rows = []
    for chunk in text.split("variant ")[1:]:
        variant, _, printed = chunk.partition("\n")
        for figures in _printed_cases(printed).values():
            parts = figures["ms_per_step"]
            rows.append([SAVE_VARIANTS[variant.strip()], _loop_cells(figures),
                         f"{parts['saves']:.2f}", f"{parts['rest']:.2f}"])
    return table(["loop", "loop / bare steps/s (ratio)", "saves, ms per step",
                  "rest, ms per step"], rows)


# benchmarks/metric_writing.py on 2 CPU cores: the library before the writers changed
# (rows handed over as numpy values, TensorBoard through SummaryWriter), and after.
METRIC_WRITING_RECORDS = {"9e2e015": "metric_writing_cpu_9e2e015", "now": "metric_writing_cpu"}
WRITER_SETTINGS = {"none": "nothing written", "jsonl": "metrics.jsonl",
                   "jsonl+tensorboard": "metrics.jsonl and TensorBoard (the loop's)"}


def metric_writing(results: Results) -> str:
    """What writing the rows costs the emulated loop's thread, before and after."""
    figures = {label: results.record(name)["figures"]
               for label, name in METRIC_WRITING_RECORDS.items()}

    def cell(run: dict, setting: str) -> str:
        over = run["loop_ms_per_call"][setting] - run["device_ms"]
        return f"{over:.2f}"

    rows = [[title, *(cell(run, setting) for run in figures.values())]
            for setting, title in WRITER_SETTINGS.items()]
    rows.append(["100 rows written alone, ms: metrics.jsonl / TensorBoard",
                 *(f"{run['alone_ms']['jsonl']:.1f} / {run['alone_ms']['tensorboard']:.1f}"
                   for run in figures.values())])
    return table(["writers", *(f"{label}: ms a call over the device's {run['device_ms']:g}"
                               for label, run in figures.items())], rows)


FIRST_STATE_CASES = {"betavae": "β-VAE", "betavae_s8": "β-VAE, 8 stacked seeds",
                     "factorvae": "FactorVAE", "laddervae": "LadderVAE",
                     "ctvae": "CT-VAE", "causalvae": "CausalVAE (Pendulum)"}


def first_state_compilation(results: Results) -> str:
    """Compiling each stage's first state with XLA's defaults and with the options
    the run uses (benchmarks/first_state_compilation.py, 2 CPU cores)."""
    record = results.record("first_state_compilation_cpu")
    options = ", ".join(f"{name} = {value}" for name, value in record["figures"]["options"].items())
    rows = [[FIRST_STATE_CASES.get(row["case"], row["case"]), row["stage"],
             f"{row['parameters']:,}",
             " → ".join(f"{seconds:.1f}" for seconds in row["compile_seconds"]),
             " → ".join(f"{ms:.0f}" for ms in row["run_ms"]),
             "same" if row["bitwise_same"] else "**different**"]
            for row in record["figures"]["first_states"]]
    return table(["config `:small`", "stage", "parameters", f"compile s: default → {options}",
                  "run ms", "bits"], rows)


# CPU records of the loop benchmark, each column's in the order a later one's case
# replaces an earlier one's: every case at k = 1 and k = 4; then, at k = 1, CT-VAE stage
# 2 on its code cache and eight stacked β-VAE seeds, stage 2 again as the median of
# five runs, and as the median of three runs of 1000 steps (its checkpoint cadence's
# share of a run); at k = 4, stage 2 (device data), β-VAE and MCQ-VAE as medians of
# five runs.
CPU_LOOP_COLUMNS = {
    "k = 1: loop / bare steps/s (ratio)": (
        "loop_overhead_cpu_k1", "loop_overhead_cpu_k1_ct_cache_s8",
        "loop_overhead_cpu_k1_ct_cache_repeats", "loop_overhead_cpu_k1_ct_cache_1000"),
    "k = 4: loop / bare steps/s (ratio)": (
        "loop_overhead_cpu_k4", "loop_overhead_cpu_k4_ct_cache",
        "loop_overhead_cpu_k4_repeats"),
}
CPU_LOOP_RECORDS = tuple(name for names in CPU_LOOP_COLUMNS.values() for name in names)


def loop_overhead_cpu(results: Results) -> str:
    """Whole loop against the bare step on 2 CPU cores, one step a call and four."""
    def column(names: tuple[str, ...]) -> dict:
        cases = {}
        for name in names:
            figures = results.record(name)["figures"]
            for case, measured in figures["cases"].items():
                cases[case] = {**measured, "run_steps": figures["steps"]}
        return {"cases": cases}

    one, four = (column(names) for names in CPU_LOOP_COLUMNS.values())
    return _loop_table(one, four, *CPU_LOOP_COLUMNS)


LOOP_PARTS = ("data", "step call", "rows", "saves", "rest")


def loop_overhead_parts(results: Results) -> str:
    """Where the loop's time goes, ms per step, for each measured machine and k."""
    gpu_runs = _gpu_loop_runs(results)
    cpu = [results.record(name) for name in CPU_LOOP_RECORDS]
    measured = [(f"1 {gpu['device']}, k = {gpu['steps_per_call']}, device data, "
                 f"{gpu['steps']} steps ({commit})", gpu)
                for commit, gpu in (("21a6fec", gpu_runs["k10"]),
                                    ("990b16c", gpu_runs["k10_1000"]),
                                    ("2a15770", gpu_runs["k10_2a15770"]),
                                    ("398eddb", gpu_runs["k10_398eddb"]),
                                    ("a44d96a", gpu_runs["k10_a44d96a"]))] + [
        (_cpu_loop_title(record), record["figures"]) for record in cpu]
    rows = [[title, LOOP_CASES.get(case, case), f"{figures['bare_ms_per_step']:.1f}",
             *(f"{figures['ms_per_step'][part]:.2f}" for part in LOOP_PARTS)]
            for title, record in measured for case, figures in record["cases"].items()]
    return table(["machine, steps a call", "case", "bare step", *LOOP_PARTS], rows)


# benchmarks/loop_overhead.py as it is now: every figure read off a jax.profiler trace
# of an unwrapped run, at one step a call and at four.
TRACED_LOOP_RECORDS = ("loop_overhead_trace_cpu_k1", "loop_overhead_trace_cpu_k1_ct",
                       "loop_overhead_trace_cpu_k4")
TRACED_LOOP_PARTS = ("data", "step call", "device wait", "rows", "saves", "rest")


def loop_overhead_traced(results: Results) -> str:
    """The loop's rate, how busy it kept the machine and where its time went, each
    read off a trace of the run (2 CPU cores)."""
    rows = []
    for name in TRACED_LOOP_RECORDS:
        figures = results.record(name)["figures"]
        for case, measured in figures["cases"].items():
            parts = measured["ms_per_step"]
            rows.append([LOOP_CASES.get(case, case), str(figures["steps_per_call"]),
                         f"{measured['loop_steps_per_s']:.2f}",
                         f"{measured['device_busy_share']:.3f}",
                         f"{measured['host_in_step_share']:.3f}",
                         f"{measured['loop_ms_per_step']:.1f}",
                         *(f"{parts[part]:.2f}" for part in TRACED_LOOP_PARTS)])
    return table(["case", "k", "loop steps/s", "device busy", "host in step",
                  "ms a step", *(f"{part}, ms" for part in TRACED_LOOP_PARTS)], rows)


def _cpu_loop_title(record: dict) -> str:
    figures = record["figures"]
    title = (f"{machine_name(record['machine'])}, k = {figures['steps_per_call']}, "
             f"{figures['steps']} steps")
    if figures.get("device_data") == "on":
        title += ", device data"
    if figures.get("repeats", 1) > 1:
        title += f", median of {figures['repeats']} runs"
    return title


def _count(value: int | None) -> str:
    return "–" if value is None else f"{value:,}"


def data_throughput(results: Results) -> str:
    """The input pipeline against what the `:small` train steps consume
    (benchmarks/data_throughput.py): renders per second, and each pipeline's rate with
    its headroom over the step's consumption."""
    figures = results.record("data_throughput_cpu")["figures"]
    rows = [[name, f"{row['images_per_s_batch64']:,}", f"{row['images_per_s_batch1024']:,}",
             f"{row['pairs_per_s']:,}",
             f"{row['stage1_pipeline_images_per_s']:,} ({row['stage1_headroom']}×)",
             _count(row["grain_stage1_pipeline_images_per_s"]),
             f"{row['stage2_pipeline_pairs_per_s']:,} ({row['stage2_headroom']}×)"]
            for name, row in figures.items() if name != "environment"]
    return table(["dataset", "images/s, batch 64", "batch 1024", "pairs/s",
                  "stage-1 pipeline, images/s (headroom)",
                  "the same with grain (– not installed)",
                  "stage-2 pipeline, pairs/s (headroom)"], rows)


def records_index(results: Results) -> str:
    """Every record in results/: what wrote it, where and when."""
    rows = []
    for name, record in records.read_all(results.directory).items():
        rows.append([f"[{name}.json](../results/{name}.json)", record_command(record),
                     (record["commit"] or "–")[:12] + ("+dirty" if "dirty" in
                                                        (record["commit"] or "") else ""),
                     machine_name(record["machine"]), record["date"],
                     minutes(record["wall_seconds"])])
    return table(["record", "command", "commit", "machine", "date", "the command's minutes"],
                 rows)


def factor_imbalance(results: Results) -> str:
    """Each factor's share of the transition pairs per dataset, the paper's Figure 4
    (benchmarks/factor_imbalance.py): in the authors' draw, among the distinct pairs
    of the training split, and in balanced batches."""
    rows = []
    for entry in results.record("factor_imbalance")["figures"]["datasets"]:
        for factor in entry["factors"]:
            rows.append([entry["dataset"], f"{factor['name']} ({factor['size']})",
                         f"{factor['authors_share']:.3f}", f"{factor['grid_pairs']:,}",
                         f"{factor['grid_share']:.3f}", f"{factor['balanced_share']:.3f}"])
    return table(["dataset", "factor (values)", "authors' pairs: share",
                  "distinct train pairs", "their share", "balanced batches: share"], rows)


# The front page ------------------------------------------------------------------

def headline(results: Results) -> str:
    """The README's first table: each headline figure against the paper's."""
    rows = [*ct_tables.headline_accuracy_rows(results),
            causalvae_tables.headline_row(results),
            ct_tables.headline_step_row(results)]
    return table(["figure", "causal_disent", "paper / reference", "machine, time"], rows)


TABLES: dict[str, Callable[[Results], str]] = {
    "headline": headline,
    "ct_small_seeds": ct_tables.ct_small_seeds,
    "ct_small_seeds_authors_activations": ct_tables.ct_small_seeds_authors_activations,
    "ct_small_seeds_previous": ct_tables.ct_small_seeds_previous,
    "ct_small_run": ct_tables.ct_small_run,
    "ct_small_tried": ct_tables.ct_small_tried,
    "ct_graph_ablation": ct_tables.ct_graph_ablation,
    "ct_width_probes": ct_tables.ct_width_probes,
    "ct_width_runs": ct_tables.ct_width_runs,
    "ct_gpu": ct_tables.ct_gpu,
    "ct_pair_mix": ct_tables.ct_pair_mix,
    "ct_action_mix_seeds": ct_tables.ct_action_mix_seeds,
    "ct_step_time": ct_tables.ct_step_time,
    "ct_table1": ct_tables.ct_table1,
    "factor_imbalance": factor_imbalance,
    "mcqvae_step_time": ct_tables.mcqvae_step_time,
    "consistency_shapes3d": vae_tables.consistency_shapes3d,
    "consistency_xvae_sampling": lambda results: vae_tables.consistency_shapes3d(
        results, "consistency_xvae_sampling_shapes3d_small",
        "consistency_scorings_xvae_sampling_shapes3d_small"),
    "consistency_xblock_init": lambda results: vae_tables.consistency_shapes3d(
        results, "consistency_xblock_init_shapes3d_small",
        "consistency_scorings_xblock_init_shapes3d_small"),
    "consistency_xvae_xblock_init": lambda results: vae_tables.consistency_shapes3d(
        results, "consistency_xvae_xblock_init_shapes3d_small",
        "consistency_scorings_xvae_xblock_init_shapes3d_small",
        ("consistency_xvae_ci_means_xblock_init_shapes3d_small",
         "consistency_scorings_xvae_ci_means_xblock_init_shapes3d_small")),
    "metric_card_bounds": vae_tables.metric_card_bounds,
    "metric_card_time": vae_tables.metric_card_time,
    "zoo_dsprites_synth_small": lambda results: vae_tables.zoo_small(results, "dsprites_synth"),
    "pair_learners": vae_tables.pair_learners,
    "zoo_infomec": vae_tables.zoo_infomec,
    "ivae_identifiability": vae_tables.ivae_identifiability,
    "ivae_network": vae_tables.ivae_network,
    "ivae_setup": vae_tables.ivae_setup,
    "ivae_data_parts": vae_tables.ivae_data_parts,
    "ivae_scoring": vae_tables.ivae_scoring,
    "ladder_layer_kl": vae_tables.ladder_layer_kl,
    "annealed_choices": vae_tables.annealed_choices,
    "tiny_run_fingerprints": vae_tables.tiny_run_fingerprints,
    "seed_stacking_cpu": vae_tables.seed_stacking_cpu,
    "causalvae_small": causalvae_tables.causalvae_small,
    "causalvae_seeds": causalvae_tables.causalvae_seeds,
    "causalvae_counterfactuals": causalvae_tables.causalvae_counterfactuals,
    "causalvae_lu_rank": causalvae_tables.causalvae_lu_rank,
    "causalvae_pc_tests": causalvae_tables.causalvae_pc_tests,
    "causalvae_pc_result": causalvae_tables.causalvae_pc_result,
    "records_index": records_index,
    "data_throughput": data_throughput,
    "loop_overhead_gpu": loop_overhead_gpu,
    "loop_overhead_gpu_saves": loop_overhead_gpu_saves,
    "loop_overhead_cpu": loop_overhead_cpu,
    "loop_overhead_parts": loop_overhead_parts,
    "loop_overhead_traced": loop_overhead_traced,
    "metric_writing": metric_writing,
    "first_state_compilation": first_state_compilation,
    # The first state compiled at -O1 on CPUs (0274336) and the shared scorers (3e4d8bf).
    "first_state_fingerprints": lambda results: vae_tables.fingerprints_compared(
        results, "7e9599a", "89efba4"),
}


def render(name: str, results: Results) -> str:
    if name not in TABLES:
        raise KeyError(f"no table named {name!r}; known: {', '.join(TABLES)}")
    return TABLES[name](results)
