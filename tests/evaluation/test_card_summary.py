"""Runs' scores side by side (evaluation/card_summary.py, causal_disent/summarize.py):
cards and results written by hand, a many-seed workdir expanded to its seeds, mean
and sample std against NumPy, and the errors for missing runs and cards."""

import json
import subprocess
import sys

import numpy as np
import pytest

from causal_disent.evaluation import card_summary
from causal_disent.runs.config_file import write_config
from tests.helpers import tiny_config


def write_run(workdir, mig, dci, test_bce=None):
    """A scored run: a card with MIG and DCI for encoder_mean, and results.json."""
    workdir.mkdir(parents=True)
    metrics = {
        "mig": {"scores": {"discrete_mig": mig}},
        "dci": {"scores": {"disentanglement": dci, "completeness": 0.5,
                           "informativeness_train": 0.9, "informativeness_test": 0.8}},
    }
    card = {"model": "trained", "representations": {"encoder_mean": {
        "metrics": metrics, "num_samples": 10_000, "seed": 0, "total_seconds": 12.5}}}
    (workdir / "metrics_card.json").write_text(json.dumps(card))
    if test_bce is not None:
        (workdir / "results.json").write_text(json.dumps({"vae": {"test_bce": test_bce,
                                                                  "num_images": 8}}))
    return workdir


def test_a_run_gives_its_headline_scores_and_test_nll(tmp_path):
    run = write_run(tmp_path / "w", mig=0.2, dci=0.4, test_bce=70.0)
    assert card_summary.read_run_scores(run) == {
        "mig.discrete_mig": 0.2, "dci.disentanglement": 0.4, "dci.completeness": 0.5,
        "dci.informativeness_test": 0.8, "test_bce": 70.0}  # not informativeness_train


def test_a_run_without_a_card_gives_its_results_and_consistency_summaries(tmp_path):
    run = tmp_path / "w"
    run.mkdir()
    consistency = {"inv": [[0.0]], "inv_off_diagonal": 0.9, "inv_diagonal": 0.1,
                   "eqv_mean": 0.8, "scn_mean": 0.7, "num_samples": 4}
    (run / "results.json").write_text(json.dumps(
        {"vae": {"test_bce": 60.0, "consistency": consistency}}))
    assert card_summary.read_run_scores(run) == {
        "test_bce": 60.0, "consistency.inv_off_diagonal": 0.9,
        "consistency.inv_diagonal": 0.1, "consistency.eqv_mean": 0.8,
        "consistency.scn_mean": 0.7}


def test_a_many_seed_workdir_stands_for_its_seeds_in_seed_order(tmp_path):
    for seed in (10, 2, 1):
        write_run(tmp_path / "w" / "seeds" / f"seed_{seed}", mig=0.1, dci=0.1)
    runs = card_summary.expand_runs(tmp_path / "w")
    assert [run.name for run in runs] == ["seed_1", "seed_2", "seed_10"]  # no config.json
    assert card_summary.expand_runs(runs[0]) == [runs[0]]


def test_a_many_seed_run_stands_for_the_seeds_it_trained_and_refuses_a_missing_one(tmp_path):
    """By its config.json: a seed folder gone would otherwise shrink the group
    silently, and a stray one would join it."""
    run = tmp_path / "w"
    run.mkdir()
    write_config(run, tiny_config(seed=1, num_seeds=3))
    for seed in (1, 2, 10):
        write_run(run / "seeds" / f"seed_{seed}", mig=0.1, dci=0.1)
    with pytest.raises(FileNotFoundError) as refused:
        card_summary.expand_runs(run)
    assert str(refused.value) == (
        f"{run} trains seeds 1, 2, 3, and {run / 'seeds' / 'seed_3'} is missing: finish the "
        f"run, or, if it finished, `python -m causal_disent.main --workdir={run} --mode=eval` "
        f"writes every seed's folder again")
    write_run(run / "seeds" / "seed_3", mig=0.1, dci=0.1)
    assert [seed.name for seed in card_summary.expand_runs(run)] == ["seed_1", "seed_2",
                                                                      "seed_3"]


