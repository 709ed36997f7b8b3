"""The metric card and the representations it scores: ceiling and floor, seeding,
caching of encoded images, the command line."""

import json
import os
import re
import signal
import subprocess
import sys

import numpy as np
import pytest

from causal_disent.data import registry
from causal_disent.evaluation import card, representations
from causal_disent.evaluation.metrics import common
from tests.helpers import REPO_ROOT

SMALL = 300  # samples per metric: enough for the ceiling/floor to separate


@pytest.fixture(scope="module")
def dsprites():
    return registry.get_dataset("dsprites_synth")


@pytest.fixture(scope="module")
def identity_card(dsprites):
    rep = representations.identity_representation(dsprites)
    return card.metric_card(dsprites, rep, list(card.METRICS), num_samples=SMALL, seed=0)


def scores_of(metric_card, name):
    return metric_card["metrics"][name]["scores"]


def test_identity_card_reaches_the_ceiling_where_the_metric_allows(identity_card):
    assert scores_of(identity_card, "betavae")["eval_accuracy"] == 1.0
    assert scores_of(identity_card, "factorvae")["eval_accuracy"] == 1.0
    dci = scores_of(identity_card, "dci")
    assert dci["disentanglement"] > 0.95 and dci["completeness"] > 0.95
    # Modularity below 1 at 300 samples: the plug-in MI is biased upward off-factor.
    assert scores_of(identity_card, "modularity_explicitness")["modularity_score"] > 0.9
    assert abs(scores_of(identity_card, "unsupervised")["gaussian_total_correlation"]) < 0.05
    infomec = scores_of(identity_card, "infomec")
    assert infomec["infom"] > 0.95 and infomec["infoc"] > 0.95 and infomec["infoe"] > 0.95


def test_identity_mig_at_the_reference_size(dsprites):
    rep = representations.identity_representation(dsprites)
    mig = card.metric_card(dsprites, rep, ["mig"], num_samples=10_000)["metrics"]["mig"]
    # 20 bins cannot hold orientation's 40 values, so MIG stays below 1.
    assert 0.85 < mig["scores"]["discrete_mig"] < 1.0


def test_card_records_settings_timings_and_versions(identity_card):
    assert identity_card["num_samples"] == SMALL and identity_card["seed"] == 0
    dci = identity_card["metrics"]["dci"]
    assert dci["parameters"]["num_train"] == SMALL and dci["parameters"]["num_test"] == SMALL // 2
    assert "GradientBoostingClassifier" in dci["notes"]["classifier"]
    assert identity_card["metrics"]["factorvae"]["parameters"]["threshold"] == 0.05
    assert all(entry["seconds"] >= 0 for entry in identity_card["metrics"].values())
    assert identity_card["versions"]["scikit-learn"] and identity_card["versions"]["jax"]
    json.dumps(identity_card)  # JSON-ready: arrays became lists


def test_random_projection_is_the_floor(dsprites, identity_card):
    rep = representations.random_representation(dsprites, seed=0)
    floor = card.metric_card(dsprites, rep, ["mig", "dci", "unsupervised", "infomec"], SMALL,
                             seed=0)
    assert scores_of(floor, "mig")["discrete_mig"] < 0.3
    assert scores_of(floor, "infomec")["infom"] < 0.7 and scores_of(floor, "infomec")["infoc"] < 0.5
    assert scores_of(floor, "dci")["disentanglement"] < 0.5 * scores_of(
        identity_card, "dci")["disentanglement"]
    assert scores_of(floor, "unsupervised")["gaussian_total_correlation"] > 0.3


def test_a_metric_does_not_depend_on_the_others(dsprites, identity_card):
    rep = representations.random_representation(dsprites, seed=1)
    alone = card.metric_card(dsprites, rep, ["sap"], SMALL, seed=0)
    with_others = card.metric_card(dsprites, rep, ["mig", "sap"], SMALL, seed=0)
    assert scores_of(alone, "sap") == scores_of(with_others, "sap")
    reseeded = card.metric_card(dsprites, rep, ["sap"], SMALL, seed=5)
    assert scores_of(reseeded, "sap") != scores_of(alone, "sap")


