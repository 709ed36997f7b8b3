"""The VAE family's later models (AnnealedVAE, β-TCVAE, DIP-VAE-I and -II) against
NumPy hand computations on the stand-in LinearVAE, the properties of their extra
terms, and their weights' checks."""

import jax
import jax.numpy as jnp
import ml_collections
import numpy as np
import pytest

from causal_disent.objectives import vae as vae_objectives
from tests.objectives.test_vae_objectives import (
    BATCH,
    PARAMS,
    LinearVAE,
    numpy_bernoulli_nll,
    numpy_kl,
)

RNG = jax.random.key(11)


def numpy_pass(rng=RNG):
    """By hand, in float64: the LinearVAE's (mean, log_variance, z) on BATCH with the
    loss's noise, its batch-mean reconstruction and its batch-mean KL."""
    x = BATCH["image"].reshape(2, 4).astype(np.float64) / 255.0
    mean, log_variance = x @ PARAMS["to_mean"], x @ PARAMS["to_log_variance"]
    noise = np.asarray(jax.random.normal(rng, (2, 2)), np.float64)
    z = mean + np.exp(0.5 * log_variance) * noise
    reconstruction = numpy_bernoulli_nll(z @ PARAMS["to_logits"], x).mean()
    kl = numpy_kl(mean, log_variance).sum(axis=1).mean()
    return mean, log_variance, z, reconstruction, kl


def numpy_log_normal(x, mean, log_variance):
    return -0.5 * (np.log(2 * np.pi) + log_variance + (x - mean) ** 2 / np.exp(log_variance))


def numpy_minibatch_weighted(z, mean, log_variance, dataset_size):
    """Per image i: (log q(z_i | x_i), log q(z_i), Σ_k log q(z_ik), log p(z_i)), the
    aggregate's densities as (1/(N·M))·Σ_j of the batch's posteriors, looped."""
    batch = len(z)
    rows = []
    for i in range(batch):
        joint = sum(np.exp(numpy_log_normal(z[i], mean[j], log_variance[j]).sum())
                    for j in range(batch))
        product = sum(np.log(sum(np.exp(numpy_log_normal(z[i, k], mean[j, k],
                                                         log_variance[j, k]))
                                 for j in range(batch)) / (dataset_size * batch))
                      for k in range(z.shape[1]))
        rows.append((numpy_log_normal(z[i], mean[i], log_variance[i]).sum(),
                     np.log(joint / (dataset_size * batch)), product,
                     numpy_log_normal(z[i], 0.0, 0.0).sum()))
    return np.array(rows).T


# --- AnnealedVAE ---------------------------------------------------------------

@pytest.mark.parametrize("step, capacity", [(0, 0.0), (50, 12.5), (100, 25.0), (400, 25.0)])
def test_capacity_rises_linearly_to_c_max_at_the_threshold(step, capacity):
    np.testing.assert_allclose(vae_objectives.annealed_capacity(jnp.int32(step), 25.0, 100),
                               capacity, rtol=1e-6)


def test_zero_threshold_starts_at_full_capacity():
    np.testing.assert_allclose(vae_objectives.annealed_capacity(jnp.int32(0), 25.0, 0), 25.0)


@pytest.mark.parametrize("step", [0, 5, 30])
def test_annealed_vae_loss_equals_the_hand_computation(step):
    gamma, c_max, threshold = 1000.0, 3.0, 10
    loss, metrics = vae_objectives.annealed_vae_loss(
        PARAMS, BATCH, RNG, model=LinearVAE(), gamma=gamma, c_max=c_max,
        iteration_threshold=threshold, step=jnp.int32(step))
    _, _, _, reconstruction, kl = numpy_pass()
    capacity = c_max * min(1.0, step / threshold)
    np.testing.assert_allclose(metrics["capacity"], capacity, rtol=1e-6)
    np.testing.assert_allclose(metrics["kl"], kl, rtol=1e-5)
    np.testing.assert_allclose(loss, reconstruction + gamma * abs(kl - capacity), rtol=1e-5)


# --- β-TCVAE -------------------------------------------------------------------

