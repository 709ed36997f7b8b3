"""MPI3D (Gondal et al., NeurIPS 2019) from files in the release's format: an .npz with
`images` uint8 [N, 64, 64, 3], written here by numpy as the release's are.

A full file holds 1 036 800 images (12.7 GB), so the builder and reader run on tiny
grids (`grids` shrunk in subclasses, as the other real datasets' tests shrink
`factor_sizes`); the image count -> grid choice of the real grids is checked on
files that hold only a full-size header. Every image of a fixture encodes its own
flat index in the file, so the factors each record gets are checked against the
file's row-major order.
"""

import io
import os
import subprocess
import sys
import zipfile

import numpy as np
import pytest

tfds = pytest.importorskip("tensorflow_datasets")

from causal_disent.data import registry  # noqa: E402
from causal_disent.data import tfds_datasets as td  # noqa: E402
from causal_disent.data.tfds_builders import build_mpi3d, mpi3d, mpi3d_release  # noqa: E402
from causal_disent.data.tfds_reading import decode_images  # noqa: E402
from tests.data.test_tfds_datasets import build  # noqa: E402

URL = "https://github.com/rr-learning/disentanglement_dataset"
# Two grids of distinct sizes, standing in for the 6- and 4-colour releases; every
# factor of the first takes at least two values, so every place of the order shows.
TINY_GRIDS = ((3, 2, 2, 2, 2, 2, 3), (2, 2, 2, 1, 1, 2, 2))  # 288 and 32 images


class TinyToyBuilder(mpi3d.Mpi3dToy, skip_registration=True):
    name = "mpi3d_toy"  # TFDS names a subclass after itself otherwise
    grids = TINY_GRIDS


class TinyRealBuilder(mpi3d.Mpi3dReal, skip_registration=True):
    name = "mpi3d_real"
    grids = TINY_GRIDS


class TinyToy(td.MPI3DToy):
    grids = TINY_GRIDS


class TinyReal(td.MPI3DReal):
    grids = TINY_GRIDS


