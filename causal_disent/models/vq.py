"""Vector quantiser with several codebooks: the "multi-codebook" of MCQ-VAE (Gendron et
al., "Disentanglement of Latent Representations via Causal Interventions", IJCAI 2023,
§3.3), each codebook trained with the VQ-VAE loss (van den Oord et al., "Neural
Discrete Representation Learning", NeurIPS 2017, §3.2, Eq. 3).

The D latent channels are split into C contiguous chunks, chunk c holding channels
[c·D/C, (c+1)·D/C); each chunk is quantised against its own codebook of K vectors.
(The authors' code slices [c : c + D/C], which leaves most channels unused with
C = 4; we do the split the paper describes.)
"""

import chex
import flax.linen as nn
import jax
import jax.numpy as jnp


def split_codebook_chunks(latents: jax.Array, num_codebooks: int) -> jax.Array:
    """[B, H, W, D] -> [B, H, W, C, D/C], chunk c = channels [c·D/C, (c+1)·D/C)."""
    *lead, dim = latents.shape
    if dim % num_codebooks:
        raise ValueError(
            f"latent dim {dim} is not divisible by num_codebooks {num_codebooks}"
        )
    return latents.reshape(*lead, num_codebooks, dim // num_codebooks)


def nearest_codes(chunks: jax.Array, codebooks: jax.Array) -> jax.Array:
    """Index of the nearest codebook vector (L2) for each chunk.

    Args:
      chunks: [..., C, d] latent chunks.
      codebooks: [C, K, d] one codebook per chunk position.
    Returns:
      [..., C] int32 code indices.
    """
    # ‖z − e‖² = ‖z‖² − 2 z·e + ‖e‖²; ‖z‖² does not change the argmin.
    cross = jnp.einsum("...cd,ckd->...ck", chunks, codebooks)
    code_norms = jnp.sum(codebooks**2, axis=-1)  # [C, K]
    return jnp.argmin(code_norms - 2.0 * cross, axis=-1).astype(jnp.int32)


def lookup_codes(codes: jax.Array, codebooks: jax.Array) -> jax.Array:
    """codes [..., C] -> codebook vectors [..., C, d]."""
    num_codebooks = codebooks.shape[0]
    return codebooks[jnp.arange(num_codebooks), codes]


def codebook_perplexity(codes: jax.Array, num_codes: int) -> jax.Array:
    """exp(entropy) of each codebook's code histogram over the batch.

    Args:
      codes: [B, H, W, C] int codes.
    Returns:
      [C] perplexities in [1, K]; K means every code is used equally.
    """
    one_hot = jax.nn.one_hot(codes.reshape(-1, codes.shape[-1]), num_codes)
    probs = one_hot.mean(axis=0)  # [C, K]
    entropy = -jnp.sum(jnp.where(probs > 0, probs * jnp.log(probs), 0.0), axis=-1)
    return jnp.exp(entropy)


def codebook_usage(codes: jax.Array, num_codes: int) -> jax.Array:
    """[C] fraction of each codebook's K codes used at least once in the batch."""
    one_hot = jax.nn.one_hot(codes.reshape(-1, codes.shape[-1]), num_codes)
    return (one_hot.sum(axis=0) > 0).mean(axis=-1)


class MultiCodebookQuantizer(nn.Module):
    """Quantises [B, H, W, D] latents with C codebooks of K codes each.

    `__call__` returns a dict with
      quantized: [B, H, W, D] straight-through quantised latents
        (forward: codebook vectors; backward: identity to the latents),
      codes: [B, C, H, W] int32 code indices (codebook-major, as the CT layer reads
        them),
      vq_loss: scalar, Σ_c β·‖sg(q) − z‖² + ‖q − sg(z)‖² (means over elements),
      perplexity, usage: [C] per-codebook statistics of the batch.
    """

    latent_dim: int
    num_codebooks: int
    num_codes: int
    commitment_cost: float  # β

    def setup(self):
        if self.latent_dim % self.num_codebooks:
            raise ValueError(
                f"latent_dim {self.latent_dim} is not divisible by num_codebooks "
                f"{self.num_codebooks}"
            )
        bound = 1.0 / self.num_codes  # the authors' U(−1/K, 1/K) initialisation

        def init(key, shape):
            return jax.random.uniform(key, shape, minval=-bound, maxval=bound)

        chunk_dim = self.latent_dim // self.num_codebooks
        self.codebooks = self.param(
            "codebooks", init, (self.num_codebooks, self.num_codes, chunk_dim)
        )

    def __call__(self, latents: jax.Array) -> dict[str, jax.Array]:
        chex.assert_rank(latents, 4)
        chex.assert_axis_dimension(latents, -1, self.latent_dim)
        chunks = split_codebook_chunks(latents, self.num_codebooks)
        codes = nearest_codes(chunks, self.codebooks)  # [B, H, W, C]
        selected = lookup_codes(codes, self.codebooks)  # [B, H, W, C, d]

        per_codebook_axes = (0, 1, 2, 4)
        commitment = jnp.mean(
            (jax.lax.stop_gradient(selected) - chunks) ** 2, axis=per_codebook_axes
        )
        codebook = jnp.mean(
            (selected - jax.lax.stop_gradient(chunks)) ** 2, axis=per_codebook_axes
        )
        vq_loss = jnp.sum(self.commitment_cost * commitment + codebook)

        straight_through = chunks + jax.lax.stop_gradient(selected - chunks)
        return {
            "quantized": straight_through.reshape(latents.shape),
            "codes": jnp.moveaxis(codes, -1, 1),
            "vq_loss": vq_loss,
            "perplexity": codebook_perplexity(codes, self.num_codes),
            "usage": codebook_usage(codes, self.num_codes),
        }

    def embed_codes(self, codes: jax.Array) -> jax.Array:
        """codes [B, C, H, W] -> quantised latents [B, H, W, D]."""
        chex.assert_rank(codes, 4)
        selected = lookup_codes(jnp.moveaxis(codes, 1, -1), self.codebooks)
        return selected.reshape(*selected.shape[:-2], self.latent_dim)
