"""The summary printed at the end of a run."""

from causal_disent.runs import summary

CT_RESULTS = {
    "mcqvae": {"test_psnr": 25.214, "test_mse": 0.00312, "codebook_perplexity": [40.0, 42.4]},
    "ct": {"action_accuracy": 0.7142, "action_chance": 1 / 12, "factor_accuracy": 0.8031,
           "factor_chance": 1 / 6},
}


def test_headlines_name_each_stages_figures():
    assert summary.headline("mcqvae", CT_RESULTS["mcqvae"]) == (
        "test PSNR 25.21 dB, MSE 0.0031, codebook perplexity 41.2")
    assert summary.headline("ct", CT_RESULTS["ct"]) == (
        "test action accuracy 0.714 (chance 0.083), factor accuracy 0.803 (chance 0.167)")
    assert summary.headline("causalvae", {"mic": 99.9, "tic": 95.2, "shd": 0,
                                          "test_bce": 1826.46}) == (
        "MIC 99.9, TIC 95.2, SHD 0 to the true graph, test BCE 1826.5")
    assert summary.headline("vae", {"test_nll": 75.08, "test_kl": 12.2,
                                    "consistency": {"inv_off_diagonal": None}}) == (
        "test NLL 75.1, KL 12.20, INV off-diagonal n/a")
    assert summary.headline("vae", {"num_seeds": 3, "over_seeds": {
        "test_nll": {"mean": 75.0, "std": 0.5}}}) == (
        "3 seeds: test NLL 75.0 ± 0.5 (each seed's run in seeds/)")
    retrieval = {"headline": "linear_probe", "linear_probe": {
        "action_accuracy": 0.61, "action_chance": 1 / 12, "factor_accuracy": 0.75,
        "factor_chance": 1 / 6}}
    assert summary.headline("vae", {"test_nll": 75.08, "action_retrieval": retrieval}) == (
        "test NLL 75.1; action retrieval (linear probe) 0.610 (chance 0.083), factor 0.750 "
        "(chance 0.167)")
    assert summary.headline("vae", {"num_seeds": 2, "over_seeds": {
        "test_nll": {"mean": 75.0, "std": 0.5},
        "action_retrieval.linear_probe.action_accuracy": {"mean": 0.6, "std": 0.01},
        "action_retrieval.linear_probe.factor_accuracy": {"mean": 0.7, "std": 0.02}}}) == (
        "2 seeds: test NLL 75.0 ± 0.5, action retrieval 0.600 ± 0.010, factor retrieval "
        "0.700 ± 0.020 (each seed's run in seeds/)")
    assert summary.headline("ct", {"steps": 3}) == "(see results.json)"  # an older entry
    assert summary.headline("ct", {**CT_RESULTS["ct"], "num_pairs": 2000}).endswith(
        "factor accuracy 0.803 (chance 0.167) (2000 test pairs)")


def test_the_table_gives_times_and_points_at_the_files_that_exist(tmp_path):
    (tmp_path / "results.json").write_text("{}")
    (tmp_path / "figures").mkdir()
    text = summary.format_summary(tmp_path, CT_RESULTS, {"mcqvae": 61.2, "ct": 3725.0},
                                  skipped={"mcqvae"})
    lines = text.splitlines()
    assert lines[1] == "summary"
    assert lines[3].split()[0] == "mcqvae" and lines[3].endswith("finished earlier")
    assert lines[4].split()[0] == "ct" and lines[4].endswith("1h02m05s")
    assert f"workdir {tmp_path}" in lines
    assert any(line.split()[0] == "results.json" for line in lines[6:])
    assert not any("checkpoints" in line for line in lines)  # no such folder here


def test_the_tensorboard_command_can_be_pasted_whatever_the_workdirs_name(tmp_path):
    workdir = tmp_path / "β-VAE run 2"
    (workdir / "tensorboard").mkdir(parents=True)
    text = summary.format_summary(workdir, CT_RESULTS, {"ct": 1.0})
    assert f"tensorboard --logdir '{workdir}'" in text
