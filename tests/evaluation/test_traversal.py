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
