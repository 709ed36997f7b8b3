"""The factor-imbalance figures (the CT-VAE paper's Figure 4): pair counts against a
brute-force count, the authors' shares, and the command's record and figure."""

import importlib
import json

import numpy as np
import pytest

from causal_disent.data import imbalance
from causal_disent.data.base import FactorDataset

factor_imbalance = importlib.import_module("benchmarks.factor_imbalance")


class SmallGrid(FactorDataset):
    name = "small_grid"
    image_shape = (2, 2, 1)
    factor_names = ("a", "b", "c")
    factor_sizes = (2, 5, 3)
    factor_values = tuple(np.arange(float(s)) for s in factor_sizes)

    def _images_at(self, index):
        return np.zeros((len(index), 2, 2, 1), np.uint8)


def _brute_force_pairs(dataset, train):
    """Pairs one step apart along each factor with both images in `train`."""
    members = set(train.tolist())
    counts = np.zeros(dataset.num_factors, np.int64)
    for x in members:
        factors = dataset.index_to_factors(np.array([x]))[0]
        for f in range(dataset.num_factors):
            if factors[f] + 1 < dataset.factor_sizes[f]:
                moved = factors.copy()
                moved[f] += 1
                counts[f] += int(dataset.factors_to_index(moved[None])[0]) in members
    return counts


def test_pair_counts_and_shares_match_a_brute_force_count():
    dataset = SmallGrid()
    rng = np.random.default_rng(0)
    order = rng.permutation(dataset.num_images)
    split = {"train": order[:20], "test": order[20:]}
    shares = imbalance.factor_pair_shares(dataset, split)
    counts = [f["grid_pairs"] for f in shares["factors"]]
    np.testing.assert_array_equal(counts, _brute_force_pairs(dataset, split["train"]))
    assert sum(f["grid_share"] for f in shares["factors"]) == pytest.approx(1.0)
    # The authors draw as many pairs per value step: shares 1 : 4 : 2.
    np.testing.assert_allclose([f["authors_share"] for f in shares["factors"]],
                               np.array([1, 4, 2]) / 7)
    assert shares["largest_to_smallest"] == pytest.approx(4.0)
    assert shares["num_actions"] == 6
    assert all(f["balanced_share"] == pytest.approx(1 / 3) for f in shares["factors"])


def test_a_full_training_split_counts_every_pair_of_the_grid():
    dataset = SmallGrid()
    shares = imbalance.factor_pair_shares(dataset, {"train": np.arange(dataset.num_images)})
    per_factor = [dataset.num_images // s * (s - 1) for s in dataset.factor_sizes]
    assert [f["grid_pairs"] for f in shares["factors"]] == per_factor


def test_the_command_records_and_draws(tmp_path, capsys):
    record, figure = tmp_path / "imbalance.json", tmp_path / "bars.png"
    factor_imbalance.main(["dsprites_synth", f"--record={record}", f"--figure={figure}"])
    written = json.loads(record.read_text())["figures"]["datasets"]
    assert [f["name"] for f in written[0]["factors"]] == [
        "shape", "scale", "orientation", "x_position", "y_position"]
    assert figure.stat().st_size > 1000
    with pytest.raises(SystemExit, match="error: unknown dataset 'dsprite'"):
        factor_imbalance.main(["dsprite"])
