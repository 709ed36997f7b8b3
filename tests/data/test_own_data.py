"""One's own data (data/own_data.py, data/own_files.py): each format read back as
written, the same dataset as a built-in grid whatever the row order, off-grid
labels and explicit pairs, and every bad input refused with a message naming it."""

import math

import numpy as np
import pytest

from causal_disent.data import describe, own_files, registry, splits, transitions
from causal_disent.data.base import FactorDataset
from causal_disent.data.own_data import ArrayDataset, TransitionPairs
from causal_disent.evaluation import card
from causal_disent.train import config_ranges
from tests.helpers import tiny_config
from tests.own_data_fixtures import (FACTOR_NAMES, GRID_SIZES, LABEL_NAMES, grid_arrays,
                                     write_hdf5, write_image_folder, write_npz)

SPLIT = (0.7, 0.15, 0.15)


class BuiltInGrid(FactorDataset):
    """The fixture's grid as a built-in dataset defines one: images in flat-index order."""

    name = "reference"
    image_shape = (64, 64, 3)
    factor_names = FACTOR_NAMES
    factor_sizes = GRID_SIZES
    factor_values = tuple(np.arange(s, dtype=float) for s in GRID_SIZES)

    def __init__(self):
        super().__init__()
        arrays = grid_arrays()
        self._table = np.empty_like(arrays["images"])
        self._table[arrays["factors"] @ self._strides] = arrays["images"]

    def _images_at(self, index):
        return self._table[index]


@pytest.fixture(scope="module")
def npz_path(tmp_path_factory):
    return write_npz(tmp_path_factory.mktemp("own") / "grid.npz")


def test_a_shuffled_full_grid_is_the_built_in_dataset_it_was_exported_from(npz_path):
    """Same images at every index and the same transition batches and evaluation set:
    a run on the export trains on exactly the data of a run on the original."""
    reference, own = BuiltInGrid(), own_files.open_files_dataset(str(npz_path))
    assert own.full_grid and own.num_images == reference.num_images == math.prod(GRID_SIZES)
    index = np.arange(reference.num_images)
    np.testing.assert_array_equal(own.images(index), reference.images(index))
    np.testing.assert_array_equal(own.index_to_factors(index), reference.index_to_factors(index))
    split_own = splits.dataset_split(own, SPLIT, 0)
    split_reference = splits.dataset_split(reference, SPLIT, 0)
    for name in split_own:
        np.testing.assert_array_equal(split_own[name], split_reference[name])
    sampler_own = transitions.sampler_for(own, split_own, seed=3)
    sampler_reference = transitions.sampler_for(reference, split_reference, seed=3)
    for step in (0, 7):
        for key, value in sampler_own.batch("train", step, 32).items():
            np.testing.assert_array_equal(value, sampler_reference.batch("train", step, 32)[key])
    np.testing.assert_array_equal(sampler_own.fixed_set("test", 16)["y_index"],
                                  sampler_reference.fixed_set("test", 16)["y_index"])


def test_save_npz_writes_a_memory_mapped_export_read_back_equal(tmp_path):
    reference = BuiltInGrid()
    own_files.save_npz(tmp_path / "export.npz", reference, chunk_size=100)
    own = own_files.open_files_dataset(str(tmp_path / "export.npz"))
    assert isinstance(own._images, np.memmap)
    index = np.arange(reference.num_images)
    np.testing.assert_array_equal(own.images(index), reference.images(index))
    assert own.factor_names == FACTOR_NAMES and own.factor_sizes == GRID_SIZES


def test_compressed_npz_and_hdf5_read_the_same_dataset(tmp_path, npz_path):
    pytest.importorskip("h5py")
    plain = own_files.open_files_dataset(str(npz_path))
    compressed = own_files.open_files_dataset(str(write_npz(tmp_path / "c.npz", compressed=True)))
    assert not isinstance(compressed._images, np.memmap)
    hdf5 = own_files.open_files_dataset(str(write_hdf5(tmp_path / "grid.h5")))
    index = np.array([5, 3, 3, 200, 0])  # unsorted and repeated: HDF5 reads sorted rows
    for other in (compressed, hdf5):
        np.testing.assert_array_equal(other.images(index), plain.images(index))
        assert other.factor_names == FACTOR_NAMES
    np.testing.assert_allclose(plain.labels(index), compressed.labels(index))
    assert plain.label_names == LABEL_NAMES and plain.causal_graph.sum() == 3