def test_beta_tc_vae_loss_equals_the_hand_computation():
    beta, dataset_size = 6.0, 1000
    loss, metrics = vae_objectives.beta_tc_vae_loss(
        PARAMS, BATCH, RNG, model=LinearVAE(), beta=beta, dataset_size=dataset_size)
    mean, log_variance, z, reconstruction, kl = numpy_pass()
    # The objective's TC is over the dataset's N; the logged terms are the batch
    # mixture's (N = 1), which differ from it by constants only.
    log_q_given_x, log_q, log_q_product, log_prior = numpy_minibatch_weighted(
        z, mean, log_variance, dataset_size)
    dataset_tc = np.mean(log_q - log_q_product)
    np.testing.assert_allclose(loss, reconstruction + kl + (beta - 1) * dataset_tc, rtol=1e-5)
    log_q_given_x, log_q, log_q_product, log_prior = numpy_minibatch_weighted(
        z, mean, log_variance, 1)
    np.testing.assert_allclose(metrics["mi"], np.mean(log_q_given_x - log_q), rtol=1e-5)
    np.testing.assert_allclose(metrics["tc"], np.mean(log_q - log_q_product), rtol=1e-5,
                               atol=1e-5)
    np.testing.assert_allclose(metrics["dimension_wise_kl"],
                               np.mean(log_q_product - log_prior), rtol=1e-5)
    # The decomposition sums to the sampled KL estimate, log q(z | x) − log p(z).
    np.testing.assert_allclose(metrics["mi"] + metrics["tc"] + metrics["dimension_wise_kl"],
                               np.mean(log_q_given_x - log_prior), rtol=1e-5, atol=1e-5)


def test_beta_tc_vae_with_beta_one_is_the_vae():
    model = LinearVAE()
    tc_loss, _ = vae_objectives.beta_tc_vae_loss(PARAMS, BATCH, RNG, model=model, beta=1.0,
                                                 dataset_size=50)
    vae_loss, _ = vae_objectives.beta_vae_loss(PARAMS, BATCH, RNG, model=model, beta=1.0)
    np.testing.assert_allclose(tc_loss, vae_loss, rtol=1e-6)


def sampled_posterior(mean, sigma, seed):
    noise = np.random.default_rng(seed).normal(size=mean.shape).astype(np.float32)
    return {"mean": mean, "log_variance": np.full_like(mean, np.log(sigma**2)),
            "z": mean + sigma * noise}


def test_total_correlation_is_near_zero_for_a_factorised_posterior_only():
    means = np.random.default_rng(0).normal(size=(2000, 2)).astype(np.float32)
    independent = sampled_posterior(means, 0.5, seed=1)
    equal = sampled_posterior(np.repeat(means[:, :1], 2, axis=1), 0.5, seed=1)

    def tc(terms, dataset_size):
        decomposition = vae_objectives.minibatch_weighted_kl_decomposition(terms,
                                                                           dataset_size)
        return float(jnp.mean(decomposition["tc"]))

    # With N = 1 q(z) is the batch's own mixture: its TC is ≈ 0 when the latents are
    # independent, and the mutual information −½·log(1 − ρ²) ≈ 0.51 nats of the two
    # equal latents (ρ = 1 / 1.25) when they are not.
    assert abs(tc(independent, 1)) < 0.02
    assert tc(equal, 1) > 0.4
    # A dataset of N only adds the constant (d − 1)·log N.
    np.testing.assert_allclose(tc(independent, 1000) - tc(independent, 1), np.log(1000),
                               rtol=1e-5)


# --- DIP-VAE -------------------------------------------------------------------

SQUARE = np.array([[1.0, 1.0], [1.0, -1.0], [-1.0, 1.0], [-1.0, -1.0]], np.float32)


def dip_penalties(covariance):
    terms = {"reconstruction": jnp.zeros(4), "kl": jnp.zeros((4, 2))}
    loss, metrics = vae_objectives.dip_regularised_loss(terms, covariance, lambda_od=10.0,
                                                        lambda_d_factor=10.0)
    return loss, metrics


def test_dip_penalty_vanishes_at_the_identity_covariance():
    # The corners of a square: mean 0, covariance I; scaled by √¾ with σ² = ¼ the
    # aggregate posterior's covariance is ¾·I + ¼·I.
    mean_covariance = vae_objectives.encoder_mean_covariance(SQUARE)
    aggregate = vae_objectives.aggregate_posterior_covariance(
        np.sqrt(0.75) * SQUARE, np.full_like(SQUARE, np.log(0.25)))
    for covariance in (mean_covariance, aggregate):
        np.testing.assert_allclose(covariance, np.eye(2), atol=1e-6)
        loss, metrics = dip_penalties(covariance)
        assert float(loss) < 1e-9
        assert float(metrics["off_diagonal_penalty"]) < 1e-12
        assert float(metrics["diagonal_penalty"]) < 1e-12