def indexed_images(count):
    """uint8 [count, 64, 64, 3]: image i has red i % 256, green i // 256, blue 200."""
    index = np.arange(count)
    colours = np.stack([index % 256, index // 256, np.full(count, 200)], axis=1)
    return np.broadcast_to(colours[:, None, None, :], (count, 64, 64, 3)).astype(np.uint8)


def index_encoded(images):
    pixels = images[:, 10, 20].astype(np.int64)
    return pixels[:, 0] + 256 * pixels[:, 1]


def header_only_file(path, shape, dtype="|u1"):
    """An .npz whose `images` has the header of `shape` and no pixels."""
    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(
        header, {"descr": dtype, "fortran_order": False, "shape": tuple(shape)})
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("images.npy", header.getvalue())
    return path


def expected_factors(index, sizes):
    """The factors of flat index `index`, the last factor fastest, written out."""
    factors = []
    for size in reversed(sizes):
        factors.append(index % size)
        index //= size
    return factors[::-1]


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    """mpi3d_toy built from a 288-image file (the first tiny grid) and mpi3d_real from
    a compressed 32-image file (the second)."""
    root = tmp_path_factory.mktemp("mpi3d")
    manual = root / "manual"
    manual.mkdir()
    np.savez(manual / "mpi3d_toy.npz", images=indexed_images(288))
    np.savez_compressed(manual / "mpi3d_real.npz", images=indexed_images(32))
    build(TinyToyBuilder, root / "data", manual)
    build(TinyRealBuilder, root / "data", manual)
    return root / "data"


# --------------------------------------------------------------------------- #
# The release's facts
# --------------------------------------------------------------------------- #
def test_the_two_releases_grids_and_the_value_names():
    assert mpi3d_release.GRID_SIZES == (6, 6, 2, 3, 3, 40, 40)
    assert mpi3d_release.EARLIER_GRID_SIZES == (4, 4, 2, 3, 3, 40, 40)
    assert [np.prod(g) for g in mpi3d_release.KNOWN_GRIDS] == [1_036_800, 460_800]
    names = (mpi3d_release.COLOR_NAMES, mpi3d_release.SHAPE_NAMES, mpi3d_release.SIZE_NAMES,
             mpi3d_release.CAMERA_HEIGHT_NAMES, mpi3d_release.BACKGROUND_NAMES)
    assert [len(n) for n in names] == list(mpi3d_release.GRID_SIZES[:5])
    assert mpi3d_release.FACTOR_NAMES == (
        "object_color", "object_shape", "object_size", "camera_height", "background_color",
        "horizontal_axis", "vertical_axis")


def test_three_registered_variants_share_the_current_releases_grid():
    for name, cls in [("mpi3d_toy", td.MPI3DToy), ("mpi3d_realistic", td.MPI3DRealistic),
                      ("mpi3d_real", td.MPI3DReal)]:
        assert registry.dataset_class(name) is cls
        assert cls.name == cls.tfds_name == name and name in mpi3d.BUILDERS
        assert registry.DATASETS[name].reads_data_dir
        assert cls.factor_sizes == (6, 6, 2, 3, 3, 40, 40) and cls.image_shape == (64, 64, 3)
        assert [len(v) for v in cls.factor_values] == list(cls.factor_sizes)
        assert cls.label_features == tuple(f"label_{n}" for n in mpi3d_release.FACTOR_NAMES)


def test_the_image_count_picks_the_grid():
    assert mpi3d_release.grid_of(1_036_800, "f.npz") == (6, 6, 2, 3, 3, 40, 40)
    assert mpi3d_release.grid_of(460_800, "f.npz") == (4, 4, 2, 3, 3, 40, 40)
    with pytest.raises(mpi3d_release.ReleaseFileError) as raised:
        mpi3d_release.grid_of(1_036_799, "/data/mpi3d_real.npz")
    message = str(raised.value)
    assert message.startswith("/data/mpi3d_real.npz holds 1,036,799 images, but an MPI3D "
                              "file holds 1,036,800 (6 x 6 x 2 x 3 x 3 x 40 x 40) or 460,800 "
                              "(4 x 4 x 2 x 3 x 3 x 40 x 40)")
    assert message.endswith(f"Download it again from {URL}.")


@pytest.mark.parametrize("count, sizes", [(1_036_800, (6, 6, 2, 3, 3, 40, 40)),
                                          (460_800, (4, 4, 2, 3, 3, 40, 40))])
def test_a_full_size_files_grid_comes_from_its_header_alone(tmp_path, count, sizes):
    path = header_only_file(tmp_path / "mpi3d_real.npz", (count, 64, 64, 3))
    checked = mpi3d_release.check_file(path, "mpi3d_real")
    assert checked == mpi3d_release.ReleaseFile(os.fspath(path), count, sizes)
    # The pixels are missing: reading them names the file as truncated.
    with pytest.raises(mpi3d_release.ReleaseFileError,
                       match=rf"truncated or corrupt \(its images end after 0 of {count:,}\)"):
        next(mpi3d_release.iter_images(checked))


# --------------------------------------------------------------------------- #
# Builder and reader on tiny grids
# --------------------------------------------------------------------------- #
def test_every_record_has_the_factors_of_its_place_in_the_file(data_dir):
    dataset = TinyToy(data_dir=data_dir)
    sizes = TINY_GRIDS[0]
    assert dataset.num_records == dataset.num_images == 288
    assert dataset.factor_sizes == sizes
    assert [len(v) for v in dataset.factor_values] == list(sizes)
    source = dataset._sources[0]
    records = source.__getitems__(list(range(len(source))))
    file_index = index_encoded(decode_images([r["image"] for r in records], (64, 64, 3)))
    assert not np.array_equal(file_index, np.arange(288))  # TFDS shuffled the records
    np.testing.assert_array_equal(np.sort(file_index), np.arange(288))
    for record, index in zip(records, file_index):
        found = [int(record[f"label_{n}"]) for n in mpi3d_release.FACTOR_NAMES]
        assert found == expected_factors(int(index), sizes), index


def test_images_come_back_in_the_files_row_major_order(data_dir):
    dataset = TinyToy(data_dir=data_dir)
    index = np.arange(dataset.num_images)
    images = dataset.images(index)
    assert images.shape == (288, 64, 64, 3) and images.dtype == np.uint8
    np.testing.assert_array_equal(index_encoded(images), index)  # PNG is lossless
    np.testing.assert_array_equal(images[:, :, :, 2], 200)
    # The last factor is the fastest, the first the slowest.
    assert dataset.index_to_factors(np.array([1]))[0].tolist() == [0, 0, 0, 0, 0, 0, 1]
    first_colour_step = 288 // 3
    assert dataset.index_to_factors(np.array([first_colour_step]))[0].tolist() == [
        1, 0, 0, 0, 0, 0, 0]
    # Random access in any order, with repeats.
    again = dataset.images(np.array([287, 5, 287]))
    np.testing.assert_array_equal(index_encoded(again), [287, 5, 287])


def test_the_other_image_count_gives_the_other_grid(data_dir):
    dataset = TinyReal(data_dir=data_dir)  # built from a compressed .npz
    assert dataset.factor_sizes == TINY_GRIDS[1] and dataset.num_images == 32
    np.testing.assert_array_equal(index_encoded(dataset.images(np.arange(32))), np.arange(32))


def test_prepare_builds_the_named_variant_from_the_manual_dir(tmp_path, monkeypatch):
    """What the build command runs once the file is checked."""
    monkeypatch.setitem(mpi3d.BUILDERS, "mpi3d_toy", TinyToyBuilder)
    manual = tmp_path / "elsewhere"
    manual.mkdir()
    np.savez(manual / "mpi3d_toy.npz", images=indexed_images(32))
    build_mpi3d.prepare("mpi3d_toy", str(tmp_path / "data"), str(manual))
    dataset = TinyToy(data_dir=tmp_path / "data")
    assert dataset.factor_sizes == TINY_GRIDS[1]
    np.testing.assert_array_equal(index_encoded(dataset.images(np.arange(32))), np.arange(32))


def test_a_prepared_count_of_no_grid_is_refused_with_how_to_prepare(data_dir):
    class FirstGridOnly(td.MPI3DReal):
        grids = TINY_GRIDS[:1]

    with pytest.raises(td.DatasetNotPreparedError) as raised:
        FirstGridOnly(data_dir=data_dir)
    message = str(raised.value)
    assert message.startswith(
        f"mpi3d_real in {data_dir / 'mpi3d_real' / '1.0.0'} holds 32 images, but MPI3D has "
        f"288 (3 x 2 x 2 x 2 x 2 x 2 x 3)")
    assert "Delete that folder and prepare it again with:" in message
    assert f"build_mpi3d mpi3d_real --data_dir={data_dir}" in message


@pytest.mark.parametrize("name", ["mpi3d_toy", "mpi3d_realistic", "mpi3d_real"])
def test_not_prepared_says_where_to_download_and_which_command_prepares(tmp_path, name):
    with pytest.raises(td.DatasetNotPreparedError) as raised:
        registry.get_dataset(name, data_dir=str(tmp_path))
    message = str(raised.value)
    assert message.startswith(f"{name} is not prepared: looked for {tmp_path / name}")
    assert f"# put {name}.npz (from {URL}) in {tmp_path}/downloads/manual/, then" in message
    assert (f"python -m causal_disent.data.tfds_builders.build_mpi3d {name} "
            f"--data_dir={tmp_path}") in message
    assert (f"tfds build {name} --imports=causal_disent.data.tfds_builders.mpi3d "
            f"--data_dir={tmp_path} --file_format=array_record") in message


# --------------------------------------------------------------------------- #
# Files that are not the release's
# --------------------------------------------------------------------------- #
def write_bad_file(path, damage):
    if damage == "count":
        np.savez(path, images=indexed_images(5))
    elif damage == "key":
        np.savez(path, pictures=indexed_images(32))
    elif damage == "dtype":
        np.savez(path, images=indexed_images(32).astype(np.float32))
    elif damage == "shape":
        np.savez(path, images=np.zeros((32, 3, 64, 64), np.uint8))
    elif damage == "fortran":
        np.savez(path, images=np.asfortranarray(indexed_images(32)))
    elif damage == "not_npz":
        path.write_bytes(b"<html>not the file</html>")
    elif damage == "cut":
        np.savez(path, images=indexed_images(32))
        path.write_bytes(path.read_bytes()[:100_000])


BAD_FILES = {
    "count": "holds 5 images, but an MPI3D file holds 288 (3 x 2 x 2 x 2 x 2 x 2 x 3) or 32",
    "key": "has no array 'images' (it holds pictures)",
    "dtype": "'images' is float32 [32, 64, 64, 3], but an MPI3D release file holds uint8 "
             "[N, 64, 64, 3]",
    "shape": "'images' is uint8 [32, 3, 64, 64], but an MPI3D release file holds uint8 "
             "[N, 64, 64, 3]",
    "fortran": "'images' is stored in Fortran order",
    "not_npz": "is truncated or corrupt (not an .npz archive",
    "cut": "is truncated or corrupt (not an .npz archive",
}


@pytest.mark.parametrize("damage", sorted(BAD_FILES))
def test_a_file_that_is_not_the_releases_is_named_with_the_fix(tmp_path, damage):
    path = tmp_path / "mpi3d_toy.npz"
    write_bad_file(path, damage)
    with pytest.raises(mpi3d_release.ReleaseFileError) as raised:
        mpi3d_release.check_file(path, "mpi3d_toy", TINY_GRIDS)
    message = str(raised.value)
    assert message.startswith(str(path)) and BAD_FILES[damage] in message
    assert message.lower().endswith(f"download it again from {URL}.")


def test_a_missing_file_says_where_to_get_it_and_the_command(tmp_path):
    with pytest.raises(FileNotFoundError) as raised:
        mpi3d_release.check_file(tmp_path / "mpi3d_realistic.npz", "mpi3d_realistic")
    message = str(raised.value)
    assert message.startswith(f"{tmp_path / 'mpi3d_realistic.npz'} not found. Download "
                              f"mpi3d_realistic.npz from the MPI3D release, {URL}")
    assert "python -m causal_disent.data.tfds_builders.build_mpi3d mpi3d_realistic" in message


def test_the_builder_refuses_a_file_of_no_grid(tmp_path):
    manual = tmp_path / "manual"
    manual.mkdir()
    np.savez(manual / "mpi3d_toy.npz", images=indexed_images(7))
    with pytest.raises(mpi3d_release.ReleaseFileError, match="holds 7 images, but an MPI3D"):
        build(TinyToyBuilder, tmp_path / "data", manual)


def test_the_build_command_names_a_missing_or_wrong_file_in_one_line(tmp_path):
    command = [sys.executable, "-m", "causal_disent.data.tfds_builders.build_mpi3d",
               "mpi3d_toy", f"--data_dir={tmp_path / 'data'}",
               f"--manual_dir={tmp_path / 'manual'}"]
    path = tmp_path / "manual" / "mpi3d_toy.npz"
    missing = subprocess.run(command, capture_output=True, text=True)
    assert missing.returncode == 1
    assert missing.stderr == (f"error: {path} does not exist: download mpi3d_toy.npz from "
                              f"{URL} and put it there, or pass --manual_dir=<the folder "
                              f"holding it>\n")
    path.parent.mkdir()
    np.savez(path, images=indexed_images(3))
    wrong = subprocess.run(command, capture_output=True, text=True)
    assert wrong.returncode == 1 and "Traceback" not in wrong.stderr
    assert wrong.stderr.startswith(f"error: {path} holds 3 images, but an MPI3D file holds "
                                   f"1,036,800 (6 x 6 x 2 x 3 x 3 x 40 x 40) or 460,800")
    assert len(wrong.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "data").exists()  # refused before TFDS wrote anything
