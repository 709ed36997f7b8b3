"""The VAE family's tables: the consistency autoencoders, the zoo's cards, AnnealedVAE's
network choices, the metric card's bounds and its cost, the iVAE's identifiability,
many seeds in one compiled step, and the tiny-run fingerprints across the change to
the references' defaults."""

from __future__ import annotations

from report.formatting import (Results, fixed, machine_name, mean_std, minutes,
                               runs_machine, stage_seconds, table)
from causal_disent.runs.records import RecordError


def consistency_shapes3d(results: Results, summary_record: str = "consistency_shapes3d_small",
                         scorings_record: str = "consistency_scorings_shapes3d_small",
                         *more: tuple[str, str]) -> str:
    """INV / EQV / SCN under both normalisations, with each model's test BCE: the groups
    of `summary_record` (causal_disent.summarize) scored by `scorings_record`
    (benchmarks/consistency_scorings.py), then those of each further (summary,
    scorings) pair in `more`, so that runs recorded apart can stand in one table."""
    rows = []
    for summary_name, scorings_name in ((summary_record, scorings_record), *more):
        rows += _consistency_rows(results, summary_name, scorings_name)
    return table(["model", "seeds", "test BCE", "INV off-diag., authors' / unit-free",
                  "INV diagonal", "EQV mean", "SCN mean", "CPU minutes (all seeds)"], rows)


def _consistency_rows(results: Results, summary_record: str,
                      scorings_record: str) -> list[list[str]]:
    summary = results.record(summary_record)["figures"]["groups"]
    scorings = results.record(scorings_record)
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
        seconds = {run["history"].get("stacked_run", run["path"]): stage_seconds(run, "vae")
                   for run in group["runs"]}
        cells.append(minutes(sum(s for s in seconds.values() if s is not None)))
        rows.append(cells)
    return rows


CARD_BOUNDS = (("identity", "ceiling"), ("random", "floor"))


def _card_bounds(results: Results, dataset: str) -> list[tuple[str, dict[str, float]]]:
    """("identity (ceiling)", headline scores), then the random projection's (the
    floor): the cards of the ground-truth factors and of a random projection of them."""
    from causal_disent.evaluation.card import headline_scores

    return [(f"{model} ({title})",
             headline_scores(results.record(f"metric_card_{model}_{dataset}")["figures"]
                             ["representations"][model]))
            for model, title in CARD_BOUNDS]


def metric_card_bounds(results: Results) -> str:
    """Every metric's headline score for the ground-truth factors (the ceiling) and a
    random projection of them (the floor) on dsprites_synth."""
    from causal_disent.evaluation.card_summary import COLUMN_TITLES

    bounds = _card_bounds(results, "dsprites_synth")
    columns = list(bounds[0][1])
    rows = [[label] + [fixed(scores[column]) for column in columns] for label, scores in bounds]
    return table(["representation"] + [COLUMN_TITLES.get(c, c) for c in columns], rows)


# The VAE zoo ------------------------------------------------------------------------

ZOO_SCORES = ("mig.discrete_mig", "sap.sap_score",
              ("dci.disentanglement", "dci.completeness", "dci.informativeness_test"),
              "betavae.eval_accuracy", "factorvae.eval_accuracy",
              "modularity_explicitness.modularity_score")


def _zoo_cell(summary: dict, columns) -> str:
    """mean ± sample std of one score (or "a / b / c" of several) over a group's seeds."""
    if isinstance(columns, tuple):
        return " / ".join(_zoo_cell(summary, column) for column in columns)
    mean, spread, count = summary[columns]
    return fixed(mean) if count == 1 else f"{fixed(mean)} ± {fixed(spread)}"


def _zoo_bounds(results: Results, dataset: str) -> list[list[str]]:
    """The card's ceiling and floor as zoo rows."""
    rows = []
    for label, scores in _card_bounds(results, dataset):
        summary = {column: (value, 0.0, 1) for column, value in scores.items()}
        rows.append([label, "–"] + [_zoo_cell(summary, columns) for columns in ZOO_SCORES]
                    + ["–", "–"])
    return rows


# Later records' order in the table: disentanglement_lib's study order, LadderVAE and
# iVAE last.
ZOO_RECORD_ORDER = ("betatcvae", "annealedvae", "dipvae1", "dipvae2", "laddervae", "ivae")