def test_aggregate_is_the_mean_and_sample_std_over_runs(tmp_path):
    values = [(0.1, 0.3, 60.0), (0.2, 0.5, 70.0), (0.6, 0.4, 80.0)]
    runs = [write_run(tmp_path / f"w{k}", mig=m, dci=d, test_bce=b)
            for k, (m, d, b) in enumerate(values)]
    summary = card_summary.aggregate([card_summary.read_run_scores(run) for run in runs])
    mig = np.array([v[0] for v in values])
    mean, spread, count = summary["mig.discrete_mig"]
    assert (mean, count) == (pytest.approx(mig.mean()), 3)
    assert spread == pytest.approx(mig.std(ddof=1))
    assert np.isnan(card_summary.aggregate([{"a": 1.0}])["a"][1])  # one run: no spread


def test_markdown_table_rows_columns_and_missing_cells(tmp_path):
    trained = card_summary.aggregate([{"mig.discrete_mig": 0.1, "test_bce": 70.0},
                                      {"mig.discrete_mig": 0.3, "test_bce": 72.0}])
    identity = card_summary.aggregate([{"mig.discrete_mig": 0.9}])
    table = card_summary.markdown_table([("model", trained), ("identity", identity)])
    lines = table.splitlines()
    assert lines[0] == "| runs | n | MIG | test NLL (BCE) |"
    assert lines[2] == "| model | 2 | 0.200 ± 0.141 | 71.0 ± 1.4 |"
    assert lines[3] == "| identity | 1 | 0.900 | – |"


def test_missing_run_card_and_representation_are_named(tmp_path):
    with pytest.raises(FileNotFoundError, match="does not exist"):
        card_summary.expand_runs(tmp_path / "nowhere")
    (tmp_path / "unscored").mkdir()
    with pytest.raises(FileNotFoundError, match=r"unscored holds no run \(no config.json"):
        card_summary.read_run_scores(tmp_path / "unscored")
    write_config(tmp_path / "unscored", tiny_config())
    with pytest.raises(FileNotFoundError, match="causal_disent.evaluate --workdir="):
        card_summary.read_run_scores(tmp_path / "unscored")
    (tmp_path / "unscored" / "results.json").write_text(json.dumps({"vae": {"steps": 3}}))
    with pytest.raises(FileNotFoundError, match="no score to show in its results.json"):
        card_summary.read_run_scores(tmp_path / "unscored")
    run = write_run(tmp_path / "w", mig=0.1, dci=0.1)
    with pytest.raises(ValueError, match="no representation 'concepts'; it has encoder_mean"):
        card_summary.read_run_scores(run, "concepts")


def test_damaged_cards_and_results_name_the_file(tmp_path):
    run = write_run(tmp_path / "w", mig=0.1, dci=0.1, test_bce=70.0)
    (run / "results.json").write_text('{"vae": {"test_b')  # cut short
    with pytest.raises(ValueError, match=rf"{run / 'results.json'} is not valid JSON"):
        card_summary.read_run_scores(run)
    (run / "results.json").write_text("[]")
    with pytest.raises(ValueError, match=rf"{run / 'results.json'} holds list, not a run's"):
        card_summary.read_run_scores(run)
    card = tmp_path / "card.json"
    card.write_bytes(b"\xff{}")  # not UTF-8
    with pytest.raises(ValueError, match=rf"{card} is not valid JSON"):
        card_summary.read_run_scores(card)
    card.write_text('{"model": "trained"}')
    with pytest.raises(ValueError, match=rf"{card} is not a metric card"):
        card_summary.read_run_scores(card)


