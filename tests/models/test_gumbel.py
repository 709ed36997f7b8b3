import jax
import jax.numpy as jnp
import numpy as np
import pytest

from causal_disent.models import gumbel

LOGITS = np.array([-3.0, -1.0, 0.0, 0.5, 2.0], np.float32)


def numpy_sigmoid(x):
    return 1.0 / (1.0 + np.exp(-np.asarray(x, np.float64)))


def test_logistic_noise_is_finite_with_logistic_moments():
    noise = np.asarray(gumbel.logistic_noise(jax.random.key(0), (200_000,)))
    assert np.all(np.isfinite(noise))
    # Logistic(0, 1): mean 0, variance π²/3.
    assert abs(noise.mean()) < 0.03
    assert noise.var() == pytest.approx(np.pi**2 / 3, rel=0.03)


@pytest.mark.parametrize("temperature", [0.1, 1.0, 5.0])
def test_straight_through_samples_are_exactly_binary(temperature):
    logits = jnp.asarray(np.linspace(-50.0, 50.0, 101), jnp.float32)
    logits = jnp.broadcast_to(logits, (64, 101))
    samples = gumbel.straight_through_bernoulli(jax.random.key(1), logits, temperature)
    assert set(np.unique(np.asarray(samples)).tolist()) <= {0.0, 1.0}


def test_frequency_of_ones_matches_sigmoid_of_logits():
    num_samples = 20_000
    logits = jnp.broadcast_to(LOGITS, (num_samples, LOGITS.size))
    samples = np.asarray(gumbel.straight_through_bernoulli(jax.random.key(2), logits))
    probs = numpy_sigmoid(LOGITS)
    binomial_std = np.sqrt(probs * (1 - probs) / num_samples)
    np.testing.assert_array_less(np.abs(samples.mean(axis=0) - probs), 4 * binomial_std)


def test_straight_through_gradient_is_the_relaxed_samples_gradient():
    rng = jax.random.key(3)
    weights = np.random.default_rng(0).normal(size=LOGITS.shape).astype(np.float32)

    def weighted(sampler):
        return lambda logits: jnp.sum(weights * sampler(rng, logits, 0.7))

    hard_grad = jax.grad(weighted(gumbel.straight_through_bernoulli))(LOGITS)
    relaxed_grad = jax.grad(weighted(gumbel.relaxed_bernoulli))(LOGITS)
    assert np.all(np.asarray(hard_grad) != 0.0)
    np.testing.assert_allclose(hard_grad, relaxed_grad, rtol=1e-6)


def test_hard_sample_is_the_rounded_relaxed_sample_for_the_same_key():
    logits = jnp.broadcast_to(LOGITS, (100, LOGITS.size))
    rng = jax.random.key(4)
    relaxed = gumbel.relaxed_bernoulli(rng, logits)
    hard = gumbel.straight_through_bernoulli(rng, logits)
    np.testing.assert_array_equal(hard, (relaxed > 0.5).astype(np.float32))


def test_relaxed_values_lie_in_the_open_unit_interval_and_sharpen_as_tau_falls():
    logits = jnp.broadcast_to(LOGITS, (2_000, LOGITS.size))
    rng = jax.random.key(5)
    distances_to_binary = []
    for temperature in [5.0, 1.0, 0.1, 0.01]:
        relaxed = np.asarray(gumbel.relaxed_bernoulli(rng, logits, temperature))
        if temperature >= 1.0:  # low τ saturates to exactly 0/1 in float32
            assert np.all((relaxed > 0) & (relaxed < 1))
        distances_to_binary.append(np.minimum(relaxed, 1 - relaxed).mean())
    assert np.all(np.diff(distances_to_binary) < 0)
    assert distances_to_binary[-1] < 0.005  # ≈ τ·density of l + L at 0·2 log 2


