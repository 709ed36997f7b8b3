"""The INV / EQV / SCN scores (evaluation/consistency_scores.py) on stand-ins whose
response map is known exactly: the identity (a perfectly consistent autoencoder) and
a linear mixing of two units, a collapsed unit, the heat-map figure, and the
XBlock's learned graph."""

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from causal_disent.evaluation import consistency_scores, drawings
from causal_disent.models.vae import VAE
from causal_disent.models.xblock import XBlock
from causal_disent.utils import host_memory


class LinearResponse(nn.Module):
    """Images [B, 1, 1, n] in (0, 1) with encoder mean logit(x)·A and decoder logits
    N: the response is R(N) = N·A exactly."""

    mixing: tuple

    xblock = None

    def encode(self, images):
        pixels = images.reshape(images.shape[0], -1)
        mean = jnp.log(pixels) - jnp.log1p(-pixels)
        return mean @ jnp.asarray(self.mixing, jnp.float32), jnp.zeros_like(mean)

    def decode(self, latents, step=None):
        return latents.reshape(latents.shape[0], 1, 1, -1)

    def __call__(self, images):
        return self.decode(self.encode(images)[0])


def scores_for(mixing, count=400, scoring="variance"):
    sources = np.random.default_rng(0).normal(size=(count, len(mixing)))
    images = (1 / (1 + np.exp(-sources))).reshape(count, 1, 1, -1).astype(np.float32)
    model = LinearResponse(tuple(map(tuple, mixing)))
    encodings = (sources @ np.asarray(mixing))
    return consistency_scores.consistency_scores(model, {}, images, seed=1,
                                                 batch_size=64, scoring=scoring), encodings


@pytest.mark.parametrize("scoring", consistency_scores.SCORINGS)
def test_a_perfectly_consistent_autoencoder_scores_one_off_the_diagonal(scoring):
    scores, _ = scores_for(np.eye(3), scoring=scoring)
    inv = np.asarray(scores["inv"])
    np.testing.assert_allclose(inv[~np.eye(3, dtype=bool)], 1, atol=1e-4)
    # The diagonal registers the intervention: 0, but for the authors' normalisation,
    # whose response std is the 400 samples' (1 − 1/s_m).
    diagonal_tolerance = 1e-4 if scoring == "variance" else 0.05
    np.testing.assert_allclose(np.diag(inv), 0, atol=diagonal_tolerance)
    np.testing.assert_allclose(scores["eqv"], np.ones((3, 3)), atol=1e-4)
    np.testing.assert_allclose(scores["scn"], np.ones(3), atol=1e-4)
    assert scores["inv_off_diagonal"] == pytest.approx(1, abs=1e-4)
    assert scores["inv_diagonal"] == pytest.approx(0, abs=diagonal_tolerance)
    assert scores["num_samples"] == 400 and scores["scoring"] == scoring


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


# Sources s ~ N(0, I), encodings E = s·A: unit 0 is s_0 (std 1), unit 1 is 0.5·s_0 + s_1
# (std √1.25). Hybrid samples N draw each unit from its own marginal, independently.
MIXING = np.array([[1.0, 0.5], [0.0, 1.0]])  # R(N) = N·A: R_1 = 0.5·N_0 + N_1
E_ABS = np.sqrt(2 / np.pi)  # E|x| of x ~ N(0, 1)


def test_authors_invariance_and_self_consistency_by_hand():
    """metrics/LatentInvariance.py of GiuliaLanzillotta/CausalAE (`noise_invariance`,
    `self_consistency`): 1 − E|R(I N)_k − R(N)_k| / std(R(N)_k) / E|v − N_m|, and
    SCN = clip(1 − E|R(N)_k − N_k| / std(R(N)_k), 0, 1)."""
    scores, _ = scores_for(MIXING, count=4000, scoring="authors")
    response_std_1 = np.sqrt(0.25 * 1.0 + 1.25)  # std(0.5·N_0 + N_1)
    # Intervening on unit 0 moves R_1 by 0.5·(v − N_0) exactly: the shift cancels.
    assert scores["inv"][0][1] == pytest.approx(1 - 0.5 / response_std_1, abs=0.02)
    assert scores["inv"][1][0] == pytest.approx(1.0, abs=1e-4)  # R_0 = N_0 only
    # R(N) − N = (0, 0.5·N_0): SCN[1] = 1 − 0.5·E|N_0| / std(R_1).
    assert scores["scn"][0] == pytest.approx(1.0, abs=1e-4)
    assert scores["scn"][1] == pytest.approx(1 - 0.5 * E_ABS / response_std_1, abs=0.02)
    # An anti-consistent response R(N) = −N errs by 2|N|, over twice the std: clipped.
    flipped, _ = scores_for(-np.eye(2), scoring="authors")
    np.testing.assert_array_equal(flipped["scn"], [0.0, 0.0])


