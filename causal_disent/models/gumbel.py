"""Binary Gumbel (logistic) relaxations and Bernoulli helpers, as pure functions.

A Bernoulli(σ(l)) sample is 1[l + L > 0] with L ~ Logistic(0, 1) (the difference of
two Gumbel variables), so the binary Gumbel-softmax trick needs one logistic draw per
element. The CT layer samples the intervention mask and the causal graph this way
(Gendron et al., "Disentanglement of Latent Representations via Causal Interventions",
IJCAI 2023, §3.4–3.5: straight-through, τ = 1, after Jang et al., "Categorical
Reparameterization with Gumbel-Softmax", ICLR 2017); the Bernoulli KL to the uniform
prior is the graph regulariser of Gendron et al.'s Eq. 11–13.
"""

import jax
import jax.numpy as jnp


def logistic_noise(
    rng: jax.Array, shape: tuple[int, ...], dtype=jnp.float32
) -> jax.Array:
    """Standard logistic noise log u − log(1 − u), u ~ U(0, 1).

    Args:
      rng: a PRNG key.
      shape: output shape.
      dtype: a floating dtype.
    Returns:
      [*shape] samples, always finite.
    """
    # u = 0 would give log 0 = −inf; the smallest normal float keeps it finite. The
    # upper end is safe as drawn: U[0, 1) in float32 is at most 1 − 2⁻²³ (and
    # log1p(−u) is accurate there).
    uniform = jax.random.uniform(
        rng, shape, dtype=dtype, minval=jnp.finfo(dtype).tiny, maxval=1.0
    )
    return jnp.log(uniform) - jnp.log1p(-uniform)


def gumbel_noise(rng: jax.Array, shape: tuple[int, ...], dtype=jnp.float32) -> jax.Array:
    """Standard Gumbel noise −log(−log u), u ~ U(0, 1), always finite."""
    uniform = jax.random.uniform(
        rng, shape, dtype=dtype, minval=jnp.finfo(dtype).tiny, maxval=1.0
    )
    return -jnp.log(-jnp.log(uniform))


def relaxed_bernoulli(
    rng: jax.Array, logits: jax.Array, temperature: float = 1.0
) -> jax.Array:
    """Binary-concrete sample σ((logits + L) / τ), L ~ Logistic(0, 1).

    Args:
      rng: a PRNG key.
      logits: [...] Bernoulli logits l (probability σ(l)).
      temperature: τ > 0; as τ → 0 the samples approach {0, 1}.
    Returns:
      [...] values in (0, 1) (float32 rounds to exactly 0 or 1 once
      |l + L| / τ exceeds ~17, which only matters for the gradient, not the value).
    """
    noise = logistic_noise(rng, jnp.shape(logits), jnp.result_type(logits, jnp.float32))
    return jax.nn.sigmoid((logits + noise) / temperature)


def straight_through_bernoulli(
    rng: jax.Array, logits: jax.Array, temperature: float = 1.0,
    noise_scale: float | jax.Array = 1.0,
) -> jax.Array:
    """Hard Bernoulli(σ(logits)) sample with the relaxed sample's gradient.

    Forward: exactly 0. or 1. (1 where the relaxed sample exceeds 0.5, i.e. where
    logits + s·L > 0, so the hard sample is Bernoulli(σ(l / s)) for every τ).
    Backward: the gradient of σ((logits + s·L) / τ).

    Args:
      rng: a PRNG key.
      logits: [...] Bernoulli logits.
      temperature: τ of the relaxation (it only changes the gradient).
      noise_scale: s ≥ 0 scaling the logistic noise: 1 samples Bernoulli(σ(l)); 0
        gives the most likely value 1[l > 0] (with the relaxation's gradient at the
        logits), so lowering s over training moves the samples toward the structure
        that the most-likely evaluation takes.
    Returns:
      [...] float samples in {0, 1}.
    """
    if isinstance(noise_scale, (int, float)) and noise_scale == 1.0:
        relaxed = relaxed_bernoulli(rng, logits, temperature)  # the paper's sampler
    else:
        noise = logistic_noise(rng, jnp.shape(logits), jnp.result_type(logits, jnp.float32))
        relaxed = jax.nn.sigmoid((logits + noise_scale * noise) / temperature)
    hard = (relaxed > 0.5).astype(relaxed.dtype)
    # relaxed + (hard − relaxed) is exactly hard in floating point: 0 when hard = 0,
    # and for hard = 1 the difference 1 − r with r ∈ (0.5, 1] is exact (Sterbenz).
    return relaxed + jax.lax.stop_gradient(hard - relaxed)


def bernoulli_mode(logits: jax.Array) -> jax.Array:
    """The most likely value of Bernoulli(σ(logits)): 1. where σ(l) > 0.5 (l > 0),
    else 0. (ties go to 0). No randomness and no gradient: an evaluation-time
    stand-in for `straight_through_bernoulli`.

    Args:
      logits: [...] Bernoulli logits.
    Returns:
      [...] float values in {0, 1}.
    """
    return jax.lax.stop_gradient((logits > 0).astype(jnp.result_type(logits, jnp.float32)))


def bernoulli_log_prob(logits: jax.Array, values: jax.Array) -> jax.Array:
    """log Bernoulli(values; σ(logits)), elementwise.

    Args:
      logits: [...] Bernoulli logits l.
      values: [...] in {0, 1} (floats are allowed; the result is then the
        interpolation v·log σ(l) + (1 − v)·log σ(−l), differentiable in v).
    Returns:
      [...] log σ(l) where v = 1 and log σ(−l) where v = 0.
    """
    # log_sigmoid avoids log(σ(l)) = log 0 for very negative l.
    return values * jax.nn.log_sigmoid(logits) + (1.0 - values) * jax.nn.log_sigmoid(
        -logits
    )


def bernoulli_kl_to_uniform(logits: jax.Array) -> jax.Array:
    """KL(Bernoulli(σ(l)) ‖ Bernoulli(0.5)), elementwise (paper Eq. 11–13).

    KL = p·log 2p + (1 − p)·log 2(1 − p) = log 2 + p·log p + (1 − p)·log(1 − p),
    with p = σ(l), log p = log σ(l) and log(1 − p) = log σ(−l) so that saturated
    logits (p = 0 or 1 in float) give 0·(finite) instead of 0·log 0 = NaN.

    Args:
      logits: [...] edge logits.
    Returns:
      [...] KL ≥ 0 (up to rounding), 0 at l = 0, → log 2 as |l| → ∞.
    """
    prob = jax.nn.sigmoid(logits)
    negative_entropy = prob * jax.nn.log_sigmoid(logits) + (1.0 - prob) * (
        jax.nn.log_sigmoid(-logits)
    )
    return jnp.log(2.0) + negative_entropy
