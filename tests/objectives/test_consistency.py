"""Consistency training (objectives/consistency.py): the sampling helpers, both
penalties against a NumPy hand computation on a linear stand-in with a linear
"XBlock", the wrapper that adds them to a loss, and the section's checks."""

import flax.linen as nn
import jax
import jax.numpy as jnp
import ml_collections
import numpy as np
import pytest

from causal_disent.objectives import consistency
from causal_disent.objectives.vae import TRAIN_STEP, takes_argument

ENCODER = np.array([[1.0, 0.5], [-0.5, 1.0], [0.3, -0.2], [0.0, 0.8]], np.float32)  # 4 px -> 2
DECODER = np.array([[0.7, -0.4, 1.2, 0.1], [0.2, 0.9, -0.6, 1.0]], np.float32)  # 2 -> 4 px
MIXING = np.array([[1.0, 0.0], [0.8, 1.0]], np.float32)  # Z = N·MIXINGᵀ: unit 1 reads unit 0


class LinearAutoencoder(nn.Module):
    """2x2x1 images, a linear encoder mean, linear decoder logits; with `mixed`, a
    linear stand-in for an XBlock, Z_1 = N_1, Z_2 = 0.8·Z_1 + N_2, before the decoder."""

    mixed: bool = False

    @property
    def xblock(self):
        return True if self.mixed else None

    def setup(self):
        self.encoder = self.param("encoder", lambda *_: jnp.asarray(ENCODER))
        self.decoder = self.param("decoder", lambda *_: jnp.asarray(DECODER))

    def encode(self, images):
        mean = images.reshape(images.shape[0], -1) @ self.encoder
        return mean, jnp.zeros_like(mean)

    def causes(self, latents, step=None):
        return latents @ jnp.asarray(MIXING).T if self.mixed else latents

    def decode(self, latents, step=None):
        return (self.causes(latents) @ self.decoder).reshape(-1, 2, 2, 1)

    def __call__(self, images):
        return self.decode(self.encode(images)[0])


PARAMS = {"encoder": ENCODER, "decoder": DECODER}
IMAGES = np.random.default_rng(0).uniform(size=(6, 2, 2, 1)).astype(np.float32)


def test_hybrid_samples_draw_each_unit_from_its_own_column():
    encodings = jnp.arange(12.0).reshape(6, 2) * jnp.array([1.0, 100.0])
    samples = np.asarray(consistency.hybrid_samples(jax.random.key(0), encodings))
    for unit in range(2):
        assert set(samples[:, unit]) <= set(np.asarray(encodings)[:, unit])
    many = np.asarray(consistency.hybrid_samples(jax.random.key(1), jnp.tile(encodings, (50, 1))))
    # Rows are recombined: some row pairs no encoding had.
    assert not {tuple(row) for row in many} <= {tuple(row) for row in np.asarray(encodings)}


def test_single_unit_interventions_change_one_unit_to_an_encoded_value():
    encodings = jnp.asarray(np.random.default_rng(1).normal(size=(8, 3)), jnp.float32)
    noise = jnp.zeros((8, 3))
    intervened, one_hot = consistency.single_unit_interventions(jax.random.key(2), noise,
                                                                encodings)
    assert np.all(np.asarray(one_hot).sum(axis=1) == 1)
    np.testing.assert_array_equal(np.asarray(intervened)[np.asarray(one_hot) == 0], 0.0)
    for row, unit in zip(np.asarray(intervened), np.asarray(one_hot).argmax(axis=1)):
        assert row[unit] in np.asarray(encodings)[:, unit]


def hand_draws(rng):
    """The penalties' draws, by the same helpers and keys as the function: encodings,
    base noise N, intervened noise I N and the one-hot of the intervened units."""
    prior_rng, intervention_rng = jax.random.split(rng)
    encodings = IMAGES.reshape(6, 4).astype(np.float64) @ ENCODER
    noise = np.asarray(consistency.hybrid_samples(prior_rng, jnp.asarray(encodings, jnp.float32)),
                       np.float64)
    intervened, one_hot = map(np.asarray, consistency.single_unit_interventions(
        intervention_rng, jnp.asarray(noise, jnp.float32), jnp.asarray(encodings, jnp.float32)))
    return noise, intervened.astype(np.float64), one_hot