def test_authors_equivariance_pairs_x_of_i_r_n_with_x_of_r_i_n():
    """`noise_equivariance` of the same file compares X(I(R(N))) with X(R(I(N))):
    with X the identity and R(N) = N·A, for m = 0 unit 1 differs by 0.5·(N_0 − v),
    so EQV[0, 1] = 1 − 0.5 whatever the samples; unit 0 agrees (v both). For m = 1,
    unit 1 differs by v − (0.5·N_0 + v) = −0.5·N_0: EQV[1, 1] = 1 − 0.5·E|N_0| /
    E|v − N_1|, v and N_1 independent draws of unit 1 (std √1.25)."""
    scores, _ = scores_for(MIXING, count=4000, scoring="authors")
    eqv = np.asarray(scores["eqv"])
    assert eqv[0, 1] == pytest.approx(0.5, abs=1e-4)
    np.testing.assert_allclose([eqv[0, 0], eqv[1, 0]], [1.0, 1.0], atol=1e-4)
    shift = E_ABS * np.sqrt(2 * 1.25)  # E|v − N_1|
    assert eqv[1, 1] == pytest.approx(1 - 0.5 * E_ABS / shift, abs=0.03)
    # The earlier pairing, X(I R(I N)) against X(I N), sees unit 1 of m = 0 off by
    # 0.5·v instead, and another value: 1 − 0.25·E v² / var(X_1) / (E (v − N_0)² /
    # σ_0²) = 1 − 0.25·1.25 / 1.25 / 2.
    earlier, _ = scores_for(MIXING, count=4000, scoring="variance")
    assert earlier["eqv"][0][1] == pytest.approx(1 - 0.25 / 2, abs=0.03)
    assert abs(earlier["eqv"][0][1] - eqv[0, 1]) > 0.3


def test_an_unknown_scoring_is_refused():
    with pytest.raises(ValueError, match="scoring must be one of"):
        scores_for(np.eye(2), count=10, scoring="squared")


def test_a_unit_that_never_varies_has_no_scores():
    scores, _ = scores_for(np.array([[1.0, 0.0], [0.0, 0.0]]))  # unit 1 is always 0
    assert np.all(np.isnan(scores["inv"][1])) and np.isnan(scores["scn"][1])
    assert scores["inv"][0][0] == pytest.approx(0, abs=1e-4)
    assert np.isfinite(scores["inv_diagonal"])


def test_batches_are_padded_to_one_shape_and_read_back_without_the_padding():
    shapes = []

    def doubled(batch):
        shapes.append(batch.shape)
        return jnp.asarray(batch) * 2

    rows = np.arange(10, dtype=np.float32).reshape(5, 2)
    pending = consistency_scores.dispatched(doubled, rows, batch_size=2)
    assert shapes == [(2, 2)] * 3  # the last batch is padded, not a new shape
    [back] = consistency_scores.read_back([pending], len(rows))
    assert back.dtype == np.float64
    np.testing.assert_array_equal(back, rows * 2)


@pytest.mark.parametrize("scoring,reads", [("authors", 3), ("variance", 4)])
def test_the_scores_read_the_device_back_once_a_pass_not_once_a_batch(
        monkeypatch, scoring, reads):
    """Every batch of a pass is dispatched before any is read: one transfer for the
    encodings, one for all responses, one for all causes (and, for "variance", one
    for the base causes), whatever the number of units and batches, while the units
    fit one chunk."""
    calls = []
    device_get = jax.device_get
    monkeypatch.setattr(jax, "device_get", lambda tree: calls.append(1) or device_get(tree))
    scores_for(np.eye(3), count=200, scoring=scoring)  # batches of 64: 4 a pass
    assert len(calls) == reads


@pytest.mark.parametrize("scoring", consistency_scores.SCORINGS)
def test_units_scored_in_chunks_score_as_in_one(monkeypatch, scoring):
    """The host memory of many units is bounded by scoring them a chunk at a time;
    the draws stay in unit order, so the scores are the same bits."""
    mixing = np.array([[1.0, 0.5, 0.0], [0.0, 1.0, 0.2], [0.3, 0.0, 1.0]])
    whole, _ = scores_for(mixing, count=100, scoring=scoring)
    one_unit = consistency_scores.BYTES_PER_UNIT_ENTRY * 100 * 3  # a unit's arrays
    monkeypatch.setattr(consistency_scores, "CHUNK_BYTES", one_unit)
    calls = []
    device_get = jax.device_get
    monkeypatch.setattr(jax, "device_get", lambda tree: calls.append(1) or device_get(tree))
    chunked, _ = scores_for(mixing, count=100, scoring=scoring)
    assert len(calls) == (1 + 3 * 2) + (scoring == "variance")  # two passes a unit
    assert chunked == whole


def test_score_matrices_the_host_cannot_hold_are_refused_naming_the_field(monkeypatch):
    entry_bytes = consistency_scores.RESULT_BYTES_PER_ENTRY
    monkeypatch.setattr(host_memory, "available_bytes", lambda: entry_bytes * 2 * 100**2)
    consistency_scores.check_results_fit(100, 2, "vae.model.num_latents")  # just fits
    with pytest.raises(ValueError, match=r"^the test split's consistency scores of 101 units "
                                         r"are two 101 × 101 matrices for each of 2 seeds, "
                                         r"about 0.0 GiB .* lower vae.model.num_latents \(101\)$"):
        consistency_scores.check_results_fit(101, 2, "vae.model.num_latents")
    monkeypatch.setattr(host_memory, "available_bytes", lambda: None)  # not Linux: unknown
    consistency_scores.check_results_fit(10**9, 1, "vae.model.num_latents")


def test_heat_map_figure(tmp_path):
    scores, _ = scores_for(np.eye(2), count=50)
    path = consistency_scores.save_consistency_figure(scores, tmp_path / "f" / "c.png")
    assert path.is_file() and path.stat().st_size > 1000


def test_heat_map_figure_labels_every_panel_and_has_a_colour_bar():
    scores, _ = scores_for(np.array([[1.0, 0.0], [0.0, 0.0]]), count=50)  # unit 1: no score
    structure = {"mask": [[0.0, 0.0], [0.9, 0.0]], "edges": 1, "possible_edges": 1}
    figure = drawings.draw_consistency_figure(scores, structure)
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