def test_bernoulli_log_prob_matches_direct_formula_and_is_finite_when_saturated():
    values = np.array([1, 0, 1, 0, 1], np.float32)
    probs = numpy_sigmoid(LOGITS)
    expected = np.where(values == 1, np.log(probs), np.log(1 - probs))
    log_prob = gumbel.bernoulli_log_prob(LOGITS, values)
    np.testing.assert_allclose(log_prob, expected, rtol=1e-5)

    saturated_logits, wrong_values = jnp.array([50.0, -50.0]), jnp.array([0.0, 1.0])
    saturated = gumbel.bernoulli_log_prob(saturated_logits, wrong_values)
    np.testing.assert_allclose(saturated, [-50.0, -50.0], rtol=1e-6)


def test_bernoulli_kl_to_uniform_matches_numpy_and_is_zero_only_at_zero():
    logits = np.array([-6.0, -2.0, -0.3, 0.3, 1.0, 4.0], np.float32)
    probs = numpy_sigmoid(logits)
    expected = probs * np.log(2 * probs) + (1 - probs) * np.log(2 * (1 - probs))
    kl = np.asarray(gumbel.bernoulli_kl_to_uniform(logits))
    np.testing.assert_allclose(kl, expected, rtol=1e-5, atol=1e-7)
    assert np.all(kl > 0)
    kl_at_zero = float(gumbel.bernoulli_kl_to_uniform(jnp.float32(0.0)))
    assert kl_at_zero == pytest.approx(0.0, abs=1e-7)


def test_bernoulli_kl_to_uniform_is_finite_at_large_logits():
    logits = jnp.array([-50.0, 50.0])
    kl = gumbel.bernoulli_kl_to_uniform(logits)
    np.testing.assert_allclose(kl, [np.log(2.0)] * 2, rtol=1e-6)
    grad = jax.grad(lambda l: gumbel.bernoulli_kl_to_uniform(l).sum())(logits)
    assert np.all(np.isfinite(np.asarray(grad)))


def test_bernoulli_mode_is_the_most_likely_value_without_gradient():
    logits = jnp.array([-3.0, -1e-3, 0.0, 1e-3, 5.0])
    np.testing.assert_array_equal(gumbel.bernoulli_mode(logits), [0.0, 0.0, 0.0, 1.0, 1.0])
    grad = jax.grad(lambda l: gumbel.bernoulli_mode(l).sum())(logits)
    np.testing.assert_array_equal(grad, np.zeros(5))


def test_noise_scale_one_is_the_paper_sampler_and_zero_the_most_likely_value():
    logits = jnp.broadcast_to(LOGITS, (50, LOGITS.size))
    rng = jax.random.key(5)
    paper = gumbel.straight_through_bernoulli(rng, logits)
    np.testing.assert_array_equal(
        jax.jit(lambda s: gumbel.straight_through_bernoulli(rng, logits, noise_scale=s))(1.0),
        paper)
    np.testing.assert_array_equal(gumbel.straight_through_bernoulli(rng, logits, noise_scale=0.0),
                                  gumbel.bernoulli_mode(logits))
    # In between it samples Bernoulli(σ(l / s)): by hand from the same logistic noise.
    noise = np.asarray(gumbel.logistic_noise(rng, logits.shape), np.float64)
    np.testing.assert_array_equal(
        gumbel.straight_through_bernoulli(rng, logits, noise_scale=0.3),
        (np.asarray(logits, np.float64) + 0.3 * noise > 0).astype(np.float32))
    # Its gradient is σ'((l + s·L) / τ) / τ at the logits.
    grad = jax.grad(lambda l: gumbel.straight_through_bernoulli(
        rng, l, 0.7, noise_scale=0.3).sum())(logits)
    z = (np.asarray(logits, np.float64) + 0.3 * noise) / 0.7
    np.testing.assert_allclose(grad, numpy_sigmoid(z) * (1 - numpy_sigmoid(z)) / 0.7, rtol=1e-5)