@pytest.mark.parametrize("mixed", [False, True])
@pytest.mark.parametrize("error, equivariance", [("l2", "commute"), ("squared", "self")])
def test_penalties_equal_the_hand_computation(mixed, error, equivariance):
    """("l2", "commute") is the authors' code (GiuliaLanzillotta/CausalAE, models/CAE.py
    `compute_invariance_loss` / `compute_equivariance_loss`, with
    metrics/LatentInvariance.py `compute_absolute_errors`: the unsquared norm of each
    unit's error, the diagonal left out of the invariance and kept in the
    equivariance, both over n units; the equivariance compares X(I(R(N))) with
    X(R(I(N)))); ("squared", "self") this project's earlier reading."""
    model = LinearAutoencoder(mixed=mixed)
    rng = jax.random.key(3)
    penalties = consistency.consistency_penalties(PARAMS, model, IMAGES, rng, error=error,
                                                  equivariance=equivariance)
    noise, intervened, one_hot = hand_draws(rng)
    mix = MIXING.astype(np.float64) if mixed else np.eye(2)

    def respond(n):  # E(σ(D(X(N))))
        return 1 / (1 + np.exp(-(n @ mix.T @ DECODER))) @ ENCODER

    def distance(a, b):  # one-dimensional units: |a − b| or (a − b)²
        return np.abs(a - b) if error == "l2" else (a - b) ** 2

    plain, after = respond(noise), respond(intervened)
    invariance = ((1 - one_hot) * distance(after, plain)).sum(axis=1).mean() / 2
    if equivariance == "commute":  # X(I R(N)) against X(R(I N))
        first, second = np.where(one_hot == 1, intervened, plain) @ mix.T, after @ mix.T
    else:  # X(I R(I N)) against X(I N)
        first, second = np.where(one_hot == 1, intervened, after) @ mix.T, intervened @ mix.T
    equivariance_value = distance(first, second).sum(axis=1).mean() / 2
    np.testing.assert_allclose(penalties["invariance"], invariance, rtol=1e-4)
    np.testing.assert_allclose(penalties["equivariance"], equivariance_value, rtol=1e-4)
    assert invariance > 0 and equivariance_value > 0


def test_standard_normal_base_samples_ignore_the_encodings():
    encodings = jnp.full((4000, 2), 7.0)
    samples = np.asarray(consistency.base_samples(jax.random.key(0), encodings,
                                                  "standard_normal"))
    assert samples.shape == (4000, 2)
    np.testing.assert_allclose(samples.mean(axis=0), 0.0, atol=0.06)  # 4 standard errors
    np.testing.assert_allclose(samples.std(axis=0), 1.0, atol=0.05)
    np.testing.assert_array_equal(
        consistency.base_samples(jax.random.key(0), encodings, "posterior"), encodings)


def test_posterior_samples_have_the_posteriors_mean_and_variance():
    mean = jnp.tile(jnp.array([[-2.0, 3.0]]), (20_000, 1))
    log_variance = jnp.tile(jnp.log(jnp.array([[0.25, 4.0]])), (20_000, 1))
    samples = np.asarray(consistency.posterior_samples(jax.random.key(1), mean, log_variance))
    np.testing.assert_allclose(samples.mean(axis=0), [-2.0, 3.0], atol=0.06)
    np.testing.assert_allclose(samples.var(axis=0), [0.25, 4.0], rtol=0.05)


