"""The INV / EQV / SCN scores (evaluation/consistency_scores.py) on stand-ins whose
response map is known exactly: the identity (a perfectly consistent autoencoder) and
a linear mixing of two units, a collapsed unit, the heat-map figure, and the
XBlock's learned graph."""

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from causal_disent.evaluation import consistency_scores
from causal_disent.models.vae import VAE
from causal_disent.models.xblock import XBlock


class LinearResponse(nn.Module):
    """Images [B, 1, 1, n] in (0, 1) with encoder mean logit(x)·A and decoder logits
    N: the response is R(N) = N·A exactly."""

    mixing: tuple

    xblock = None

    def encode(self, images):
        pixels = images.reshape(images.shape[0], -1)
        mean = jnp.log(pixels) - jnp.log1p(-pixels)
        return mean @ jnp.asarray(self.mixing, jnp.float32), jnp.zeros_like(mean)

    def decode(self, latents):
        return latents.reshape(latents.shape[0], 1, 1, -1)

    def __call__(self, images):
        return self.decode(self.encode(images)[0])


def scores_for(mixing, count=400):
    sources = np.random.default_rng(0).normal(size=(count, len(mixing)))
    images = (1 / (1 + np.exp(-sources))).reshape(count, 1, 1, -1).astype(np.float32)
    model = LinearResponse(tuple(map(tuple, mixing)))
    encodings = (sources @ np.asarray(mixing))
    return consistency_scores.consistency_scores(model, {}, images, seed=1,
                                                 batch_size=64), encodings


def test_a_perfectly_consistent_autoencoder_scores_one_off_the_diagonal():
    scores, _ = scores_for(np.eye(3))
    np.testing.assert_allclose(scores["inv"], 1 - np.eye(3), atol=1e-4)  # diagonal: responsive
    np.testing.assert_allclose(scores["eqv"], np.ones((3, 3)), atol=1e-4)
    np.testing.assert_allclose(scores["scn"], np.ones(3), atol=1e-4)
    assert scores["inv_off_diagonal"] == pytest.approx(1, abs=1e-4)
    assert scores["inv_diagonal"] == pytest.approx(0, abs=1e-4)
    assert scores["num_samples"] == 400


def test_a_mixing_response_loses_invariance_by_its_share():
    mixing = np.array([[1.0, 0.5], [0.0, 1.0]])  # R(N)_1 = 0.5·N_0 + N_1
    scores, encodings = scores_for(mixing)
    variance = encodings.var(axis=0)
    # Intervening on unit 0 moves response unit 1 by 0.5·Δ: INV[0, 1] = 1 − 0.25·σ_0²/σ_1².
    expected = 1 - mixing**2 * variance[:, None] / variance[None, :]
    np.testing.assert_allclose(scores["inv"], expected, atol=1e-4)
    assert scores["inv"][0][1] < 0.95
    # Self-consistency: R(N) − N = (0, 0.5·N_0), so SCN[1] = 1 − 0.25·E N_0² / σ_1².
    assert scores["scn"][0] == pytest.approx(1, abs=1e-4) and scores["scn"][1] < 0.95


def test_a_unit_that_never_varies_has_no_scores():
    scores, _ = scores_for(np.array([[1.0, 0.0], [0.0, 0.0]]))  # unit 1 is always 0
    assert np.all(np.isnan(scores["inv"][1])) and np.isnan(scores["scn"][1])
    assert scores["inv"][0][0] == pytest.approx(0, abs=1e-4)
    assert np.isfinite(scores["inv_diagonal"])


def test_heat_map_figure(tmp_path):
    scores, _ = scores_for(np.eye(2), count=50)
    path = consistency_scores.save_consistency_figure(scores, tmp_path / "f" / "c.png")
    assert path.is_file() and path.stat().st_size > 1000


def test_heat_map_figure_labels_every_panel_and_has_a_colour_bar():
    scores, _ = scores_for(np.array([[1.0, 0.0], [0.0, 0.0]]), count=50)  # unit 1: no score
    structure = {"mask": [[0.0, 0.0], [0.9, 0.0]], "edges": 1, "possible_edges": 1}
    figure = consistency_scores.draw_consistency_figure(scores, structure)
    colour_bars = [ax for ax in figure.axes if ax.get_label() == "<colorbar>"]
    assert len(colour_bars) == 1
    panels = [ax for ax in figure.axes if ax.images]
    assert [ax.get_title().split("\n")[0] for ax in panels] == [
        "invariance INV[m, i]", "equivariance EQV[m, i]", "self-consistency SCN[i]",
        "XBlock mask M[i, j]"]
    assert [(ax.get_xlabel(), ax.get_ylabel()) for ax in panels] == [
        ("response unit i", "intervened unit m"), ("response unit i", "intervened unit m"),
        ("unit i", ""), ("parent unit j", "child unit i")]
    title = figure.get_suptitle()
    assert "50 test images" in title and "grey: no score" in title


def test_xblock_structure_counts_the_open_gates_it_allows():
    xblock = XBlock(num_units=3, allowed_parents=((0, 0, 0), (1, 0, 0), (1, 0, 0)))
    fields = dict(num_latents=3, encoder_widths=(4,), encoder_hidden=4, decoder_widths=(4,),
                  decoder_hidden=4, image_shape=(8, 8, 1))
    model = VAE(**fields, xblock=xblock)
    params = model.init(jax.random.key(0), jnp.zeros((1, 8, 8, 1)))["params"]
    logits = np.zeros((3, 3), np.float32)
    logits[1, 0], logits[2, 0], logits[2, 1] = 2.0, -2.0, 5.0  # open, shut, not allowed
    params = {**params, "xblock": {**params["xblock"], "mask_logits": jnp.asarray(logits)}}
    structure = consistency_scores.xblock_structure(model, params)
    assert (structure["edges"], structure["possible_edges"]) == (1, 2)
    assert structure["edge_fraction"] == 0.5
    assert structure["mask"][2][1] == 0.0  # not allowed: no gate at all
    assert consistency_scores.xblock_structure(VAE(**fields), params) is None