def test_an_image_folder_reads_its_files_labels_and_the_authors_pairs(tmp_path):
    folder = write_image_folder(tmp_path / "folder", count=40)
    own = own_files.open_files_dataset(str(folder))
    arrays = grid_arrays()
    assert not own.full_grid and own.num_images == 40  # 40 of the 256 combinations
    np.testing.assert_array_equal(own.images(np.arange(40)), arrays["images"][:40])
    np.testing.assert_allclose(own.labels(np.arange(40)), arrays["labels"][:40], atol=1e-4)
    pairs = own.transition_pairs
    assert pairs.variable_names == FACTOR_NAMES  # the factors' order, not alphabetical
    moved = own.index_to_factors(pairs.y_index) - own.index_to_factors(pairs.x_index)
    factor = pairs.action % 3
    assert np.all(moved[np.arange(len(factor)), factor] == np.where(pairs.action < 3, 1, -1))
    assert np.all(np.abs(moved).sum(axis=1) == 1)
    sampler = transitions.sampler_for(own, {"train": np.arange(40)}, seed=0)
    batch = sampler.batch("train", 0, 8)
    np.testing.assert_array_equal(batch["x_index"], sampler.batch("train", 0, 8)["x_index"])
    assert set(transitions.dataset_action_names(own)) == {f"{n}{s}" for n in FACTOR_NAMES
                                                           for s in "+-"}


def test_off_the_grid_rows_are_drawn_jointly_and_the_grid_metrics_are_refused(tmp_path):
    arrays = grid_arrays()
    own = ArrayDataset(arrays["images"][:100], arrays["factors"][:100], factor_names=FACTOR_NAMES)
    assert not own.full_grid and "100 of the 256 combinations" in own.grid_note
    drawn = own.sample_factors(np.random.default_rng(0), 50)
    np.testing.assert_array_equal(own.render(drawn), arrays["images"][own.factors_to_index(drawn)])
    assert {tuple(row) for row in drawn} <= {tuple(row) for row in arrays["factors"][:100]}
    absent = arrays["factors"][150:151]
    with pytest.raises(ValueError, match="no image of arrays has the factors"):
        own.factors_to_index(absent)
    with pytest.raises(ValueError, match=r"betavae and factorvae set one factor's value .* "
                                         r"--metrics=mig,sap,dci,modularity_explicitness"):
        card.metrics_for(own, ["mig", "betavae", "factorvae"], asked_for_all=False)
    assert card.metrics_for(own, list(card.METRICS), asked_for_all=True) == [
        "mig", "sap", "dci", "modularity_explicitness", "unsupervised", "infomec"]
    with pytest.raises(ValueError, match="CT-VAE learns from pairs .* list its transition "
                                         "pairs"):
        transitions.sampler_for(own, {"train": np.arange(100)}, seed=0)
    info = describe.describe(own)
    assert info["full_grid"] is False and info["trains"]["ct_vae"].startswith("no:")


def test_pairs_without_a_split_column_belong_to_the_split_of_both_images():
    images = np.zeros((6, 8, 8, 1), np.uint8)
    pairs = TransitionPairs(np.array([0, 1, 2, 4]), np.array([1, 2, 3, 5]),
                            np.array([0, 1, 0, 1]), ("a",))
    own = ArrayDataset(images, pairs=pairs)
    sampler = transitions.sampler_for(own, {"train": np.array([0, 1, 2]), "test": np.array([3, 4, 5])},
                                      seed=0)
    assert sampler.pair_counts("train").tolist() == [1, 1]  # 0->1, 1->2; 2->3 crosses
    assert sampler.pair_counts("test").tolist() == [0, 1]
    batch = sampler.batch("test", 5, 10)
    assert set(batch["x_index"].tolist()) == {4} and set(batch["action"].tolist()) == {1}
    split = np.array(["train", "train", "test", "train"])
    own = ArrayDataset(images, pairs=TransitionPairs(pairs.x_index, pairs.y_index, pairs.action,
                                                     ("a",), split))
    sampler = transitions.sampler_for(own, {"train": np.arange(6), "test": np.arange(0)}, seed=0)
    assert sampler.pair_counts("test").tolist() == [1, 0]


def test_registered_arrays_are_named_by_a_config():
    arrays = grid_arrays()
    own = ArrayDataset(arrays["images"], arrays["factors"], factor_names=FACTOR_NAMES)
    registry.register_dataset("my_grid_for_a_test", own)
    config = tiny_config()
    config.data.name = "my_grid_for_a_test"
    assert registry.dataset_from_config(config.data) is own
    with pytest.raises(ValueError, match="needs a new name"):
        registry.register_dataset("shapes3d_synth", own)
    with pytest.raises(ValueError, match="register_dataset"):
        registry.check_dataset_name("my_grid_never_registered")


