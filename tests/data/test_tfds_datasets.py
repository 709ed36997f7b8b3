"""TFDS-backed datasets on tiny data made here, in the real on-disk formats.

Official datasets (shapes3d, dsprites, smallnorb, celeb_a) are written by a stand-in
builder that reuses the official builder's features, name and version, so the
files are what `tfds build` writes (its own generators need TensorFlow and the
internet). Cars3D and Sprites are built by the real builders from a fake
`nips2015-analogy-data.tar.gz` in the real layout. Tiny subclasses shrink the
grids; everything else runs the shipped code. No TensorFlow is used.
"""

import io
import math
import os
import subprocess
import sys
import tarfile

import numpy as np
import pytest
import scipy.io

tfds = pytest.importorskip("tensorflow_datasets")

from causal_disent.data import pipeline  # noqa: E402
from causal_disent.data import tfds_datasets as td  # noqa: E402
from causal_disent.data.tfds_builders import cars3d, reed2015, sprites  # noqa: E402
from causal_disent.utils import threads  # noqa: E402


# --------------------------------------------------------------------------- #
# Helpers
# --------------------------------------------------------------------------- #
def prepare_official(name, data_dir, splits, version=None):
    """Writes `splits` ({split: [example]}) as TFDS would for the official `name`."""
    official = tfds.builder(name, data_dir=os.fspath(data_dir))

    class StandIn(tfds.core.GeneratorBasedBuilder, skip_registration=True):
        VERSION = tfds.core.Version(version or str(official.version))

        def _info(self):
            return tfds.core.DatasetInfo(builder=self, features=official.info.features)

        def _split_generators(self, dl_manager):
            return {split: self._generate_examples(split) for split in splits}

        def _generate_examples(self, split):
            for i, example in enumerate(splits[split]):
                yield i, example

    StandIn.name = name
    builder = StandIn(data_dir=os.fspath(data_dir), file_format="array_record")
    builder.download_and_prepare()


def pil(array):
    from PIL import Image

    array = np.asarray(array, np.uint8)
    return Image.fromarray(array[..., 0] if array.shape[-1] == 1 else array)


def grid_tuples(sizes, rng):
    """Every factor tuple of the grid, in a shuffled order: [N, F]."""
    tuples = np.stack(np.unravel_index(np.arange(math.prod(sizes)), sizes), axis=1)
    return tuples[rng.permutation(len(tuples))]


class TinyShapes3D(td.Shapes3D):
    factor_sizes = (2, 1, 1, 2, 1, 3)
    factor_values = tuple(v[:s] for v, s in zip(td.Shapes3D.factor_values, factor_sizes))


def shapes3d_examples(tuples):
    """Records whose image encodes the flat index (red channel = 10 * flat)."""
    sizes = TinyShapes3D.factor_sizes
    examples = []
    for factors in tuples:
        flat = int(np.ravel_multi_index(tuple(factors), sizes))
        example = {"image": pil(np.full((64, 64, 3), (10 * flat, 7, 0)))}
        for name, value, index in zip(td.Shapes3D.factor_names, td.Shapes3D.factor_values, factors):
            example[f"label_{name}"] = int(index)
            example[f"value_{name}"] = np.float32(value[index])
        examples.append(example)
    return examples


@pytest.fixture
def shapes3d_dir(tmp_path):
    tuples = grid_tuples(TinyShapes3D.factor_sizes, np.random.default_rng(0))
    prepare_official("shapes3d", tmp_path, {"train": shapes3d_examples(tuples)})
    return tmp_path