def test_a_sample_the_host_cannot_hold_is_refused_before_any_metric_runs(dsprites,
                                                                         monkeypatch):
    """Each metric's measured peak, in copies of its points' factors and codes
    (`sample_copies`); the card's largest beyond the host's memory stops it at once."""
    from causal_disent.utils import host_memory

    rep = representations.identity_representation(dsprites)
    point_bytes = (dsprites.num_factors + len(common.scored_factor_indices(dsprites))) * 8
    mig_needs = card.METRICS["mig"].sample_copies * 1000 * point_bytes
    monkeypatch.setattr(host_memory, "available_bytes", lambda: mig_needs - 1)
    with pytest.raises(MemoryError, match=r"^1000 points of metric mig need about 0.0 GiB "
                                          r"\(3.5 copies of their factors and codes"):
        card.metric_card(dsprites, rep, ["mig"], num_samples=1000)
    # Modularity holds the most of the card: it names the need, in card order or not.
    with pytest.raises(MemoryError, match=r"^1000 points of metric modularity_explicitness"):
        card.check_samples_fit(dsprites, rep, 1000, ["mig", "modularity_explicitness"])
    monkeypatch.setattr(host_memory, "available_bytes", lambda: mig_needs)
    assert card.metric_card(dsprites, rep, ["mig"], num_samples=1000)["num_samples"] == 1000


def test_metric_names_are_checked():
    assert card.parse_metric_names("all") == list(card.METRICS)
    assert card.parse_metric_names("dci, mig") == ["mig", "dci"]  # card order
    with pytest.raises(ValueError, match="unknown metric.*'migg'.*choose 'all'"):
        card.parse_metric_names("mig,migg")
    with pytest.raises(ValueError, match="num_samples"):
        card.metric_card(None, None, ["mig"], num_samples=1)


class MeanIntensity:
    """An image representation with a known answer: per-image mean and max pixel."""

    name, description = "mean_intensity", "mean and max pixel"

    def __call__(self, images):
        flat = images.reshape(len(images), -1).astype(np.float64)
        return np.stack([flat.mean(axis=1), flat.max(axis=1)], axis=1)


def test_cached_codes_equal_rendered_ones_and_encode_each_image_once(dsprites):
    rng = np.random.default_rng(0)
    factors = dsprites.sample_factors(rng, 500)
    factors = np.concatenate([factors, factors[:200]])  # repeats
    direct = common.representations_of(dsprites, MeanIntensity(), factors)
    cached = representations.CachedCodes(dsprites, MeanIntensity(), chunk_size=64)
    np.testing.assert_allclose(common.representations_of(dsprites, cached, factors), direct)
    unique = len(np.unique(dsprites.factors_to_index(factors)))
    assert cached.images_encoded == unique + 1  # + the probe that sized the cache
    common.representations_of(dsprites, cached, factors[:300])
    assert cached.images_encoded == unique + 1


def test_cache_too_large_falls_back_to_rendering(dsprites):
    cached = representations.CachedCodes(dsprites, MeanIntensity(), max_bytes=1000)
    factors = dsprites.sample_factors(np.random.default_rng(1), 50)
    np.testing.assert_allclose(cached.codes_of_factors(factors),
                               common.representations_of(dsprites, MeanIntensity(), factors))


def test_image_representation_pads_the_last_batch_and_keeps_order():
    rep = representations.ImageRepresentation(
        "sum", "sum of pixels", lambda params, x: x.sum(axis=(1, 2, 3))[:, None] * params,
        params=2.0, batch_size=4)
    images = np.arange(10 * 2 * 2 * 1, dtype=np.uint8).reshape(10, 2, 2, 1)
    expected = images.reshape(10, -1).sum(axis=1)[:, None] / 255.0 * 2.0
    np.testing.assert_allclose(rep(images), expected, rtol=1e-6)
    with pytest.raises(ValueError, match=r"\[B, H, W, ch\]"):
        rep(images[0])