def test_the_authors_variational_sampling_equals_the_hand_computation():
    """The authors' XCVAE (GiuliaLanzillotta/CausalAE, models/CAE.py with
    `VAEBase.sample_noise_from_prior` and `sample_noise_from_posterior`): base samples
    from N(0, I), intervention values from z ~ q(z | x); here q's log-variance is 0,
    so z = mean + ε. The other draws keep their keys: only the values change."""
    rng = jax.random.key(3)
    penalties = consistency.consistency_penalties(
        PARAMS, LinearAutoencoder(), IMAGES, rng, "standard_normal",
        intervention_values="posterior_samples")
    prior_rng, intervention_rng = jax.random.split(rng)
    means = IMAGES.reshape(6, 4).astype(np.float64) @ ENCODER
    values = means + np.asarray(jax.random.normal(jax.random.fold_in(rng, 1), (6, 2)))
    noise = np.asarray(jax.random.normal(prior_rng, (6, 2)), np.float64)
    intervened, one_hot = map(np.asarray, consistency.single_unit_interventions(
        intervention_rng, jnp.asarray(noise, jnp.float32), jnp.asarray(values, jnp.float32)))
    # Each intervened value is a posterior sample, not a mean.
    assert not np.isin(intervened[one_hot == 1], means.astype(np.float32)).any()
    assert np.isin(intervened[one_hot == 1], values.astype(np.float32)).all()

    def respond(n):
        return 1 / (1 + np.exp(-(n @ DECODER))) @ ENCODER

    plain, after = respond(noise), respond(intervened.astype(np.float64))
    invariance = ((1 - one_hot) * np.abs(after - plain)).sum(axis=1).mean() / 2
    equivariance = np.abs(np.where(one_hot == 1, intervened, plain) - after).sum(axis=1).mean() / 2
    np.testing.assert_allclose(penalties["invariance"], invariance, rtol=1e-4)
    np.testing.assert_allclose(penalties["equivariance"], equivariance, rtol=1e-4)


def test_the_two_equivariance_pairings_differ_for_a_response_that_is_not_the_identity():
    values = [consistency.consistency_penalties(PARAMS, LinearAutoencoder(), IMAGES,
                                                jax.random.key(3), equivariance=kind)
              for kind in consistency.EQUIVARIANCES]
    assert abs(float(values[0]["equivariance"]) - float(values[1]["equivariance"])) > 1e-3


def test_no_gradient_reaches_the_penalties_through_the_base_response():
    """The authors compute N and R(N) under torch.no_grad (models/CAE.py): the
    invariance penalty's gradient is that of d(R(I N), c) with c = R(N) a constant
    (squared d here: the norm's subgradient where R(I N) = R(N) is a matter of
    convention)."""
    model, rng = LinearAutoencoder(), jax.random.key(3)
    noise, intervened, one_hot = hand_draws(rng)
    params = jax.tree.map(jnp.asarray, PARAMS)
    plain = consistency.response(params, model, jnp.asarray(noise, jnp.float32))

    def against_a_constant(p):
        after = consistency.response(p, model, jnp.asarray(intervened, jnp.float32))
        return jnp.mean(jnp.sum((1 - one_hot) * (after - plain) ** 2, axis=-1)) / 2

    grads = jax.grad(lambda p: consistency.consistency_penalties(
        p, model, IMAGES, rng, error="squared")["invariance"])(params)
    want = jax.grad(against_a_constant)(params)
    np.testing.assert_allclose(grads["decoder"], want["decoder"], rtol=1e-5, atol=1e-7)


def plain_loss(params, batch, rng):
    return jnp.sum(params["decoder"] ** 2), {"reconstruction": jnp.float32(1.0)}


