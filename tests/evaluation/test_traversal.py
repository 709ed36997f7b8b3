"""Latent traversals (evaluation/traversal.py): which latent moves, and by how much."""

import types

import numpy as np

from causal_disent.evaluation import traversal


def test_each_row_moves_its_latent_alone_by_offset_times_spread():
    means = np.array([[0.5, -1.0, 2.0], [0.0, 0.0, 0.0]], np.float32)
    spread = np.array([1.0, 0.1, 2.0], np.float32)
    latents = traversal.traversal_latents(means, spread, offsets=(-3, 0, 3))
    assert latents.shape == (2, 3, 3, 3)
    for i in range(2):
        for j in range(3):
            for k, offset in enumerate((-3, 0, 3)):
                expected = means[i].copy()
                expected[j] += offset * spread[j]
                np.testing.assert_allclose(latents[i, j, k], expected, rtol=1e-6)


def test_a_ladder_vae_traverses_only_the_latents_its_decoder_reads():
    assert traversal.decoded_latents(types.SimpleNamespace(latent_sizes=(4, 2),
                                                           num_latents=6)) == 4
    assert traversal.decoded_latents(types.SimpleNamespace(num_latents=10)) == 10


def test_the_figure_traverses_from_the_images_codes_by_the_spread_images_spread(
        monkeypatch, tmp_path):
    """Both sets go through one encoder call; each gets its own rows back."""
    def encoded_means(model, params, images):  # a code per image: two of its pixels
        return np.asarray(images).reshape(len(images), -1)[:, :2] * np.array([1.0, 2.0])

    def decoded_pixels(model, params, latents):
        return np.zeros((len(latents), 4, 4, 1), np.float32)

    seen = {}

    def traversal_latents(means, spread):
        seen.update(means=means, spread=spread)
        return real_traversal_latents(means, spread)

    real_traversal_latents = traversal.traversal_latents
    monkeypatch.setattr(traversal.model_calls, "encoded_means", encoded_means)
    monkeypatch.setattr(traversal.model_calls, "decoded_pixels", decoded_pixels)
    monkeypatch.setattr(traversal, "traversal_latents", traversal_latents)
    rng = np.random.default_rng(0)
    images, spread_images = (rng.integers(0, 256, (n, 4, 4, 1), np.uint8) for n in (2, 9))
    traversal.save_traversal_figure(types.SimpleNamespace(num_latents=2), {}, images,
                                    spread_images, tmp_path / "t.png")
    np.testing.assert_allclose(seen["means"], encoded_means(None, None, images / 255.0))
    np.testing.assert_allclose(seen["spread"],
                               encoded_means(None, None, spread_images / 255.0).std(axis=0))
    assert (tmp_path / "t.png").exists()