# --------------------------------------------------------------------------- #
# Metadata
# --------------------------------------------------------------------------- #
@pytest.mark.parametrize(
    "cls, sizes, num_images",
    [
        (td.Shapes3D, (10, 10, 10, 8, 4, 15), 480_000),
        (td.DSprites, (3, 6, 40, 32, 32), 737_280),
        (td.SmallNORB, (5, 10, 9, 18, 6), 48_600),
        (td.Cars3D, (4, 24, 183), 17_568),
        (td.Sprites, (3, 2, 7, 2, 2, 2, 2, 5, 4), 672 * 20),
        (td.MPI3DReal, (6, 6, 2, 3, 3, 40, 40), 1_036_800),
    ],
)
def test_factor_metadata(cls, sizes, num_images):
    assert cls.factor_sizes == sizes and math.prod(cls.factor_sizes) == num_images
    assert len(cls.factor_names) == len(sizes) == len(cls.label_features)
    assert [len(v) for v in cls.factor_values] == list(sizes)


def test_shapes3d_values_match_spec():
    values = td.Shapes3D.factor_values
    np.testing.assert_allclose(values[0], np.arange(10) / 10)
    np.testing.assert_allclose(values[3][[0, -1]], [0.75, 1.25])
    np.testing.assert_allclose(values[5][[0, -1]], [-30, 30])
    np.testing.assert_allclose(td.DSprites.factor_values[2][-1], 2 * np.pi)


# --------------------------------------------------------------------------- #
# Grid datasets over official TFDS data
# --------------------------------------------------------------------------- #
def test_lookup_table_maps_factors_to_their_records(shapes3d_dir):
    dataset = TinyShapes3D(data_dir=shapes3d_dir)
    index = np.arange(dataset.num_images)
    assert not np.array_equal(dataset.record_of_index, index)  # records really are shuffled
    images = dataset.images(index)
    assert images.shape == (12, 64, 64, 3) and images.dtype == np.uint8
    np.testing.assert_array_equal(images[:, 0, 0, 0], 10 * index)
    # Random access in any order, with repeats.
    np.testing.assert_array_equal(dataset.images(np.array([5, 0, 5]))[:, 3, 3, 0], [50, 0, 50])


def test_a_whole_split_read_on_threads_equals_one_read(shapes3d_dir, monkeypatch):
    monkeypatch.setattr(threads, "worker_count", lambda: 3)
    dataset = TinyShapes3D(data_dir=shapes3d_dir)
    index = np.array([11, 0, 5, 5, 7, 3, 9, 1])
    np.testing.assert_array_equal(pipeline.all_images(dataset, index, chunk=3),
                                  dataset.images(index))


def test_cache_is_reused_and_checked(shapes3d_dir, monkeypatch):
    first = TinyShapes3D(data_dir=shapes3d_dir)
    assert first.cache_path == os.path.join(
        shapes3d_dir, "shapes3d", "2.0.0", "causal_disent_factor_index.npy"
    )
    assert os.path.exists(first.cache_path)

    def no_scan(*args):
        raise AssertionError("labels were rescanned although the cache is valid")

    with monkeypatch.context() as patch:
        patch.setattr(td, "scan_records", no_scan)
        second = TinyShapes3D(data_dir=shapes3d_dir)
    np.testing.assert_array_equal(second.record_of_index, first.record_of_index)

    # A stale cache (same length, wrong order) fails the spot check and is rebuilt.
    np.save(first.cache_path, first.record_of_index[::-1].copy())
    third = TinyShapes3D(data_dir=shapes3d_dir)
    np.testing.assert_array_equal(third.record_of_index, first.record_of_index)
    np.testing.assert_array_equal(np.load(first.cache_path, allow_pickle=False), first.record_of_index)


def test_incomplete_grid_names_the_first_missing_tuple(tmp_path):
    tuples = grid_tuples(TinyShapes3D.factor_sizes, np.random.default_rng(1))
    missing = np.array([1, 0, 0, 0, 0, 2])
    kept = tuples[~np.all(tuples == missing, axis=1)]
    prepare_official("shapes3d", tmp_path, {"train": shapes3d_examples(kept)})
    with pytest.raises(td.IncompleteGridError, match="floor_hue=1, .*orientation=2"):
        TinyShapes3D(data_dir=tmp_path)