def test_with_consistency_adds_the_weighted_penalties_and_keeps_the_loss_draws():
    model = LinearAutoencoder()
    section = ml_collections.ConfigDict({"invariance_weight": 4.0, "equivariance_weight": 0.5,
                                         "prior": "hybrid"})
    wrapped = consistency.with_consistency(plain_loss, model, section)
    batch, rng = {"image": (IMAGES * 255).astype(np.uint8)}, jax.random.key(5)
    loss, metrics = wrapped(PARAMS, batch, rng)
    base, _ = plain_loss(PARAMS, batch, rng)
    expected = (base + 4.0 * metrics["invariance_penalty"]
                + 0.5 * metrics["equivariance_penalty"])
    np.testing.assert_allclose(loss, expected, rtol=1e-6)
    assert metrics["reconstruction"] == 1.0 and metrics["invariance_penalty"] > 0
    # Differentiable in the decoder (the penalties train the response map).
    grads = jax.grad(lambda p: wrapped(p, batch, rng)[0] - plain_loss(p, batch, rng)[0])(
        jax.tree.map(jnp.asarray, PARAMS))
    assert float(jnp.abs(grads["decoder"]).sum()) > 0


def test_weights_warm_up_linearly_over_the_first_steps_from_zero():
    """experiments/utils.py `linear_determ_warmup` of the authors' code:
    λ(step) = λ·min(step / 10 000, 1)."""
    section = {"invariance_weight": 4.0, "warmup_steps": 10_000}
    wrapped = consistency.with_consistency(plain_loss, LinearAutoencoder(), section)
    rng, image = jax.random.key(5), (IMAGES * 255).astype(np.uint8)
    base, _ = plain_loss(PARAMS, {}, rng)
    for step, fraction in [(0, 0.0), (2_500, 0.25), (10_000, 1.0), (50_000, 1.0)]:
        loss, metrics = wrapped(PARAMS, {"image": image, TRAIN_STEP: jnp.int32(step)}, rng)
        assert float(metrics["consistency_warmup"]) == pytest.approx(fraction)
        np.testing.assert_allclose(loss, base + fraction * 4.0 * metrics["invariance_penalty"],
                                   rtol=1e-6)


def test_a_wrapped_loss_keeps_its_signature():
    def loss_with_step(params, batch, rng, *, step):
        return jnp.float32(step), {}

    wrapped = consistency.with_consistency(
        loss_with_step, LinearAutoencoder(), {"invariance_weight": 1.0})
    assert takes_argument(wrapped, "step")


def test_enabled_only_with_a_positive_weight():
    assert not consistency.is_enabled(None)
    assert not consistency.is_enabled({"invariance_weight": 0.0, "equivariance_weight": 0.0})
    assert consistency.is_enabled({"invariance_weight": 0.0, "equivariance_weight": 4.0})


@pytest.mark.parametrize("section, message", [
    ({"invariance_weight": -1.0}, "vae.consistency.invariance_weight must be >= 0, got -1.0"),
    ({"equivariance_weight": float("nan")}, "equivariance_weight must be >= 0"),
    ({"invariance_weight": 4.0, "prior": "uniform"}, "vae.consistency.prior must be one of"),
    ({"invariance": 4.0}, "vae.consistency.invariance is unknown"),
    ({"error": "l1"}, r"vae.consistency.error must be one of \('l2', 'squared'\), got 'l1'"),
    ({"equivariance": "commutes"}, r"vae.consistency.equivariance must be one of "
                                   r"\('commute', 'self'\), got 'commutes'"),
    ({"warmup_steps": -1}, "vae.consistency.warmup_steps must be a whole number >= 0"),
    ({"warmup_steps": 2.5}, "vae.consistency.warmup_steps must be a whole number >= 0"),
    ({"intervention_values": "samples"}, r"vae.consistency.intervention_values must be "
                                         r"one of \('means', 'posterior_samples'\)"),
])
def test_bad_sections_are_named(section, message):
    with pytest.raises(ValueError, match=message):
        consistency.check_consistency_config(section)


@pytest.mark.parametrize("key, value", sorted(consistency.VARIATIONAL_ONLY.items()))
def test_a_deterministic_autoencoder_cannot_sample_a_prior_or_posterior(key, value):
    consistency.check_consistency_config({key: value})  # a variational loss may
    with pytest.raises(ValueError, match=f"vae.consistency.{key}='{value}' needs a "
                                         f"variational loss"):
        consistency.check_consistency_config({key: value}, variational=False)