def test_dip_penalty_by_hand():
    loss, metrics = dip_penalties(jnp.array([[2.0, 0.5], [0.5, 0.0]]))
    # off-diagonal 2·0.5² = 0.5, diagonal (2 − 1)² + (0 − 1)² = 2; λ_od = 10, λ_d = 100.
    np.testing.assert_allclose(metrics["off_diagonal_penalty"], 0.5)
    np.testing.assert_allclose(metrics["diagonal_penalty"], 2.0)
    np.testing.assert_allclose(loss, 10 * 0.5 + 100 * 2.0)


@pytest.mark.parametrize("name", ["dip_vae_i", "dip_vae_ii"])
def test_dip_vae_losses_equal_the_hand_computation(name):
    lambda_od, lambda_d_factor = 10.0, 2.0
    loss, metrics = vae_objectives.LOSSES[name](
        PARAMS, BATCH, RNG, model=LinearVAE(), lambda_od=lambda_od,
        lambda_d_factor=lambda_d_factor)
    mean, log_variance, _, reconstruction, kl = numpy_pass()
    covariance = np.cov(mean.T, bias=True)
    if name == "dip_vae_ii":
        covariance += np.diag(np.exp(log_variance).mean(axis=0))
    off_diagonal = covariance[0, 1] ** 2 + covariance[1, 0] ** 2
    diagonal = np.sum((np.diag(covariance) - 1) ** 2)
    np.testing.assert_allclose(metrics["off_diagonal_penalty"], off_diagonal, rtol=1e-5)
    np.testing.assert_allclose(metrics["diagonal_penalty"], diagonal, rtol=1e-5)
    np.testing.assert_allclose(
        loss, reconstruction + kl + lambda_od * (off_diagonal + lambda_d_factor * diagonal),
        rtol=1e-5)


# --- weights, context arguments and binding --------------------------------------

def test_step_and_dataset_size_are_not_weights():
    assert vae_objectives.loss_weight_names("annealed_vae") == (
        "gamma", "c_max", "iteration_threshold")
    assert vae_objectives.loss_weight_names("beta_tc_vae") == ("beta",)
    assert vae_objectives.loss_weight_names("dip_vae_ii") == ("lambda_od", "lambda_d_factor")
    with pytest.raises(ValueError, match="vae.objective.step is not a weight"):
        vae_objectives.check_objective_config(ml_collections.ConfigDict(
            {"name": "annealed_vae", "gamma": 1.0, "c_max": 1.0,
             "iteration_threshold": 1, "step": 3}))


def test_negative_new_weight_names_its_field():
    objective = {"name": "dip_vae_i", "lambda_od": -1.0, "lambda_d_factor": 10.0}
    with pytest.raises(ValueError, match=r"^vae.objective.lambda_od must be >= 0, got -1.0$"):
        vae_objectives.check_objective_config(ml_collections.ConfigDict(objective))


def test_bind_loss_supplies_the_dataset_size_only_where_declared():
    tc_objective = ml_collections.ConfigDict({"name": "beta_tc_vae", "beta": 2.0})
    with pytest.raises(ValueError, match="'beta_tc_vae' loss needs the training split's size"):
        vae_objectives.bind_loss(tc_objective, LinearVAE())
    bound = vae_objectives.bind_loss(tc_objective, LinearVAE(), dataset_size=50)
    want, _ = vae_objectives.beta_tc_vae_loss(PARAMS, BATCH, RNG, model=LinearVAE(),
                                              beta=2.0, dataset_size=50)
    np.testing.assert_allclose(bound(PARAMS, BATCH, RNG)[0], want, rtol=1e-6)
    beta_vae = vae_objectives.bind_loss(
        ml_collections.ConfigDict({"name": "beta_vae", "beta": 1.0}), LinearVAE(),
        dataset_size=50)
    assert "dataset_size" not in beta_vae.keywords
    annealed = vae_objectives.bind_loss(ml_collections.ConfigDict(
        {"name": "annealed_vae", "gamma": 1.0, "c_max": 1.0, "iteration_threshold": 1}),
        LinearVAE())
    assert vae_objectives.takes_argument(annealed, "step")
    assert not vae_objectives.takes_argument(beta_vae, "step")