def _zoo_record_rank(path) -> tuple[int, str]:
    suffix = path.stem.rsplit("_", 1)[-1]
    known = suffix in ZOO_RECORD_ORDER
    return (ZOO_RECORD_ORDER.index(suffix) if known else len(ZOO_RECORD_ORDER)), path.stem


def _zoo_groups(results: Results, dataset: str) -> dict[str, dict]:
    """The summarised models on `dataset`: the groups of zoo_<dataset>_small.json, then
    those of zoo_<dataset>_small_<name>.json (a later summary of models whose runs
    finished on another machine, where the first record's workdirs no longer were)."""
    return _summarised_groups(results, f"zoo_{dataset}_small")


def _summarised_groups(results: Results, name: str) -> dict[str, dict]:
    """The groups of the summarize record `name`, then those of each `name`_<more>
    record; a group summarised in two of them is refused."""
    groups = dict(results.record(name)["figures"]["groups"])
    for path in sorted(results.directory.glob(f"{name}_*.json"), key=_zoo_record_rank):
        more = results.record(path.stem)["figures"]["groups"]
        repeated = sorted(set(groups) & set(more))
        if repeated:
            raise RecordError(f"{path.name} summarises {', '.join(repeated)} again; "
                              f"keep one record per model")
        groups.update(more)
    return groups


# Models whose prior is learnt, not N(0, I): their `test_kl` (always to N(0, I)) is
# not the KL their loss weighs.
LEARNT_PRIOR_OBJECTIVES = ("ladder_vae", "ivae")


def _zoo_test_kl(runs: list[dict]) -> str:
    """KL to the N(0, I) prior on test images, mean ± sample std over seeds; "–" for
    the models with a learnt prior (the LadderVAE's per-layer KL has a table of its
    own)."""
    if any(run["results"]["vae"]["objective"]["name"] in LEARNT_PRIOR_OBJECTIVES
           for run in runs):
        return "–"
    return mean_std([run["results"]["vae"]["test_kl"] for run in runs], 1)


def zoo_small(results: Results, dataset: str) -> str:
    """The VAE family's `:small` cards on `dataset`: a row per model, mean ± sample std
    over the seeds of one stacked run. No minutes: these runs shared the cores with
    other work, two models at a time."""
    rows = _zoo_bounds(results, dataset)
    for label, group in _zoo_groups(results, dataset).items():
        summary, runs = group["summary"], group["runs"]
        rows.append([label, str(len(runs))] + [_zoo_cell(summary, c) for c in ZOO_SCORES]
                    + [mean_std([run["scores"]["test_bce"] for run in runs], 1),
                       _zoo_test_kl(runs)])
    return table(["model", "seeds", "MIG", "SAP", "DCI dis. / compl. / inform.", "BetaVAE",
                  "FactorVAE", "modularity", "test BCE", "test KL"], rows)


def ladder_layer_kl(results: Results) -> str:
    """Each seed's KL to each layer's prior on test images (benchmarks/ladder_layer_kl.py):
    a collapsed layer would show as about 0 nats."""
    figures = results.record("ladder_layer_kl_dsprites_synth_small")["figures"]
    runs = sorted(figures["runs"], key=lambda run: run["seed"])
    layers = len(runs[0]["kl_per_layer"])
    rows = [[str(run["seed"])] + [f"{kl:.1f}" for kl in run["kl_per_layer"]] for run in runs]
    subscripts = str.maketrans("0123456789", "₀₁₂₃₄₅₆₇₈₉")
    return table(["seed"] + [f"KL of z{str(index + 1).translate(subscripts)}, nats"
                             for index in range(layers)], rows)


# AnnealedVAE's network choices -----------------------------------------------------

# Seed 0 with one of the two network choices back at its earlier value at a time: which
# change keeps the decoder on its plateau (row: record, kernels, initialiser).
ANNEALED_CHOICES = (
    (None, "study kernels (4, 4, 2, 2)", "Glorot uniform"),
    ("annealedvae_dsprites_synth_small_lecun_normal", "study kernels (4, 4, 2, 2)",
     "LeCun normal"),
    ("annealedvae_dsprites_synth_small_kernels4", "4×4 throughout", "Glorot uniform"),
)