def test_stages_without_a_card_give_their_headline_scalars(tmp_path):
    """CT-VAE (headline and mean over draws), stage 1 and CausalVAE runs have no metric
    card; their results.json headline figures are the run's scores."""
    run = tmp_path / "ct"
    run.mkdir()
    (run / "results.json").write_text(json.dumps({
        "mcqvae": {"test_psnr": 25.0},
        "ct": {"action_accuracy": 0.8, "factor_accuracy": 0.85, "per_action_accuracy": [1.0],
               "draws": {"action_accuracy": {"mean": 0.79, "std": 0.01},
                         "factor_accuracy": {"mean": 0.84, "std": 0.01}}}}))
    assert card_summary.read_run_scores(run) == {
        "ct.action_accuracy": 0.8, "ct.factor_accuracy": 0.85,
        "ct.draws.action_accuracy.mean": 0.79, "ct.draws.factor_accuracy.mean": 0.84,
        "mcqvae.test_psnr": 25.0}
    (run / "results.json").write_text(json.dumps(
        {"causalvae": {"mic": 0.99, "tic": 0.95, "shd": 0, "learned_graph": [[0]]}}))
    assert card_summary.read_run_scores(run) == {"causalvae.mic": 0.99, "causalvae.tic": 0.95,
                                                 "causalvae.shd": 0.0}


def test_group_arguments():
    assert card_summary.parse_group("beta-VAE=a, b") == ("beta-VAE", ["a", "b"])
    assert card_summary.parse_group("a,b") == ("a,b", ["a", "b"])
    assert card_summary.parse_group("β-VAE (β = 4)=w1,w2") == ("β-VAE (β = 4)", ["w1", "w2"])
    with pytest.raises(ValueError, match="names no run"):
        card_summary.parse_group("label=")


def test_command_prints_the_table_and_refuses_an_unscored_run(tmp_path):
    write_run(tmp_path / "w" / "seeds" / "seed_0", mig=0.1, dci=0.2, test_bce=60.0)
    write_run(tmp_path / "w" / "seeds" / "seed_1", mig=0.3, dci=0.2, test_bce=62.0)
    command = [sys.executable, "-m", "causal_disent.summarize"]
    done = subprocess.run(command + [f"--group=VAE={tmp_path / 'w'}"], capture_output=True,
                          text=True, check=True)
    assert "| VAE | 2 | 0.200 ± 0.141 | 0.200 ± 0.000 |" in done.stdout
    # --record keeps the table's figures and each run's results, with the command.
    record_path = tmp_path / "results" / "vae.json"
    done = subprocess.run(command + [f"--group=VAE={tmp_path / 'w'}", f"--record={record_path}"],
                          capture_output=True, text=True, check=True)
    # The record names the machine; JAX's INFO line probing for a TPU stays off stderr.
    assert done.stderr == ""
    record = json.loads(record_path.read_text())
    assert record["command"].endswith(f"-m causal_disent.summarize --group=VAE={tmp_path / 'w'} "
                                      f"--record={record_path}")
    group = record["figures"]["groups"]["VAE"]
    assert group["summary"]["mig.discrete_mig"] == [0.2, pytest.approx(0.1414, abs=1e-4), 2]
    assert [run["scores"]["test_bce"] for run in group["runs"]] == [60.0, 62.0]
    assert group["runs"][1]["results"] == json.loads(
        (tmp_path / "w" / "seeds" / "seed_1" / "results.json").read_text())
    assert group["runs"][1]["card"] == {"encoder_mean": {"num_samples": 10_000, "seed": 0,
                                                         "total_seconds": 12.5}}
    refused = subprocess.run(command + [f"--group=VAE={tmp_path / 'w'}", "--record=out.txt"],
                             capture_output=True, text=True)
    assert refused.returncode == 1 and refused.stderr.strip().splitlines() == [
        "error: --record=out.txt: a record is a .json file, e.g. --record=results/<name>.json"]
    (tmp_path / "bare").mkdir()
    write_config(tmp_path / "bare", tiny_config())  # a run not scored yet
    failed = subprocess.run(command + [f"--group={tmp_path / 'bare'}"], capture_output=True,
                            text=True)
    assert failed.returncode != 0 and "no metrics_card.json" in failed.stderr