def run_evaluate(*args, cwd):
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT), JAX_PLATFORMS="cpu")
    return subprocess.run([sys.executable, "-m", "causal_disent.evaluate", *args], env=env,
                          capture_output=True, text=True, timeout=600, cwd=cwd)


def test_command_line_writes_and_prints_the_card(tmp_path):
    """The identity card of a run's dataset (--workdir names it) is written here, never
    as the run's own metrics_card.json, which would pass for the trained model's."""
    from configs import causalvae_pendulum
    from causal_disent.runs.config_file import write_config

    (tmp_path / "run").mkdir()
    write_config(tmp_path / "run", causalvae_pendulum.get_config("tiny"))
    result = run_evaluate("--model=identity", "--workdir=run", "--metrics=mig,betavae",
                          "--num_samples=200", "--record=results/identity.json", cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    saved = json.loads((tmp_path / "metrics_card_identity_pendulum.json").read_text())
    assert not (tmp_path / "run" / "metrics_card.json").exists()
    record = json.loads((tmp_path / "results" / "identity.json").read_text())
    assert record["figures"] == saved and record["command"].endswith(
        "-m causal_disent.evaluate --model=identity --workdir=run --metrics=mig,betavae "
        "--num_samples=200 --record=results/identity.json")
    metrics = saved["representations"]["identity"]["metrics"]
    assert set(metrics) == {"mig", "betavae"}
    assert metrics["betavae"]["scores"]["eval_accuracy"] == 1.0
    assert "betavae" in result.stdout and "metrics card:" in result.stdout
    assert not re.search(r"^I\d{4} ", result.stderr, re.MULTILINE), result.stderr  # no INFO
    # Each metric's progress as it ends, on stderr (stdout may have to hold the card).
    progress = result.stderr.splitlines()[-3:]
    assert progress[0] == (
        "scoring representation identity on pendulum: mig, betavae (200 points each)")
    for line, name in zip(progress[1:], ("mig", "betavae")):
        scores = re.escape(card.headline(name, metrics[name]["scores"]))
        assert re.fullmatch(rf"  {name}: {scores} \(\d+\.\d s\)", line), line


@pytest.mark.parametrize("signal_name", ["SIGINT", "SIGTERM"])
def test_ctrl_c_or_sigterm_while_scoring_is_one_line_and_writes_nothing(tmp_path, signal_name):
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT), JAX_PLATFORMS="cpu")
    process = subprocess.Popen(  # DCI on 10 000 points: minutes on a CPU
        [sys.executable, "-m", "causal_disent.evaluate", "--model=random",
         "--dataset=dsprites_synth", "--metrics=dci", "--output=card.json",
         "--compilation_cache=off"],
        env=env, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    started = process.stderr.readline()
    assert started.startswith("scoring representation random"), (started, process.communicate())
    process.send_signal(getattr(signal, signal_name))
    stdout, stderr = process.communicate(timeout=120)
    number = getattr(signal, signal_name).value
    assert process.returncode == 128 + number, stderr[-3000:]
    assert "Traceback" not in stderr, stderr[-3000:]
    assert stdout.strip() == (f"stopped: {signal_name} received; no metrics card was written "
                              f"(a card already at the output path is intact)"), (
        stdout, stderr[-3000:])  # once seen failing under the full suite's load, untold why
    assert list(tmp_path.iterdir()) == []


def test_a_card_that_cannot_be_written_is_printed_and_the_old_one_kept(tmp_path):
    """Files capped at 1 KiB (RLIMIT_FSIZE: a write past it fails as on a full disk):
    the scores computed are not lost, and the card already there stays whole."""
    (tmp_path / "card.json").write_text('{"old": true}')
    capped = ("import os, resource, sys; resource.setrlimit(resource.RLIMIT_FSIZE, (1024, "
              "resource.getrlimit(resource.RLIMIT_FSIZE)[1])); "
              "os.execv(sys.executable, [sys.executable, *sys.argv[1:]])")
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT), JAX_PLATFORMS="cpu")
    result = subprocess.run(
        [sys.executable, "-c", capped, "-m", "causal_disent.evaluate", "--model=identity",
         "--dataset=pendulum", "--metrics=mig", "--num_samples=200", "--output=card.json",
         "--compilation_cache=off"],
        env=env, capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert result.returncode == 1 and "Traceback" not in result.stderr, result.stderr[-3000:]
    assert result.stderr.rstrip().splitlines()[-1] == (
        "error: cannot write the metrics card card.json (File too large); the card is printed "
        "above: free space or pass another --output, or keep the printed card")
    printed = json.loads(result.stdout)
    assert "discrete_mig" in printed["representations"]["identity"]["metrics"]["mig"]["scores"]
    assert sorted(path.name for path in tmp_path.iterdir()) == ["card.json"]
    assert (tmp_path / "card.json").read_text() == '{"old": true}'


@pytest.mark.parametrize("args, message", [
    (("--model=identity",), "needs --dataset"),
    (("--model=trained",), "needs --workdir"),
    (("--model=identity", "--dataset=pendulum", "--metrics=mgi"), "unknown metric"),
    (("--workdir=nowhere",), "config.json not found"),
    (("--model=identity", "--dataset=pendulum", "--record=card.txt"), "a record is a .json file"),
])
def test_command_line_errors_name_the_problem(tmp_path, args, message):
    result = run_evaluate(*args, cwd=tmp_path)
    assert result.returncode != 0
    assert message in result.stderr and "Traceback" not in result.stderr


def test_headline_scores_name_metric_and_score_in_card_order():
    metric_card = {"metrics": {
        "mig": {"scores": {"discrete_mig": 0.5, "entropy": [1.0, 2.0]}},
        "dci": {"scores": {"disentanglement": 0.25, "completeness": None,
                           "informativeness_test": 0.75, "importance_matrix": [[1.0]]}},
    }}
    scores = card.headline_scores(metric_card)
    assert list(scores) == ["mig.discrete_mig", "dci.disentanglement", "dci.completeness",
                            "dci.informativeness_test"]
    assert scores["mig.discrete_mig"] == 0.5 and scores["dci.informativeness_test"] == 0.75
    assert np.isnan(scores["dci.completeness"])  # a non-finite score is recorded as null


def test_printed_headlines_say_n_a_and_why_a_factorvae_score_is_zero():
    assert card.headline("dci", {"disentanglement": 0.25, "completeness": None}).startswith(
        "disentanglement 0.2500, completeness n/a")
    dead = card.headline("factorvae", {"train_accuracy": 0.0, "eval_accuracy": 0.0,
                                       "num_active_dims": 0})
    assert dead.endswith("(no active latent dimension: every latent's variance is below the "
                         "threshold, and the score is 0 by convention)")
    assert "no active" not in card.headline("factorvae", {"eval_accuracy": 0.5,
                                                          "num_active_dims": 3})


def test_a_dataset_without_a_factor_grid_is_refused_with_the_reason():
    class Attributes:  # as CelebA: binary attributes, no factor grid
        name = "celeb_a"
        attribute_names = ("smiling",)

    assert card.factor_grid_missing(registry.get_dataset("pendulum")) is None
    reason = card.factor_grid_missing(Attributes())
    assert "celeb_a has binary attributes" in reason
    with pytest.raises(ValueError, match="binary attributes"):
        card.metric_card(Attributes(), None, ["mig"])