def annealed_choices(results: Results) -> str:
    """Seed 0's test BCE and KL with today's defaults (from the zoo's record) and with
    either choice put back alone (a `main --record` each)."""
    rows = []
    for name, kernels, init in ANNEALED_CHOICES:
        if name is None:
            group = next(iter(results.record("zoo_dsprites_synth_small_annealedvae")
                              ["figures"]["groups"].values()))
            run = next(run for run in group["runs"] if run["seed"] == 0)
            vae = run["results"]["vae"]
        else:
            vae = results.record(name)["figures"]["vae"]
        rows.append([kernels, init, f"{vae['test_bce']:.1f}", f"{vae['test_kl']:.1f}"])
    return table(["encoder kernels", "initialiser", "test BCE", "test KL"], rows)


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


# iVAE identifiability -----------------------------------------------------------------

IVAE_ROWS = {"ivae": "iVAE (encoder q(z \\| x, u))",
             "vae": "VAE (same network, q(z \\| x), prior N(0, I))",
             "rotation": "the true sources, randomly rotated"}


# (record, row name, title): the benchmark with the authors' prior N(0, diag λ(u))
# (the default), the same command earlier, with the learned-mean prior, then the
# default record's VAE and rotation rows.
IVAE_DEFAULT_PRIOR_RECORD = "ivae_identifiability_zero_mean_prior"
IVAE_TABLE_ROWS = (
    (IVAE_DEFAULT_PRIOR_RECORD, "ivae", f"{IVAE_ROWS['ivae']}, prior N(0, diag λ(u))"),
    ("ivae_identifiability", "ivae", f"{IVAE_ROWS['ivae']}, earlier prior N(μ(u), diag λ(u))"),
    (IVAE_DEFAULT_PRIOR_RECORD, "vae", IVAE_ROWS["vae"]),
    (IVAE_DEFAULT_PRIOR_RECORD, "rotation", IVAE_ROWS["rotation"]))


def ivae_identifiability(results: Results) -> str:
    """MCC of encoder means against the true sources over seeds
    (benchmarks/ivae_identifiability.py; std over the seeds, not the sample std)."""
    rows = []
    for record, name, title in IVAE_TABLE_ROWS:
        scores = results.record(record)["figures"]["summary"][name]
        rows.append([title, f"{fixed(scores['mcc_mean'])} ± {fixed(scores['mcc_std'])}",
                     f"{fixed(scores['mcc_min'])} – {fixed(scores['mcc_max'])}"])
    return table(["model", "MCC (mean ± std)", "min – max"], rows)


# (record, network, decoder variance): the benchmark's network against the iVAE authors'
# cleanIVAE network (benchmarks/ivae_identifiability.py flags), at their decoder variance
# and at ours.
IVAE_NETWORK_ROWS = (
    (IVAE_DEFAULT_PRIOR_RECORD, "ours: one encoder MLP to mean and log-variance, 3 hidden "
     "layers of 50, leaky ReLU 0.1, Flax's initialisation", "0.003"),
    ("ivae_identifiability_authors_network", "the authors' cleanIVAE: separate g and logv "
     "MLPs, 2 hidden layers of 50, xtanh, PyTorch's initialisation", "0.1 (theirs)"),
    ("ivae_identifiability_authors_network_variance_0003", "the authors' cleanIVAE",
     "0.003"))


def _mcc_cells(figures: dict, names=("ivae", "vae")) -> list[str]:
    """Each model's MCC, mean ± std over the seeds (each seed's)."""
    cells = []
    for name in names:
        scores = figures["summary"][name]
        seeds = " / ".join(fixed(trial[name]["mcc"]) for trial in figures["trials"])
        cells.append(f"{fixed(scores['mcc_mean'])} ± {fixed(scores['mcc_std'])} ({seeds})")
    return cells


def ivae_network(results: Results) -> str:
    """iVAE and VAE MCC (mean ± std over the seeds, each seed's) with each network."""
    rows = [[network, variance, *_mcc_cells(results.record(record)["figures"])]
            for record, network, variance in IVAE_NETWORK_ROWS]
    return table(["network", "decoder variance", "iVAE MCC (seeds 0 / 1 / 2)",
                  "VAE MCC (seeds 0 / 1 / 2)"], rows)