def test_missing_dataset_says_where_and_how(tmp_path):
    with pytest.raises(FileNotFoundError) as raised:
        td.Shapes3D(data_dir=tmp_path)
    assert isinstance(raised.value, td.DatasetNotPreparedError)
    message = str(raised.value)
    assert os.path.join(os.fspath(tmp_path), "shapes3d", "2.0.0") in message
    assert f"tfds build shapes3d --data_dir={tmp_path} --file_format=array_record" in message
    assert "tensorflow" in message


def test_dsprites_images_are_binary_single_channel(tmp_path):
    class TinyDSprites(td.DSprites):
        factor_sizes = (3, 1, 1, 2, 1)
        factor_values = tuple(v[:s] for v, s in zip(td.DSprites.factor_values, factor_sizes))

    examples = []
    for factors in grid_tuples(TinyDSprites.factor_sizes, np.random.default_rng(2)):
        image = np.zeros((64, 64, 1), np.uint8)
        image[: factors[0] + 1, : factors[3] + 1] = 1  # a blob whose size encodes the factors
        example = {"image": pil(image)}
        for name, index in zip(td.DSprites.factor_names, factors):
            example[f"label_{name}"] = int(index)
            example[f"value_{name}"] = np.float32(index)
        examples.append(example)
    prepare_official("dsprites", tmp_path, {"train": examples})

    dataset = TinyDSprites(data_dir=tmp_path)
    factors = dataset.index_to_factors(np.arange(dataset.num_images))
    images = dataset.render(factors)
    assert images.shape == (6, 64, 64, 1) and images.dtype == np.uint8
    assert set(np.unique(images)) == {0, 255}  # TFDS's 0/1 scaled to the full range
    blob_area = (factors[:, 0] + 1) * (factors[:, 3] + 1)
    np.testing.assert_array_equal((images == 255).sum(axis=(1, 2, 3)), blob_area)


def test_smallnorb_joins_splits_and_resizes(tmp_path):
    class TinyNORB(td.SmallNORB):
        factor_sizes = (1, 2, 1, 2, 1)
        factor_values = tuple(v[:s] for v, s in zip(td.SmallNORB.factor_values, factor_sizes))

    splits = {"train": [], "test": []}
    for category, instance, elevation, azimuth, lighting in grid_tuples(
        TinyNORB.factor_sizes, np.random.default_rng(3)
    ):
        grey = 100 + 50 * instance + 20 * azimuth
        split = "train" if instance == 1 else "test"  # instance decides the split, as in NORB
        splits[split].append(
            {
                "image": pil(np.full((96, 96, 1), grey)),
                "image2": pil(np.zeros((96, 96, 1))),
                "label_category": int(category),
                "instance": int(instance),
                "label_elevation": int(elevation),
                "label_azimuth": int(azimuth),
                "label_lighting": int(lighting),
            }
        )
    prepare_official("smallnorb", tmp_path, splits)

    dataset = TinyNORB(data_dir=tmp_path)
    assert dataset.num_records == 4
    factors = dataset.index_to_factors(np.arange(4))
    images = dataset.images(np.arange(4))
    assert images.shape == (4, 64, 64, 1) and images.dtype == np.uint8
    grey = 100 + 50 * factors[:, 1] + 20 * factors[:, 3]
    np.testing.assert_array_equal(images[:, 32, 32, 0], grey)


# --------------------------------------------------------------------------- #
# Cars3D and Sprites from a fake Reed et al. archive
# --------------------------------------------------------------------------- #
def write_archive(path, members):
    """A .tar.gz with {member name: bytes} under the archive's own layout."""
    with tarfile.open(path, "w:gz") as archive:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))


def mat_bytes(variables):
    stream = io.BytesIO()
    scipy.io.savemat(stream, variables)
    return stream.getvalue()


