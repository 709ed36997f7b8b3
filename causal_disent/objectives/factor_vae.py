"""FactorVAE's discriminator side (Kim & Mnih, "Disentangling by Factorising", ICML
2018, §3): samples of the product of the aggregate posterior's marginals, the total
correlation (TC) read off a discriminator's logits, and the discriminator's loss.

The discriminator D maps a latent sample z [B, d] to two logits: column 0 "z was
drawn from q(z)" (the joint), column 1 "z was drawn from Π_j q(z_j)" (the product of
its marginals). At its optimum, logit_0 − logit_1 = log q(z) − log Π_j q(z_j), so
TC(z) = KL(q(z) ‖ Π_j q(z_j)) ≈ E_q(z)[logit_0 − logit_1] (the density-ratio trick,
ibid. §3). objectives/vae.factor_vae_loss combines these with the VAE's terms.
"""

import jax
import jax.numpy as jnp

# disentanglement_lib clips the discriminator's probabilities before the log.
PROBABILITY_CLIP = 1e-6


def permute_dims(rng: jax.Array, latents: jax.Array) -> jax.Array:
    """Each latent's column of `latents` [B, d] permuted across the batch, every
    column by its own permutation (ibid., Algorithm 2): samples of the product of the
    batch's marginals. Inside a jitted step with the batch sharded the batch axis is
    the global batch, so the permutation is over the global batch."""
    return jax.random.permutation(rng, latents, axis=0, independent=True)


def density_ratio_total_correlation(joint_logits: jax.Array) -> jax.Array:
    """The TC estimate E_q(z)[log D(z) − log(1 − D(z))] = batch mean of logit_0 −
    logit_1, from the discriminator's logits [B, 2] on samples of q(z)."""
    return jnp.mean(joint_logits[:, 0] - joint_logits[:, 1])


def discriminator_cross_entropy(joint_logits: jax.Array,
                                product_logits: jax.Array) -> jax.Array:
    """The discriminator's loss: ½·(cross-entropy of its logits [B, 2] on q(z)'s
    samples against label 0 + on permute_dims' samples against label 1), batch means,
    with disentanglement_lib's clipping of the probabilities to [1e-6, 1 − 1e-6]."""

    def log_probability(logits, label):
        probability = jax.nn.softmax(logits)[:, label]
        return jnp.log(jnp.clip(probability, PROBABILITY_CLIP, 1.0 - PROBABILITY_CLIP))

    return -0.5 * (jnp.mean(log_probability(joint_logits, 0))
                   + jnp.mean(log_probability(product_logits, 1)))