# record -> (data, network and training): each half ours or the iVAE authors'.
IVAE_SETUP_ROWS = (
    (IVAE_DEFAULT_PRIOR_RECORD, "ours", "ours"),
    ("ivae_identifiability_authors_training", "ours", "the authors'"),
    ("ivae_identifiability_authors_data", "the authors'", "ours"),
    ("ivae_identifiability_authors_setup", "the authors'", "the authors'"))


# record -> how the authors' data was changed (their network and training throughout).
IVAE_DATA_PART_ROWS = (
    ("ivae_identifiability_authors_setup", "none: one U(−1, 1) matrix repeated, xtanh"),
    ("ivae_identifiability_authors_setup_three_matrices", "three matrices, one a layer"),
    ("ivae_identifiability_authors_setup_leaky_relu", "leaky ReLU 0.2 for xtanh"),
    ("ivae_identifiability_authors_setup_orthogonal", "an orthogonal matrix for the U(−1, 1) one"))


def ivae_data_parts(results: Results) -> str:
    """iVAE, VAE and rotated-sources MCC on the authors' data with one part changed."""
    rows = [[change, *_mcc_cells(results.record(record)["figures"],
                                 ("ivae", "vae", "rotation"))]
            for record, change in IVAE_DATA_PART_ROWS]
    return table(["the authors' data, changed", "iVAE MCC (seeds 0 / 1 / 2)",
                  "VAE MCC (seeds 0 / 1 / 2)", "sources randomly rotated"], rows)


# record -> setting: the same trained models scored by their encoder means and by one
# draw of q(z | x, u) a point (what the authors' runner scores).
IVAE_SCORING_ROWS = (
    ("ivae_identifiability_zero_mean_prior_sampled", "ours (data, network, training)"),
    ("ivae_identifiability_authors_setup_sampled", "the authors' (data, network, training)"),
    ("ivae_identifiability_authors_setup_orthogonal_sampled",
     "the authors', with an orthogonal matrix"))


def ivae_scoring(results: Results) -> str:
    """iVAE and VAE MCC of encoder means and of posterior samples, per setting."""
    rows = []
    for record, setting in IVAE_SCORING_ROWS:
        figures = results.record(record)["figures"]
        cells = []
        for name in ("ivae", "vae"):
            summary = figures["summary"][name]
            for key in ("mcc", "mcc_of_samples"):  # the benchmark's std: over the seeds
                seeds = " / ".join(fixed(trial[name][key]) for trial in figures["trials"])
                cells.append(f"{fixed(summary[key + '_mean'])} ± "
                             f"{fixed(summary[key + '_std'])} ({seeds})")
        rows.append([setting, *cells])
    return table(["setting", "iVAE, means", "iVAE, one sample a point", "VAE, means",
                  "VAE, one sample a point"], rows)


def ivae_setup(results: Results) -> str:
    """iVAE, VAE and rotated-sources MCC with our or the authors' data, and our or the
    authors' network and training."""
    rows = [[data, training, *_mcc_cells(results.record(record)["figures"],
                                         ("ivae", "vae", "rotation"))]
            for record, data, training in IVAE_SETUP_ROWS]
    return table(["data", "network and training", "iVAE MCC (seeds 0 / 1 / 2)",
                  "VAE MCC (seeds 0 / 1 / 2)", "sources randomly rotated"], rows)


# Tiny-run fingerprints across the reference defaults -------------------------------

# The commit before the references' defaults, the commit that made them, and a later
# one: benchmarks/tiny_run_fingerprints.py on a checkout of each.
FINGERPRINTS = {"b0a1f9b": "before", "842a429": "the change", "4341aca": "later"}


SEED_STACKING_CPU = {"seed_stacking_cpu_unroll": "unroll (CPU's auto)",
                     "seed_stacking_cpu_vmap": "vmap",
                     "seed_stacking_cpu_vmap_matmul": "vmap_matmul"}


