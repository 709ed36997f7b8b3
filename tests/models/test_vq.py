import jax
import jax.numpy as jnp
import numpy as np
import pytest

from causal_disent.models import vq


def reference_quantize(latents, codebooks):
    """Loop-based nearest codes with the contiguous split [c·d, (c+1)·d)."""
    num_codebooks, _, chunk = codebooks.shape
    batch, height, width, _ = latents.shape
    codes = np.zeros((batch, num_codebooks, height, width), np.int64)
    quantized = np.zeros_like(latents)
    for b in range(batch):
        for y in range(height):
            for x in range(width):
                for c in range(num_codebooks):
                    z = latents[b, y, x, c * chunk : (c + 1) * chunk]
                    k = np.argmin(((codebooks[c] - z) ** 2).sum(-1))
                    codes[b, c, y, x] = k
                    quantized[b, y, x, c * chunk : (c + 1) * chunk] = codebooks[c, k]
    return codes, quantized


@pytest.fixture(scope="module")
def quantizer_and_params():
    module = vq.MultiCodebookQuantizer(latent_dim=12, num_codebooks=3, num_codes=5,
                                       commitment_cost=0.25)
    latents = jnp.zeros((1, 2, 2, 12))
    params = module.init(jax.random.key(0), latents)["params"]
    rng = np.random.default_rng(0)
    params = {"codebooks": jnp.asarray(rng.normal(size=(3, 5, 4)), jnp.float32)}
    return module, params


def test_codebook_init_is_uniform_in_plus_minus_one_over_k():
    module = vq.MultiCodebookQuantizer(latent_dim=64, num_codebooks=4, num_codes=64,
                                       commitment_cost=0.25)
    codebooks = module.init(jax.random.key(1), jnp.zeros((1, 1, 1, 64)))["params"]["codebooks"]
    assert codebooks.shape == (4, 64, 16)
    assert float(jnp.abs(codebooks).max()) <= 1 / 64
    assert float(codebooks.std()) > 0.5 / 64 / np.sqrt(3)


def test_nearest_codes_and_contiguous_split_match_reference(quantizer_and_params):
    module, params = quantizer_and_params
    latents = np.random.default_rng(1).normal(size=(2, 3, 2, 12)).astype(np.float32)
    out = module.apply({"params": params}, latents)
    codes, quantized = reference_quantize(latents, np.asarray(params["codebooks"]))
    np.testing.assert_array_equal(out["codes"], codes)
    np.testing.assert_allclose(out["quantized"], quantized, atol=1e-6)
    assert out["codes"].shape == (2, 3, 3, 2)  # [B, C, H, W]


def test_quantized_latents_are_codebook_vectors_embed_codes_inverts(quantizer_and_params):
    module, params = quantizer_and_params
    latents = np.random.default_rng(2).normal(size=(1, 2, 2, 12)).astype(np.float32)
    out = module.apply({"params": params}, latents)
    embedded = module.apply({"params": params}, out["codes"], method=module.embed_codes)
    np.testing.assert_allclose(embedded, out["quantized"], atol=1e-6)


def test_straight_through_gradient_is_identity(quantizer_and_params):
    module, params = quantizer_and_params
    latents = jnp.asarray(np.random.default_rng(3).normal(size=(2, 2, 2, 12)), jnp.float32)
    upstream = jnp.asarray(np.random.default_rng(4).normal(size=latents.shape), jnp.float32)
    grad = jax.grad(
        lambda z: jnp.sum(module.apply({"params": params}, z)["quantized"] * upstream)
    )(latents)
    np.testing.assert_allclose(grad, upstream, atol=1e-6)


def test_vq_loss_value_and_gradients(quantizer_and_params):
    module, params = quantizer_and_params
    latents = np.random.default_rng(5).normal(size=(2, 2, 2, 12)).astype(np.float32)
    _, quantized = reference_quantize(latents, np.asarray(params["codebooks"]))
    sq = (quantized - latents) ** 2  # [B, H, W, D]
    per_codebook = sq.reshape(2, 2, 2, 3, 4).mean(axis=(0, 1, 2, 4))
    expected = np.sum(0.25 * per_codebook + per_codebook)
    loss_fn = lambda p, z: module.apply({"params": p}, z)["vq_loss"]
    np.testing.assert_allclose(loss_fn(params, latents), expected, rtol=1e-5)
    # The commitment term pulls latents with weight β, the codebook term moves codes.
    grad_codebooks, grad_latents = jax.grad(loss_fn, argnums=(0, 1))(params, latents)
    n = 2 * 2 * 2 * 4
    np.testing.assert_allclose(
        grad_latents, (0.25 * 2 * (latents - quantized) / n), rtol=1e-4, atol=1e-7
    )
    assert float(jnp.abs(grad_codebooks["codebooks"]).sum()) > 0


def test_perplexity_and_usage():
    all_codes = jnp.arange(8).reshape(1, 2, 4, 1) * jnp.ones((1, 1, 1, 2), jnp.int32)
    np.testing.assert_allclose(vq.codebook_perplexity(all_codes, 8), [8.0, 8.0], rtol=1e-5)
    np.testing.assert_allclose(vq.codebook_usage(all_codes, 8), [1.0, 1.0])
    one_code = jnp.zeros((3, 2, 2, 2), jnp.int32)
    np.testing.assert_allclose(vq.codebook_perplexity(one_code, 8), [1.0, 1.0], rtol=1e-5)
    np.testing.assert_allclose(vq.codebook_usage(one_code, 8), [1 / 8, 1 / 8])


def test_latent_dim_not_divisible_by_codebooks_is_a_clear_error():
    module = vq.MultiCodebookQuantizer(latent_dim=10, num_codebooks=4, num_codes=8,
                                       commitment_cost=0.25)
    with pytest.raises(ValueError, match="not divisible by num_codebooks"):
        module.init(jax.random.key(0), jnp.zeros((1, 1, 1, 10)))
