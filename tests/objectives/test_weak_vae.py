"""The weakly-supervised VAEs' loss (objectives/weak_vae.py) against hand computations
from Locatello et al., ICML 2020, §3: the adaptive threshold's choice of changed latents
on constructed pairs, both averagings (the group mean is the mean of the two means, not
their sum), and the whole loss against a numpy reference on a linear stand-in model."""

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from causal_disent.objectives import weak_vae
from causal_disent.objectives.vae import LOSSES, learns_from_pairs, loss_weight_names


def test_the_threshold_is_halfway_between_the_smallest_and_largest_distance():
    distance = jnp.array([[0.1, 5.0, 0.2, 4.0],   # τ = 2.55: latents 1 and 3 changed
                          [1.0, 1.0, 3.0, 2.0],   # τ = 2.0: 2.0 reaches it
                          [0.0, 0.0, 0.0, 9.0],   # one latent far from the rest
                          [0.7, 0.7, 0.7, 0.7]])  # no latent above another: none
    np.testing.assert_array_equal(weak_vae.changed_latents(distance), [
        [False, True, False, True],
        [False, False, True, True],
        [False, False, False, True],
        [False, False, False, False]])


def test_the_changed_latents_of_a_constructed_pair_keep_their_own_posteriors():
    # Latent 1 moves far, latents 0 and 2 barely: only 1 is taken as changed.
    mean_1 = jnp.array([[0.0, -2.0, 0.5]])
    mean_2 = jnp.array([[0.1, 2.0, 0.5]])
    log_variance_1 = jnp.log(jnp.array([[1.0, 0.5, 2.0]]))
    log_variance_2 = jnp.log(jnp.array([[1.0, 0.5, 2.0]]))
    out = weak_vae.shared_posteriors(mean_1, log_variance_1, mean_2, log_variance_2, "gvae")
    np.testing.assert_array_equal(out["changed"], [[False, True, False]])
    # δ_i = KL(N(μ1, σ1²) ‖ N(μ2, σ2²)), here with equal variances (μ1 − μ2)² / 2σ².
    np.testing.assert_allclose(out["distance"], [[0.005, 16.0, 0.0]], atol=1e-6)
    np.testing.assert_allclose(out["mean_1"], [[0.05, -2.0, 0.5]], atol=1e-6)
    np.testing.assert_allclose(out["mean_2"], [[0.05, 2.0, 0.5]], atol=1e-6)
    np.testing.assert_allclose(out["log_variance_1"], log_variance_1, atol=1e-6)


def test_the_gvae_average_is_the_mean_of_the_means_and_of_the_variances():
    # A PyTorch port once summed the two means: a shared latent at 1 and 3 must give 2.
    mean, log_variance = weak_vae.group_average(
        jnp.array([1.0]), jnp.log(jnp.array([1.0])), jnp.array([3.0]),
        jnp.log(jnp.array([3.0])), "gvae")
    np.testing.assert_allclose(mean, [2.0], rtol=1e-6)
    np.testing.assert_allclose(jnp.exp(log_variance), [2.0], rtol=1e-6)


def test_the_ml_vae_average_is_the_precision_weighted_product():
    # 1/σ² = ½(1/1 + 1/3) = 2/3, so σ² = 1.5; μ = 1.5·½(1/1 + 3/3) = 1.5.
    mean, log_variance = weak_vae.group_average(
        jnp.array([1.0]), jnp.log(jnp.array([1.0])), jnp.array([3.0]),
        jnp.log(jnp.array([3.0])), "ml_vae")
    np.testing.assert_allclose(jnp.exp(log_variance), [1.5], rtol=1e-6)
    np.testing.assert_allclose(mean, [1.5], rtol=1e-6)


@pytest.mark.parametrize("averaging", weak_vae.AVERAGINGS)
def test_averaging_two_equal_posteriors_gives_that_posterior(averaging):
    mean = jnp.array([0.3, -1.0])
    log_variance = jnp.array([-2.0, 40.0])  # the log-space forms stay finite
    average = weak_vae.group_average(mean, log_variance, mean, log_variance, averaging)
    np.testing.assert_allclose(average[0], mean, rtol=1e-6)
    np.testing.assert_allclose(average[1], log_variance, rtol=1e-6)