def seed_stacking_cpu(results: Results) -> str:
    """benchmarks/seed_stacking.py on the CPU, one record per execution: the step at
    S = 1 and S = seeds (time and compiled temporaries), and the runs' wall time it
    projects, compile included."""
    rows = []
    for name, title in SEED_STACKING_CPU.items():
        figures = results.record(name)["figures"]
        sequential, stacked = figures["sequential_s"], figures["stacked_s"]
        gain = (f"{sequential / stacked:.2f}× less wall time" if sequential >= stacked
                else f"{stacked / sequential:.1f}× more")
        rows.append([title, f"{1e3 * figures['single']['step_s']:.0f} ms",
                     f"{1e3 * figures['stacked']['step_s']:.0f} ms",
                     _temporaries(figures["single"]), _temporaries(figures["stacked"]),
                     f"{sequential:.0f} s / {stacked:.0f} s: {gain}"])
    seeds = results.record(next(iter(SEED_STACKING_CPU)))["figures"]["seeds"]
    return table(["execution", "per step, S = 1", f"per step, S = {seeds}",
                  "temporaries, S = 1", f"temporaries, S = {seeds}",
                  f"{seeds} seeds: sequential / stacked"], rows)


def _temporaries(step: dict) -> str:
    """A compiled step's temporary memory, "–" in a record made before it was kept."""
    return "–" if step.get("temp_mb") is None else f"{step['temp_mb']:.0f} MB"


def _hash_chain(hashes: list[str]) -> str:
    """"a → same → b": each hash's last 8 digits, "same" where it equals the one before."""
    cells = [hashes[0][-8:]]
    cells += ["same" if new == old else f"**{new[-8:]}**" for old, new in zip(hashes, hashes[1:])]
    return " → ".join(cells)


def fingerprints_compared(results: Results, before: str, after: str) -> str:
    """How many configs' `:tiny` runs kept their results hash and every stage's
    parameter hash between the fingerprint records of commits `before` and `after`."""
    first, second = (results.record(f"tiny_run_fingerprints_{commit}")["figures"]["configs"]
                     for commit in (before, after))
    configs = sorted(set(first) | set(second))
    ran = [name for name in configs if name in first and name in second
           and "failed" not in first[name] and "failed" not in second[name]]
    same_results = [name for name in ran if first[name]["results"] == second[name]["results"]]
    same_params = [name for name in ran if first[name]["params"] == second[name]["params"]]
    moved = sorted(set(ran) - set(same_results) | set(ran) - set(same_params))
    return table(["configs `:tiny`", "ran at both", "results hash the same",
                  "every stage's parameters the same", "moved"],
                 [[str(len(configs)), str(len(ran)), str(len(same_results)),
                   str(len(same_params)), ", ".join(moved) or "none"]])


def tiny_run_fingerprints(results: Results) -> str:
    """Each config's `:tiny` results and final parameters, hashed at each commit."""
    prints = [results.record(f"tiny_run_fingerprints_{commit}")["figures"]["configs"]
              for commit in FINGERPRINTS]
    rows = []
    for config in prints[0]:
        runs = [found[config] for found in prints]
        failed = [run["failed"] for run in runs if "failed" in run]
        if failed:
            rows.append([config, f"failed: {failed[0]}", ""])
            continue
        stages = "; ".join(f"{stage} {_hash_chain([run['params'][stage] for run in runs])}"
                           for stage in runs[0]["params"])
        rows.append([config, _hash_chain([run["results"] for run in runs]), stages])
    span = " → ".join(f"{title} ({commit})" for commit, title in FINGERPRINTS.items())
    return table(["config `:tiny`", f"results hash: {span}", "final parameters' hash"], rows)


# The pair learners' table: (row label, record) per single-image model, each a stacked
# `:small` run on shapes3d_synth with `vae.retrieval` (evaluation/pair_retrieval.py).
PAIR_LEARNER_RECORDS = (
    ("Ada-GVAE (pairs: CT-VAE's transitions)", "pairs_adagvae_shapes3d_small"),
    ("Ada-ML-VAE (pairs: CT-VAE's transitions)", "pairs_adamlvae_shapes3d_small"),
    ("β-VAE (single images)", "pairs_betavae_probe_shapes3d_small"),
)
CT_SMALL_SEEDS_RECORD = "ctvae_small_seeds_authors_activations"


