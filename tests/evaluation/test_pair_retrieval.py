"""Action retrieval from a single-image model's change of representation
(evaluation/pair_retrieval.py): both readouts on constructed changes, and the test
pairs being CT-VAE's."""

import jax
import numpy as np

from causal_disent.data import registry, splits, transitions
from causal_disent.evaluation import pair_retrieval
from causal_disent.runs import vae as vae_run
from configs import betavae_dsprites_synth


def constructed_changes(actions, num_factors, num_latents, rng, noise=0.05):
    """Latent f moves by +1 or −1 under action f or F + f (latent order reversed, so
    that no readout can rely on latent i being factor i), the rest by noise."""
    factor, sign = actions % num_factors, np.where(actions < num_factors, 1.0, -1.0)
    mean_change = noise * rng.standard_normal((len(actions), num_latents))
    mean_change[np.arange(len(actions)), num_latents - 1 - factor] += sign
    distance = mean_change ** 2 / 2  # δ of unit-variance posteriors
    return {"mean_change": mean_change, "distance": distance}


def test_both_readouts_recover_the_action_from_a_clean_change():
    rng = np.random.default_rng(0)
    fitting_actions, test_actions = rng.integers(0, 8, 400), rng.integers(0, 8, 200)
    fitting = constructed_changes(fitting_actions, 4, 6, rng)
    test = constructed_changes(test_actions, 4, 6, rng)
    probe = pair_retrieval.fit_linear_probe(fitting["mean_change"], fitting_actions, 8)
    vote = pair_retrieval.fit_changed_latent_vote(fitting, fitting_actions, 8)
    np.testing.assert_array_equal(probe(test["mean_change"]).argmax(1), test_actions)
    np.testing.assert_array_equal(vote(test).argmax(1), test_actions)


def test_the_vote_cannot_tell_apart_factors_held_in_one_latent():
    # Factors 0 and 1 both move latent 0 the same way: the vote picks one of them for
    # both, so half of those pairs are wrong, while factors 2 and 3 stay right.
    rng = np.random.default_rng(1)
    actions = rng.integers(0, 8, 800)
    changes = constructed_changes(actions, 4, 4, rng)
    merged = np.isin(actions % 4, [0, 1])
    changes["mean_change"][merged] = 0.05 * rng.standard_normal((merged.sum(), 4))
    changes["mean_change"][merged, 0] += np.where(actions[merged] < 4, 1.0, -1.0)
    changes["distance"] = changes["mean_change"] ** 2 / 2
    predicted = pair_retrieval.fit_changed_latent_vote(changes, actions, 8)(changes).argmax(1)
    assert np.mean(predicted[merged] == actions[merged]) < 0.6
    np.testing.assert_array_equal(predicted[~merged], actions[~merged])


def test_a_readout_fitted_on_one_action_predicts_it():
    probe = pair_retrieval.fit_linear_probe(np.ones((5, 3)), np.full(5, 2), 4)
    np.testing.assert_array_equal(probe(np.zeros((2, 3))), [[0, 0, 1, 0]] * 2)


def test_an_untrained_vae_is_scored_on_ct_vaes_test_pairs_near_chance():
    config = betavae_dsprites_synth.get_config("tiny")
    config.data.split_fractions = (0.7, 0.15, 0.15)
    dataset = registry.dataset_from_config(config.data)
    split = splits.configured_split(dataset, config.data)
    model = vae_run.build_model(config, dataset)
    params = model.init(jax.random.key(0), np.zeros((1, *dataset.image_shape)))["params"]
    results = pair_retrieval.evaluate(model, params, dataset, split, 3, num_test_pairs=300,
                                      num_fitting_pairs=600, batch_size=64)
    ct_test = transitions.sampler_for(dataset, split, 3).fixed_set("test", 300)
    for readout in pair_retrieval.READOUTS:
        scores = results[readout]
        assert scores["per_action_pairs"] == np.bincount(ct_test["action"], minlength=10).tolist()
        assert scores["action_chance"] == 0.1 and scores["factor_chance"] == 0.2
        # Random weights still see images change, so above chance but far from 1.
        assert scores["action_accuracy"] < 0.6
    assert results["headline"] == "linear_probe"