def car_mat(car):
    """im [128, 128, 3, 24, 4]: each render a flat colour encoding its factors."""
    azimuth = np.arange(24)[None, :]
    elevation = np.arange(4)[:, None]
    colours = np.stack(
        np.broadcast_arrays(azimuth * 10, elevation * 50, np.full((4, 24), 100 * car)), axis=-1
    )  # [4, 24, 3]
    im = np.broadcast_to(colours.transpose(2, 1, 0)[None, None], (128, 128, 3, 24, 4))
    return mat_bytes({"im": np.ascontiguousarray(im, np.uint8)})


def build(builder_cls, data_dir, manual_dir):
    builder = builder_cls(data_dir=os.fspath(data_dir), file_format="array_record")
    builder.download_and_prepare(
        download_config=tfds.download.DownloadConfig(manual_dir=os.fspath(manual_dir))
    )


class TinyCars3D(td.Cars3D):
    factor_sizes = (4, 24, 2)
    factor_values = tuple(v[:s] for v, s in zip(td.Cars3D.factor_values, factor_sizes))


def test_cars3d_builder_and_dataset(tmp_path):
    manual = tmp_path / "manual"
    manual.mkdir()
    # Archive order differs from name order: cars are numbered by sorted name.
    write_archive(
        manual / reed2015.ARCHIVE_NAME,
        {
            "data/cars/car_002_mesh.mat": car_mat(1),
            "data/cars/car_001_mesh.mat": car_mat(0),
            "data/README.txt": b"not a mat file",
        },
    )
    data_dir = tmp_path / "data"
    with pytest.raises(td.DatasetNotPreparedError, match="tfds build cars3d --imports="):
        TinyCars3D(data_dir=data_dir)
    build(cars3d.Cars3d, data_dir, manual)

    dataset = TinyCars3D(data_dir=data_dir)
    assert dataset.num_records == 4 * 24 * 2
    index = np.arange(dataset.num_images)
    factors = dataset.index_to_factors(index)
    images = dataset.images(index)
    assert images.shape == (192, 64, 64, 3) and images.dtype == np.uint8
    expected = np.stack([factors[:, 1] * 10, factors[:, 0] * 50, factors[:, 2] * 100], axis=1)
    np.testing.assert_array_equal(images[:, 31, 31], expected)


