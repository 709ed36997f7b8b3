"""The `vae` stage with a loss of pairs (Ada-GVAE, Ada-ML-VAE): a tiny run on CT-VAE's
transitions end to end with its action retrieval; a stacked run on k-factor pairs whose
second seed is that seed's run alone (each seed draws its own pairs); the sections of
pairs refused where they do not fit, before compiling. Tiny networks
(configs/ada*_dsprites_synth.py:tiny)."""

import json

import numpy as np
import pytest

from causal_disent.evaluation import pair_retrieval
from causal_disent.runs import seeds as seeds_format
from causal_disent.train import stages
from configs import (
    adagvae_dsprites_synth,
    adamlvae_dsprites_synth,
    betavae_dsprites_synth,
    xvae_dsprites_synth,
)
from tests.helpers import check_tiny_vae_run


def test_tiny_ada_gvae_run_on_transitions_scores_action_retrieval(tmp_path):
    results = stages.run(adagvae_dsprites_synth.get_config("tiny"), tmp_path)["vae"]
    rows = check_tiny_vae_run(tmp_path, results, {"name": "ada_gvae", "beta": 4.0},
                              ["loss", "reconstruction", "kl", "changed_latents"])
    # 3 latents: a pair changes at least one and, τ being halfway, never all three
    # unless all are equal, in which case none.
    assert all(0 <= row["changed_latents"] <= 2 for row in rows)
    retrieval = results["action_retrieval"]
    assert retrieval["num_test_pairs"] == 16 and retrieval["headline"] == "linear_probe"
    for readout in pair_retrieval.READOUTS:
        assert 0 <= retrieval[readout]["action_accuracy"] <= 1
        assert sum(retrieval[readout]["per_action_pairs"]) == 16
        assert retrieval[readout]["action_chance"] == 0.1  # dSprites: 5 factors, 10 actions


def resampled_config(seed: int, num_seeds: int = 1):
    config = adamlvae_dsprites_synth.get_config("tiny")
    config.vae.pairs.source, config.vae.pairs.k = "resampled", -1
    config.seed, config.num_seeds = seed, num_seeds
    return config


def test_a_stacked_seed_of_k_factor_pairs_is_its_run_alone(tmp_path):
    stacked = stages.run(resampled_config(0, num_seeds=2), tmp_path / "stacked")["vae"]
    assert stacked["seeds"] == [0, 1]
    # Nested scores are summarised over the seeds under dotted names.
    over_seeds = stacked["over_seeds"]["action_retrieval.linear_probe.action_accuracy"]
    assert len(over_seeds["values"]) == 2
    stages.run(resampled_config(1), tmp_path / "alone")
    alone = json.loads((tmp_path / "alone" / "results.json").read_text())["vae"]
    seed_dir = seeds_format.seed_workdir(tmp_path / "stacked", 1)
    second = json.loads((seed_dir / "results.json").read_text())["vae"]
    np.testing.assert_allclose(second["test_bce"], alone["test_bce"], rtol=1e-5)
    assert (second["action_retrieval"]["linear_probe"]["per_action_pairs"]
            == alone["action_retrieval"]["linear_probe"]["per_action_pairs"])


def with_xblock(config):
    config.vae.model.xblock = xvae_dsprites_synth.get_config("tiny").vae.model.xblock


@pytest.mark.parametrize("make_config, override, message", [
    (adagvae_dsprites_synth, lambda c: delattr(c.vae, "pairs"), r"vae.pairs \(source, k\) is missing"),
    (adagvae_dsprites_synth, lambda c: setattr(c.vae.pairs, "k", 3),
     "vae.pairs.k=3: CT-VAE's transitions change one factor"),
    (adagvae_dsprites_synth, with_xblock, "vae.model.xblock is set, and the 'ada_gvae' loss"),
    (betavae_dsprites_synth,
     lambda c: setattr(c.vae, "pairs", c.vae.__class__({"source": "transitions", "k": 1})),
     "vae.pairs is set but the 'beta_vae' loss learns from single images"),
    (adamlvae_dsprites_synth, lambda c: setattr(c.vae.retrieval, "num_fitting_pairs", 0),
     "vae.retrieval.num_fitting_pairs must be a positive integer"),
    # Range-checked by name with every other count, as CT-VAE's ct.eval.num_test_pairs.
    (adamlvae_dsprites_synth, lambda c: setattr(c.vae.retrieval, "num_test_pairs", 0),
     "vae.retrieval.num_test_pairs must be an integer > 0, got 0"),
])
def test_bad_pair_sections_fail_before_compiling(make_config, override, message, tmp_path):
    config = make_config.get_config("tiny")
    override(config)
    with pytest.raises(stages.InvalidRunError, match=message):
        stages.validate(config, tmp_path, stages.make_data_mesh())
