"""The X-models and consistency training on the `vae` stage: a tiny XAE run with both
penalties (results, scores, heat maps, no KL for the AE), a tiny XVAE run and its
card's consistency scores, and bad configs refused before compiling. Tiny networks
(configs/x*_dsprites_synth.py:tiny)."""

import json
import types

import numpy as np
import pytest

from causal_disent.evaluation import consistency_scores, trained_runs
from causal_disent.train import stages, vae_stage
from causal_disent.utils.sharding import make_data_mesh
from configs import laddervae_dsprites_synth, xae_dsprites_synth, xvae_dsprites_synth


def with_penalties(config):
    config.vae.consistency.invariance_weight = 4.0
    config.vae.consistency.equivariance_weight = 4.0
    return config


@pytest.fixture(scope="module")
def xae_run(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("xae")
    return workdir, stages.run(with_penalties(xae_dsprites_synth.get_config("tiny")),
                               workdir)["vae"]


def test_tiny_xae_with_consistency_trains_and_scores(xae_run):
    workdir, results = xae_run
    units = 3  # the tiny config's latents
    scores = results["consistency"]
    assert np.asarray(scores["inv"]).shape == (units, units)
    assert np.asarray(scores["eqv"]).shape == (units, units)
    assert len(scores["scn"]) == units and scores["num_samples"] == 20
    assert "test_kl" not in results  # a deterministic encoder has no KL
    mask = np.asarray(results["xblock"]["mask"])
    assert mask.shape == (units, units) and np.all(np.triu(mask) == 0)
    assert results["xblock"]["possible_edges"] == 3
    assert 0 <= results["xblock"]["edges"] <= 3
    assert (workdir / "figures" / "vae_consistency.png").is_file()
    logged = [json.loads(line) for line in (workdir / "metrics.jsonl").read_text().splitlines()]
    penalties = [row for row in logged if "invariance_penalty" in row.get("metrics", row)]
    assert penalties, "the penalties are logged at every log step"


def test_tiny_xvae_run_has_an_xblock_kl_and_card_scores(tmp_path):
    """Trained with the invariance penalty on the authors' XCVAE sampling, the config's:
    base samples from N(0, I), intervention values sampled from q(z | x)."""
    config = xvae_dsprites_synth.get_config("tiny")
    assert (config.vae.consistency.prior, config.vae.consistency.intervention_values) == (
        "standard_normal", "posterior_samples")
    config.vae.consistency.invariance_weight = 4.0
    # The card scores the first NUM_SCORED_IMAGES test images: the stage the same.
    config.vae.train.num_eval_images = consistency_scores.NUM_SCORED_IMAGES
    results = stages.run(config, tmp_path)["vae"]
    assert results["test_kl"] >= 0 and "consistency" in results
    logged = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    penalties = [row.get("metrics", row)["invariance_penalty"] for row in logged
                 if "invariance_penalty" in row.get("metrics", row)]
    assert penalties and all(np.isfinite(penalties)) and max(penalties) > 0
    # In the stage's batch size: a 4-step model's units barely vary, so the scores'
    # normalisation magnifies the rounding of another batch size (0.6 % on an AVX2 host).
    run = trained_runs.open_run(tmp_path, make_data_mesh(),
                                batch_size=config.vae.train.eval_batch_size)
    assert run.family == "vae" and list(run.representations) == ["encoder_mean",
                                                                   "causal_units"]
    images = run.dataset.images(np.arange(4))
    noise = run.representations["encoder_mean"](images)
    causes = run.representations["causal_units"](images)
    assert causes.shape == (4, 3) and not np.allclose(causes, noise)
    causal = run.causal_scores()
    assert set(causal) == {"consistency"}
    np.testing.assert_allclose(causal["consistency"]["inv"], results["consistency"]["inv"],
                               atol=1e-5)  # the card scores what the stage scored


@pytest.mark.parametrize("override, message", [
    (lambda c: setattr(c.vae.consistency, "invariance_weight", -4.0),
     "vae.consistency.invariance_weight must be >= 0, got -4.0"),
    (lambda c: setattr(c.vae.model.xblock, "allowed_parents", ((0,) * 4,) * 4),
     "allowed_parents is a 4x4 mask but the block has 3 units"),
    (lambda c: setattr(c.vae.model.xblock, "temperature", 0.0),
     "vae.model.xblock.temperature must be > 0"),
])
def test_bad_consistency_configs_fail_before_compiling(override, message, tmp_path):
    config = xae_dsprites_synth.get_config("tiny")
    override(config)
    with pytest.raises(stages.InvalidRunError, match=message):
        stages.validate(config, tmp_path, stages.make_data_mesh())


def test_an_xblock_on_the_ladder_vae_is_refused(tmp_path):
    config = laddervae_dsprites_synth.get_config("tiny")
    xae_dsprites_synth.with_xblock(config, "tiny")
    with pytest.raises(stages.InvalidRunError, match="LadderVAE takes no XBlock"):
        stages.validate(config, tmp_path, stages.make_data_mesh())


def test_a_dataset_without_images_is_refused(tmp_path, monkeypatch):
    vectors = types.SimpleNamespace(name="vectors", num_images=10)
    monkeypatch.setattr(vae_stage.registry, "dataset_from_config", lambda _: vectors)
    with pytest.raises(stages.InvalidRunError, match="trains on images .* has none"):
        stages.validate(xae_dsprites_synth.get_config("tiny"), tmp_path,
                        stages.make_data_mesh())