@pytest.mark.parametrize("damage", ["truncated", "not_gzip"])
def test_corrupt_archive_is_named_with_the_fix(tmp_path, damage):
    manual = tmp_path / "manual"
    manual.mkdir()
    archive = manual / reed2015.ARCHIVE_NAME
    write_archive(archive, {"data/cars/car_001_mesh.mat": car_mat(0)})
    data = archive.read_bytes()
    archive.write_bytes(data[: len(data) // 2] if damage == "truncated" else b"<html>" + data)
    with pytest.raises(reed2015.CorruptArchiveError) as raised:
        build(cars3d.Cars3d, tmp_path / "data", manual)
    assert os.fspath(archive) in str(raised.value)
    assert "download it again" in str(raised.value)


def test_the_build_command_names_a_missing_or_damaged_archive_in_one_line(tmp_path):
    command = [sys.executable, "-m", "causal_disent.data.tfds_builders.reed2015", "cars3d",
               f"--data_dir={tmp_path / 'data'}", f"--manual_dir={tmp_path / 'manual'}"]
    archive = tmp_path / "manual" / reed2015.ARCHIVE_NAME
    missing = subprocess.run(command, capture_output=True, text=True)
    assert missing.returncode == 1 and missing.stderr.startswith(
        f"error: {archive} does not exist: download {reed2015.ARCHIVE_URL}")
    archive.parent.mkdir()
    archive.write_bytes(b"<html>not the archive</html>")
    damaged = subprocess.run(command, capture_output=True, text=True)
    assert damaged.returncode == 1 and "Traceback" not in damaged.stderr
    assert damaged.stderr.strip().splitlines()[-1].endswith(
        f"error: {archive} is truncated or corrupt (ReadError: not a gzip file). Delete it "
        f"and download it again from {reed2015.ARCHIVE_URL}.")


def test_corrupt_mat_file_is_named(tmp_path):
    manual = tmp_path / "manual"
    manual.mkdir()
    write_archive(manual / reed2015.ARCHIVE_NAME, {"data/cars/car_001_mesh.mat": b"MATLAB junk"})
    with pytest.raises(reed2015.CorruptArchiveError, match="car_001_mesh.mat"):
        build(cars3d.Cars3d, tmp_path / "data", manual)


def sprite_mat(weapon, frames_per_animation=2):
    """One character: 21 animations of [60*60*3, T] columns in MATLAB order."""
    cells = np.empty((1, 21), object)
    for animation in range(21):
        frames = np.empty((60, 60, 3, frames_per_animation))
        for t in range(frames_per_animation):
            frames[..., t] = np.array([animation, weapon * 5 + t, 1]) / 255.0 * 10
        cells[0, animation] = frames.reshape(60 * 60 * 3, -1, order="F")
    labels = np.array([[0, 0, 0, 0, 0, 0, weapon]], np.float64)
    return mat_bytes({"sprites": cells, "labels": labels, "masks": np.zeros((1, 21), object)})


def test_sprites_builder_and_dataset(tmp_path):
    class TinySprites(td.Sprites):
        factor_sizes = (1, 1, 1, 1, 1, 1, 2, 5, 4)
        factor_values = tuple(np.arange(s, dtype=np.float64) for s in factor_sizes)

    manual = tmp_path / "manual"
    manual.mkdir()
    write_archive(
        manual / reed2015.ARCHIVE_NAME,
        {
            "data/sprites/sprites_0.mat": sprite_mat(0),
            "data/sprites/sprites_1.mat": sprite_mat(1),
            "data/sprites/sprites_splits.mat": mat_bytes({"trainidx": np.array([[1]])}),
        },
    )
    build(sprites.Sprites, tmp_path / "data", manual)

    for frame in (0, 1):
        dataset = TinySprites(data_dir=tmp_path / "data", frame=frame)
        assert dataset.num_records == 2 * 20 * 2  # every frame is stored
        factors = dataset.index_to_factors(np.arange(dataset.num_images))
        images = dataset.images(np.arange(dataset.num_images))
        assert images.shape == (40, 64, 64, 3) and images.dtype == np.uint8
        animation = factors[:, 7] * 4 + factors[:, 8]
        np.testing.assert_array_equal(images[:, 30, 30, 0], animation * 10)
        np.testing.assert_array_equal(images[:, 30, 30, 1], (factors[:, 6] * 5 + frame) * 10)
    with pytest.raises(td.IncompleteGridError, match="no record"):
        TinySprites(data_dir=tmp_path / "data", frame=2)


# --------------------------------------------------------------------------- #
# CelebA
# --------------------------------------------------------------------------- #
def check_one_attribute_pairs(attributes, x, y, action, num_attributes=10):
    first, second = attributes[x, :num_attributes], attributes[y, :num_attributes]
    differ = first != second
    assert np.all(differ.sum(axis=1) == 1)
    changed = np.argmax(differ, axis=1)
    np.testing.assert_array_equal(changed, action % num_attributes)
    increase = action < num_attributes
    np.testing.assert_array_equal(second[np.arange(len(x)), changed], increase)


def test_one_attribute_pairs_differ_in_exactly_one_attribute():
    rng = np.random.default_rng(4)
    attributes = rng.random((300, 40)) < 0.3
    x, y, action = td.sample_one_attribute_pairs(attributes, np.random.default_rng(5), 500)
    check_one_attribute_pairs(attributes, x, y, action)
    assert len(np.unique(action)) > 10  # both directions of many attributes occur
    # Within a subset, both images of every pair come from it.
    subset = np.arange(0, 300, 2)
    x, y, _ = td.sample_one_attribute_pairs(attributes, rng, 200, candidates=subset)
    assert np.isin(x, subset).all() and np.isin(y, subset).all()
    with pytest.raises(ValueError, match="no two images"):
        td.sample_one_attribute_pairs(np.zeros((3, 40), bool), rng, 1)


def test_celeba_attributes_images_and_pairs(tmp_path):
    rng = np.random.default_rng(6)
    attributes = rng.random((12, 40)) < 0.5
    attributes[1, :10] = attributes[0, :10]
    attributes[1, 3] = not attributes[0, 3]  # guarantees at least one pair
    landmarks = tfds.builder("celeb_a", data_dir=os.fspath(tmp_path)).info.features["landmarks"]
    splits, sizes = {}, {"train": 6, "validation": 3, "test": 3}
    start = 0
    for split, size in sizes.items():
        splits[split] = [
            {
                "image": pil(np.full((218, 178, 3), 20 * i)),
                "landmarks": {name: 0 for name in landmarks.keys()},
                "attributes": dict(zip(td.CELEBA_ATTRIBUTE_NAMES, map(bool, attributes[i]))),
                "identity": {"Identity_No": i},
            }
            for i in range(start, start + size)
        ]
        start += size
    prepare_official("celeb_a", tmp_path, splits)

    celeba = td.CelebA(data_dir=tmp_path)
    assert celeba.num_images == 12 and len(celeba.attribute_names) == 40
    split = celeba.predefined_split()
    assert [len(split[s]) for s in ("train", "validation", "test")] == [6, 3, 3]
    # TFDS shuffles within a split, so match images to attributes by content.
    images = celeba.images(np.arange(12))
    assert images.shape == (12, 218, 178, 3) and images.dtype == np.uint8
    source_row = np.rint(images[:, 100, 80, 0] / 20).astype(int)  # JPEG is lossy
    np.testing.assert_array_equal(celeba.attributes(np.arange(12)), attributes[source_row])
    assert os.path.exists(celeba.cache_path)

    all_attributes = celeba.attributes(np.arange(12))
    x, y, action = td.sample_one_attribute_pairs(all_attributes, rng, 50)
    check_one_attribute_pairs(all_attributes, x, y, action)

    # The models' CelebA: the central square resized to 64x64, same attributes.
    small = td.CelebA64(data_dir=tmp_path)
    small_images = small.images(np.array([0, 5]))
    assert small_images.shape == (2, 64, 64, 3) and small_images.dtype == np.uint8
    np.testing.assert_allclose(small_images[:, 32, 32, 0], images[[0, 5], 100, 80, 0], atol=3)

    from causal_disent.data import describe, transitions

    sampler = transitions.sampler_for(small, split, seed=0)
    assert isinstance(sampler, transitions.AttributeTransitionSampler)
    assert sampler.num_actions == 20
    batch = sampler.batch("train", 3, 40)
    assert np.isin(batch["x_index"], split["train"]).all()
    assert np.isin(batch["y_index"], split["train"]).all()
    check_one_attribute_pairs(all_attributes, batch["x_index"], batch["y_index"], batch["action"])
    again = sampler.batch("train", 3, 40)
    assert all(np.array_equal(batch[k], again[k]) for k in batch)  # pure function of the step

    info = describe.describe(celeba)
    assert info["num_images"] == 12 and len(info["attributes"]) == 40
    assert info["splits"] == {"train": 6, "validation": 3, "test": 3}
    assert info["num_actions"] == 20 and info["action_names"][0] == "5_o_Clock_Shadow+"


def test_sprites_reads_matlab_v73_files(tmp_path):
    """The real sprites_<k>.mat are MATLAB v7.3 (HDF5): h5py shows them transposed."""
    h5py = pytest.importorskip("h5py")
    path = tmp_path / "sprites_0.mat"
    expected = scipy.io.loadmat(io.BytesIO(sprite_mat(1)))
    with h5py.File(path, "w", userblock_size=512) as file:
        references = file.create_group("#refs#")
        cells = np.empty((21, 1), h5py.ref_dtype)  # MATLAB 1x21, transposed
        for animation in range(21):
            columns = expected["sprites"][0, animation]
            references[f"a{animation}"] = columns.T
            cells[animation, 0] = references[f"a{animation}"].ref
        file.create_dataset("sprites", data=cells)
        file["labels"] = expected["labels"].T
    header = b"MATLAB 7.3 MAT-file, Platform: GLNXA64".ljust(116) + bytes(8) + b"\x00\x02IM"
    with open(path, "r+b") as f:
        f.write(header)

    name = "data/sprites/sprites_0.mat"
    variables = reed2015.load_mat(name, path.read_bytes())
    labels, animations = sprites.character_animations(name, variables)
    reference = sprites.character_animations(name, expected)
    np.testing.assert_array_equal(labels, reference[0])
    assert len(animations) == 20
    for got, want in zip(animations, reference[1]):
        np.testing.assert_array_equal(got, want)
    assert animations[7][1, 10, 20].tolist() == [70, 60, 10]  # animation 7, weapon 1, frame 1


def test_nothing_here_imported_tensorflow():
    import sys

    assert "tensorflow" not in sys.modules


@pytest.mark.parametrize(
    "cls, num_actions",
    [(td.Shapes3D, 12), (td.DSprites, 10), (td.SmallNORB, 8), (td.Cars3D, 6), (td.Sprites, 18),
     (td.MPI3DReal, 14)],
)
def test_transitions_over_the_real_grids(cls, num_actions):
    """The action counts of the CT-VAE paper's Table 1 (Gendron et al., IJCAI 2023, §4:
    two actions per factor), and pairs that move one factor one step (the
    nuisance instance of SmallNORB never), on each real grid's metadata."""
    from causal_disent.data import splits, transitions
    from causal_disent.data.base import FactorDataset

    class Grid(FactorDataset):  # the class's factor grid, without its data
        name = cls.name
        factor_names = cls.factor_names
        factor_sizes = cls.factor_sizes
        factor_values = cls.factor_values
        nuisance_factors = cls.nuisance_factors

    dataset = Grid()
    split = splits.split_indices(dataset.num_images, (0.7, 0.15, 0.15), seed=0)
    sampler = transitions.TransitionSampler(dataset, split, seed=0)
    assert sampler.num_actions == num_actions
    assert len(transitions.dataset_action_names(dataset)) == num_actions
    batch = sampler.sample("train", np.random.default_rng(0), 3000)
    delta = dataset.index_to_factors(batch["y_index"]) - dataset.index_to_factors(batch["x_index"])
    np.testing.assert_array_equal(np.abs(delta).sum(axis=1), 1)
    moved = np.array(sampler.action_factors)[batch["action"] % sampler.num_factors]
    np.testing.assert_array_equal(np.argmax(delta != 0, axis=1), moved)
    np.testing.assert_array_equal(
        delta[np.arange(3000), moved], np.where(batch["action"] < sampler.num_factors, 1, -1)
    )
    for factor in cls.nuisance_factors:
        np.testing.assert_array_equal(delta[:, factor], 0)


@pytest.mark.parametrize("damage", ["dataset_info", "shards"])
def test_a_damaged_prepared_dataset_says_where_and_how(shapes3d_dir, damage):
    version_dir = shapes3d_dir / "shapes3d" / "2.0.0"
    if damage == "dataset_info":
        (version_dir / "dataset_info.json").write_text("{not json")
    else:
        for shard in version_dir.glob("*.array_record*"):
            shard.unlink()
    with pytest.raises(td.DatasetNotPreparedError) as raised:
        TinyShapes3D(data_dir=shapes3d_dir)
    message = str(raised.value)
    assert message.startswith(f"shapes3d in {shapes3d_dir / 'shapes3d'} cannot be read (")
    assert "delete that folder and prepare it again with:" in message
    assert f"tfds build shapes3d --data_dir={shapes3d_dir}" in message