@pytest.mark.parametrize("arrays, message", [
    (dict(images=np.zeros((4, 8, 8, 3), np.uint8), factors=np.zeros((5, 1))),
     r"4 images but 5 rows of factors"),
    (dict(images=np.zeros((4, 8, 8, 3), np.uint8), labels=np.zeros((3, 2))),
     r"4 images but 3 rows of labels"),
    (dict(images=np.zeros((4, 8, 8, 3), np.float32)), r"images must be uint8 .* got float32"),
    (dict(images=np.zeros((4, 8, 8), np.uint8)), r"rank 4, \[N, H, W, C\]; got shape "
                                                  r"\(4, 8, 8\) .*images\[\.\.\., None\]"),
    (dict(images=np.zeros((4, 8, 8, 3), np.uint8), factors=np.array([[0, 1], [0, 2], [0, 1],
                                                                       [0, 2]])),
     r"factor 'factor_0' takes one value in all 4 images, .* drop it"),
    (dict(images=np.zeros((4, 8, 8, 3), np.uint8), factors=np.array([[0], [1], [2], [3]]),
          factor_sizes=(3,)), r"factor 'factor_0' of size 3 is 3 at image 3"),
    (dict(images=np.zeros((4, 8, 8, 3), np.uint8), labels=np.ones((4, 2)),
          causal_graph=np.ones((2, 2))), r"self-loop"),
])
def test_bad_arrays_are_refused_naming_the_problem(arrays, message):
    with pytest.raises(ValueError, match=message):
        ArrayDataset(**arrays)


def test_bad_pairs_and_files_are_refused_naming_the_problem(tmp_path):
    images = np.zeros((4, 8, 8, 3), np.uint8)
    with pytest.raises(ValueError, match=r"pair 1 has action 4, outside \[0, 3\]: 2 moved "
                                         r"variables \(a, b\) give 4 actions"):
        ArrayDataset(images, pairs=TransitionPairs(np.array([0, 1]), np.array([1, 2]),
                                                   np.array([0, 4]), ("a", "b")))
    with pytest.raises(ValueError, match=r"pair 0 names Y row 9, outside the 4 images"):
        ArrayDataset(images, pairs=TransitionPairs(np.array([0]), np.array([9]), np.array([0]),
                                                   ("a",)))
    with pytest.raises(ValueError, match="no such file or folder"):
        own_files.open_files_dataset(str(tmp_path / "absent.npz"))
    folder = write_image_folder(tmp_path / "mixed", count=6, sizes_differ=True)
    with pytest.raises(ValueError, match=r"images of different sizes: img_0000.png is 64x64 "
                                         r"and img_0005.png is 32x32"):
        own_files.open_files_dataset(str(folder))
    folder = write_image_folder(tmp_path / "missing", count=6)
    (folder / "img_0003.png").unlink()
    with pytest.raises(ValueError, match="img_0003.png is listed but not in the folder"):
        own_files.open_files_dataset(str(folder))
    folder = write_image_folder(tmp_path / "pairs", count=6)
    with open(folder / "pairs.csv", "a") as handle:
        handle.write("img_0000.png,nope.png,row,0,1\n")
    with pytest.raises(ValueError, match="pair output 'nope.png' is not an image of the dataset"):
        own_files.open_files_dataset(str(folder))
    (folder / "labels.csv").write_text("name,hue\nimg_0000.png,1\n")
    with pytest.raises(ValueError, match=r"labels.csv: needs a `file` column"):
        own_files.open_files_dataset(str(folder))
    with pytest.raises(ValueError, match=r"unknown array\(s\) \['latents'\]"):
        own_files.open_files_dataset(str(write_npz(tmp_path / "x.npz", latents=np.zeros(3))))


@pytest.mark.parametrize("field, value", [
    ("mcqvae.model.commitment_cost", -0.25), ("ct.objective.weights.graph_kl", float("nan")),
    ("ct.objective.weights.action", float("inf"))])
def test_negative_or_non_finite_loss_weights_are_refused(field, value):
    config = tiny_config()
    section, name = field.rsplit(".", 1)
    node = config
    for part in section.split("."):
        node = node[part]
    node[name] = value
    with pytest.raises(ValueError, match=rf"{field} must be >= 0, got {value!r}: a loss "
                                         rf"weight must be finite and >= 0"):
        config_ranges.check_ranges(config)


def test_pairs_in_an_npz_are_read_with_their_variables_and_splits(tmp_path):
    path = write_npz(tmp_path / "pairs.npz", pair_x=np.array([0, 5, 9]),
                     pair_y=np.array([1, 6, 8]), pair_action=np.array([0, 4, 2]),
                     pair_variables=np.array(["colour", "row", "column"]),
                     pair_split=np.array(["train", "test", "train"]))
    own = own_files.open_files_dataset(str(path))
    pairs = own.transition_pairs
    assert pairs.variable_names == FACTOR_NAMES and pairs.num_actions == 6
    assert pairs.split.tolist() == ["train", "test", "train"]
    # Rows are mapped to the grid's indices, as the images are.
    np.testing.assert_array_equal(own.images(pairs.x_index), grid_arrays()["images"][[0, 5, 9]])
    assert transitions.dataset_action_names(own)[4] == "row-"
    with pytest.raises(ValueError, match="pairs need pair_x, pair_y and pair_action; "
                                         "missing pair_y"):
        own_files.open_files_dataset(str(write_npz(tmp_path / "half.npz",
                                                   pair_x=np.array([0]),
                                                   pair_action=np.array([0]))))