def _over_seeds_cell(over_seeds: dict, readout: str) -> str:
    """"action / factor accuracy" of `readout`, mean ± sample std over the seeds."""
    cells = []
    for name in ("action", "factor"):
        scores = over_seeds[f"action_retrieval.{readout}.{name}_accuracy"]
        cells.append(mean_std(scores["values"]))
    return " / ".join(cells)


PAIR_LEARNER_CARDS_RECORD = "pairs_cards_shapes3d_small"
INFOMEC_SCORES = ("infomec.infom", "infomec.infoe", "infomec.infoc")


def pair_learners(results: Results) -> str:
    """Action retrieval on shapes3d_synth's test transitions: CT-VAE's transition layer
    against readouts of single-image models' change of representation (the linear
    probe and the changed-latent vote), each over its records' seeds, with chance; and
    each single-image model's InfoM / InfoE / InfoC over the same seeds' cards."""
    cards = results.record(PAIR_LEARNER_CARDS_RECORD)["figures"]["groups"]
    ct = results.record(CT_SMALL_SEEDS_RECORD)
    (group,) = ct["figures"]["groups"].values()
    ct_runs = group["runs"]
    rows = [["CT-VAE `:small` (transition layer, headline)", str(len(ct_runs)),
             " / ".join(mean_std([run["scores"][f"ct.{name}_accuracy"] for run in ct_runs])
                        for name in ("action", "factor")), "–", "–", "–",
             runs_machine(ct)]]
    chance = None
    for label, name in PAIR_LEARNER_RECORDS:
        record = results.record(name)
        vae = record["figures"]["vae"]
        over_seeds = vae["over_seeds"]
        chance = (over_seeds["action_retrieval.linear_probe.action_chance"]["mean"],
                  over_seeds["action_retrieval.linear_probe.factor_chance"]["mean"])
        rows.append([label, str(vae["num_seeds"]), _over_seeds_cell(over_seeds, "linear_probe"),
                     _over_seeds_cell(over_seeds, "changed_latent"),
                     _zoo_cell(cards[label]["summary"], INFOMEC_SCORES),
                     mean_std(over_seeds["test_bce"]["values"], 1),
                     machine_name(record["machine"])])
    if chance is not None:
        rows.append(["chance", "–", f"{fixed(chance[0])} / {fixed(chance[1])}",
                     f"{fixed(chance[0])} / {fixed(chance[1])}", "–", "–", "–"])
    return table(["model", "seeds", "action / factor accuracy (CT-VAE: its own; others: "
                  "linear probe)", "changed-latent vote", "InfoM / InfoE / InfoC",
                  "test BCE", "machine"], rows)


ZOO_INFOMEC_RECORD = "infomec_zoo_dsprites_synth_small"


def zoo_infomec(results: Results) -> str:
    """InfoM / InfoE / InfoC of zoo models on dsprites_synth, over the seeds of a
    retrained stacked run, beside the MIG of those runs and of the zoo's record (equal
    when the retrained models are the recorded ones) and the record's DCI; in the zoo
    table's order."""
    zoo = _zoo_groups(results, "dsprites_synth")
    carded = _summarised_groups(results, ZOO_INFOMEC_RECORD)
    unknown = sorted(set(carded) - set(zoo))
    if unknown:
        raise RecordError(f"{ZOO_INFOMEC_RECORD}*.json summarise {', '.join(unknown)}, "
                          f"which no zoo_dsprites_synth_small*.json record has: label each "
                          f"group as the zoo's record does")
    rows = []
    for label, group in ((label, carded[label]) for label in zoo if label in carded):
        summary = group["summary"]
        recorded = zoo[label]["summary"]
        rows.append([label, str(len(group["runs"])), _zoo_cell(summary, INFOMEC_SCORES),
                     _zoo_cell(summary, "mig.discrete_mig"),
                     _zoo_cell(recorded, "mig.discrete_mig"),
                     _zoo_cell(recorded, ("dci.disentanglement", "dci.completeness",
                                          "dci.informativeness_test"))])
    return table(["model", "seeds", "InfoM / InfoE / InfoC", "MIG (these runs)",
                  "MIG (the zoo's record)", "DCI dis. / compl. / inform. (the zoo's record)"],
                 rows)
