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


def test_many_latents_traverse_those_that_spread_most_in_index_order(monkeypatch, tmp_path):
    """A figure of every one of 1500 latents went over the grid's pixel limit: the
    figure keeps MAX_TRAVERSED_LATENTS rows, of the latents that spread most."""
    spread = np.array([0.5, 3.0, 0.1, 3.0, 2.0])
    np.testing.assert_array_equal(traversal.traversed_latents(spread, limit=3), [1, 3, 4])
    np.testing.assert_array_equal(traversal.traversed_latents(spread, limit=5), range(5))
    means = np.zeros((2, 5), np.float32)
    latents = traversal.traversal_latents(means, spread, offsets=(-1, 1), moved=[1, 4])
    assert latents.shape == (2, 2, 2, 5)
    np.testing.assert_allclose(latents[0, 1, 1], [0, 0, 0, 0, 2.0])  # latent 4, +1σ
    np.testing.assert_allclose(latents[1, 0, 0], [0, -3.0, 0, 0, 0])  # latent 1, −1σ

    width = traversal.MAX_TRAVERSED_LATENTS + 8
    codes = np.outer((-1.0) ** np.arange(9), np.arange(1, width + 1))  # σ_j = j + 1
    monkeypatch.setattr(traversal.model_calls, "encoded_means",
                        lambda model, params, images: codes[:len(images)])
    monkeypatch.setattr(traversal.model_calls, "decoded_pixels",
                        lambda model, params, latents: np.zeros((len(latents), 4, 4, 1)))
    drawn = {}
    monkeypatch.setattr(traversal.figures, "save_drawn",
                        lambda path, draw, grid, **labels: drawn.update(grid=grid, **labels))
    images = np.zeros((1, 4, 4, 1), np.uint8)
    traversal.save_traversal_figure(types.SimpleNamespace(num_latents=width), {}, images,
                                    np.zeros((8, 4, 4, 1), np.uint8), tmp_path / "t.png")
    assert drawn["grid"].shape[0] == traversal.MAX_TRAVERSED_LATENTS
    assert drawn["row_labels"][0].startswith("z8 ")  # the 8 that spread least are left out
    assert f"(the 32 of {width} that spread most)" in drawn["title"]


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

    def traversal_latents(means, spread, **moved):
        seen.update(means=means, spread=spread)
        return real_traversal_latents(means, spread, **moved)

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