def test_a_card_of_an_unfinished_or_since_retrained_run_is_refused(tmp_path):
    """evaluate --unfinished marks its card; a card whose run has checkpoints past the
    ones it scored is stale. Either would show scores that are not the run's."""
    run = write_run(tmp_path / "w", mig=0.2, dci=0.4)
    (run / "checkpoints" / "vae" / "700").mkdir(parents=True)
    card_path = run / "metrics_card.json"
    card = json.loads(card_path.read_text())
    current = {**card, "workdir": str(run), "finished": True, "checkpoint_steps": {"vae": 700}}
    card_path.write_text(json.dumps(current))
    assert card_summary.read_run_scores(run)["mig.discrete_mig"] == 0.2
    card_path.write_text(json.dumps({**current, "finished": False}))
    with pytest.raises(ValueError, match=r"scores an unfinished run \(its checkpoints at vae "
                                         r"step 700\); finish the run and score it again"):
        card_summary.read_run_scores(run)
    card_path.write_text(json.dumps(current))
    (run / "checkpoints" / "vae" / "2000").mkdir()
    with pytest.raises(ValueError, match=r"is stale: it scored .* at vae step 700, whose "
                                         r"checkpoints are now at vae step 2000; score it again"):
        card_summary.read_run_scores(run)


def test_a_group_of_runs_of_different_configs_is_refused(tmp_path):
    """A group is one model's seeds: its mean ± std over two models would mean nothing."""
    def run_of(name, **changes):
        run = write_run(tmp_path / name, mig=0.1, dci=0.2)
        write_config(run, tiny_config(**changes))
        return run

    seed_0 = run_of("seed_0")
    seed_1 = run_of("seed_1", **{"seed": 1, "mcqvae.train.steps_per_call": 3,
                                 "ct.mcqvae_workdir": "/its/own/stage_one"})
    card_summary.check_one_config("CT-VAE", [seed_0, seed_1, tmp_path / "identity_card.json"])
    other = run_of("other", **{"seed": 2, "mcqvae.model.commitment_cost": 0.5})
    with pytest.raises(ValueError) as refused:
        card_summary.check_one_config("CT-VAE", [seed_0, seed_1, other])
    assert str(refused.value) == (
        f"group 'CT-VAE' mixes configs: mcqvae.model.commitment_cost is 0.25 in {seed_0}, "
        f"0.5 in {other}; give each config its own --group")


def test_causalvae_seeds_may_compare_with_runs_of_their_own(tmp_path):
    from configs import causalvae_pendulum

    runs = []
    for seed in (0, 1):
        config = causalvae_pendulum.get_config("tiny")
        config.seed = seed
        config.causalvae.train.compare_workdirs = (f"/runs/condition_vae_{seed}",)
        runs.append(write_run(tmp_path / f"seed_{seed}", mig=0.1, dci=0.2))
        write_config(runs[-1], config)
    card_summary.check_one_config("CausalVAE", runs)


def test_a_card_of_another_run_or_of_the_factors_is_refused(tmp_path):
    """A run folder's metrics_card.json stands for that run: one written there for the
    ground-truth factors or for another run (evaluate --output) would show their
    scores as this run's. A copy of the run (the same config) keeps its card."""
    import shutil

    def run_of(name, **changes):
        run = write_run(tmp_path / name, mig=0.1, dci=0.2)
        write_config(run, tiny_config(**changes))
        return run

    seed_0, seed_1 = run_of("seed_0"), run_of("seed_1", seed=1)
    card = json.loads((seed_0 / "metrics_card.json").read_text())
    (seed_0 / "metrics_card.json").write_text(json.dumps({**card, "workdir": str(seed_0)}))
    copy = tmp_path / "copy"
    shutil.copytree(seed_0, copy)
    assert card_summary.read_run_scores(copy)["mig.discrete_mig"] == 0.1

    shutil.copy(seed_0 / "metrics_card.json", seed_1 / "metrics_card.json")
    with pytest.raises(ValueError) as refused:
        card_summary.read_run_scores(seed_1)
    assert str(refused.value) == (
        f"{seed_1 / 'metrics_card.json'} scores the run in {seed_0}, not the one in {seed_1} "
        f"(seed is 0 there, 1 here); score it with `python -m causal_disent.evaluate "
        f"--workdir={seed_1}`")
    (seed_1 / "metrics_card.json").write_text(json.dumps(
        {**card, "model": "identity", "dataset": "dsprites_synth"}))
    with pytest.raises(ValueError, match=r"scores --model=identity on dsprites_synth, not the "
                                         r"run in .*seed_1; score it with .*, and give the "
                                         r"identity card to --group as a file of its own"):
        card_summary.read_run_scores(seed_1)