def test_an_unknown_averaging_is_refused():
    with pytest.raises(ValueError, match="unknown averaging 'mean'"):
        weak_vae.group_average(jnp.zeros(1), jnp.zeros(1), jnp.zeros(1), jnp.zeros(1), "mean")


class LinearStandIn(nn.Module):
    """The interface the loss uses (encode, decode, likelihood), linear maps of a
    [B, 2, 2, 1] image, so that a numpy reference can follow every term."""
    num_latents: int = 3
    likelihood: str = "bernoulli"

    def setup(self):
        self.to_mean = nn.Dense(self.num_latents)
        self.to_log_variance = nn.Dense(self.num_latents)
        self.to_logits = nn.Dense(4)

    def encode(self, images):
        flat = images.reshape(images.shape[0], -1)
        return self.to_mean(flat), self.to_log_variance(flat)

    def decode(self, latents):
        return self.to_logits(latents).reshape(latents.shape[0], 2, 2, 1)

    def __call__(self, images):
        return self.decode(self.encode(images)[0])


def reference_loss(params, x1, x2, epsilon, beta, averaging):
    """Locatello et al.'s loss for one batch in float64 numpy, from the equations:
    δ, τ, the averaged posteriors, the samples μ + σ·ε, Bernoulli NLL and the KL."""
    p = jax.tree.map(lambda a: np.asarray(a, np.float64), params)

    def dense(name, x):
        return x @ p[name]["kernel"] + p[name]["bias"]

    flat = [x.reshape(len(x), -1) for x in (x1, x2)]
    (m1, m2), (l1, l2) = ([dense("to_mean", f) for f in flat],
                          [dense("to_log_variance", f) for f in flat])
    v1, v2 = np.exp(l1), np.exp(l2)
    delta = 0.5 * (l2 - l1 + (v1 + (m1 - m2) ** 2) / v2 - 1)
    tau = 0.5 * (delta.max(1, keepdims=True) + delta.min(1, keepdims=True))
    changed = delta >= tau
    if averaging == "gvae":
        mean, variance = 0.5 * (m1 + m2), 0.5 * (v1 + v2)
    else:
        variance = 2 * v1 * v2 / (v1 + v2)
        mean = 0.5 * (m1 / v1 + m2 / v2) * variance
    reconstruction, kl = 0.0, 0.0
    for j, (m, v, x) in enumerate(((m1, v1, flat[0]), (m2, v2, flat[1]))):
        m = np.where(changed, m, mean)
        v = np.where(changed, v, variance)
        z = m + np.sqrt(v) * epsilon[j]
        logits = dense("to_logits", z)
        bce = np.maximum(logits, 0) - logits * x + np.log1p(np.exp(-np.abs(logits)))
        reconstruction += 0.5 * bce.sum(1).mean()
        kl += 0.5 * (0.5 * (m**2 + v - np.log(v) - 1)).sum(1).mean()
    return reconstruction + beta * kl, changed.sum(1).mean()


@pytest.mark.parametrize("name, averaging", [("ada_gvae", "gvae"), ("ada_ml_vae", "ml_vae")])
def test_the_loss_equals_the_papers_equations_by_hand(name, averaging):
    model = LinearStandIn()
    rng = np.random.default_rng(0)
    x1, x2 = (rng.integers(0, 256, (5, 2, 2, 1)).astype(np.uint8) for _ in range(2))
    params = model.init(jax.random.key(0), jnp.zeros((1, 2, 2, 1)))["params"]
    sample_rng = jax.random.key(3)
    loss, metrics = LOSSES[name](params, {"image": x1, weak_vae.PAIR_IMAGE: x2}, sample_rng,
                                 model=model, beta=2.5)
    # The loss samples both images' latents as one batch [2B, d]: the same ε here.
    epsilon = np.asarray(jax.random.normal(sample_rng, (10, 3)), np.float64).reshape(2, 5, 3)
    want, changed = reference_loss(params, x1 / 255.0, x2 / 255.0, epsilon, 2.5, averaging)
    np.testing.assert_allclose(loss, want, rtol=2e-5)
    np.testing.assert_allclose(metrics["changed_latents"], changed, rtol=1e-6)


def test_the_pair_losses_are_registered_with_beta_as_their_one_weight():
    for name in ("ada_gvae", "ada_ml_vae"):
        assert learns_from_pairs(name)
        assert loss_weight_names(name) == ("beta",)
    assert not learns_from_pairs("beta_vae")
