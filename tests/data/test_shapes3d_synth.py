"""Tests for the procedural Shapes3D renderer.

Distinctness of all 480 000 images is argued structurally rather than by
rendering them all:
  * the brightest channel of every pixel is round(255 * shading), whatever the
    hues (checked on rendered images), so images of different geometries differ
    as soon as their quantised shading maps differ -- all 480 maps are checked
    pairwise distinct;
  * within one geometry, each region (floor, wall, object) covers at least one
    pixel, and at every shade level in use the 10 hues give 10 distinct
    colours, so changing any hue changes the image.
A random-sample hash check backs this up on real renders.
"""

import colorsys
import hashlib
import itertools

import numpy as np
import pytest
from PIL import Image

from causal_disent.data import shapes3d_synth as s3d
from causal_disent.data.shapes3d_synth import (
    FACTOR_NAMES,
    FACTOR_SIZES,
    SHAPE_NAMES,
    Shapes3DSynth,
)
from causal_disent.utils.figures import save_png

NUM_GEOMETRIES = 8 * 4 * 15


@pytest.fixture(scope="module")
def dataset() -> Shapes3DSynth:
    return Shapes3DSynth()


@pytest.fixture(scope="module")
def templates(dataset):
    return dataset.geometry_templates()


@pytest.fixture(scope="module")
def shade_levels(templates) -> np.ndarray:
    _, shading = templates
    return np.rint(shading * 255.0).astype(np.int64)


def _image_hashes(images: np.ndarray) -> list[bytes]:
    return [hashlib.blake2b(image.tobytes(), digest_size=16).digest() for image in images]


# --------------------------------------------------------------------------- #
# API and indexing
# --------------------------------------------------------------------------- #
def test_constants_and_factor_values(dataset):
    assert FACTOR_NAMES == ("floor_hue", "wall_hue", "object_hue", "scale", "shape", "orientation")
    assert FACTOR_SIZES == (10, 10, 10, 8, 4, 15)
    assert SHAPE_NAMES == ("cube", "cylinder", "sphere", "capsule")
    assert dataset.name == "shapes3d_synth"
    assert dataset.image_shape == (64, 64, 3)
    assert dataset.factor_names == FACTOR_NAMES
    assert dataset.factor_sizes == FACTOR_SIZES
    assert dataset.num_images == 480_000
    hues = [0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9]
    for values in dataset.factor_values[:3]:
        np.testing.assert_allclose(values, hues, atol=1e-12)
    np.testing.assert_allclose(dataset.factor_values[3], np.linspace(0.75, 1.25, 8))
    np.testing.assert_array_equal(dataset.factor_values[4], [0, 1, 2, 3])
    np.testing.assert_allclose(dataset.factor_values[5], np.linspace(-30, 30, 15))
    assert [len(v) for v in dataset.factor_values] == list(FACTOR_SIZES)


def test_official_ordering_orientation_fastest(dataset):
    expected = {
        1: [0, 0, 0, 0, 0, 1],
        14: [0, 0, 0, 0, 0, 14],
        15: [0, 0, 0, 0, 1, 0],
        60: [0, 0, 0, 1, 0, 0],
        480: [0, 0, 1, 0, 0, 0],
        4800: [0, 1, 0, 0, 0, 0],
        48000: [1, 0, 0, 0, 0, 0],
        479_999: [9, 9, 9, 7, 3, 14],
    }
    index = np.array(list(expected))
    np.testing.assert_array_equal(dataset.index_to_factors(index), list(expected.values()))
    np.testing.assert_array_equal(dataset.factors_to_index(list(expected.values())), index)


def test_index_factor_round_trip_over_all_images(dataset):
    index = np.arange(dataset.num_images)
    factors = dataset.index_to_factors(index)
    assert factors.dtype == np.int64 and factors.shape == (480_000, 6)
    np.testing.assert_array_equal(factors, np.stack(np.unravel_index(index, FACTOR_SIZES), -1))
    round_trip = dataset.factors_to_index(factors)
    assert round_trip.dtype == np.int64
    np.testing.assert_array_equal(round_trip, index)


def test_images_match_render_of_their_factors(dataset):
    index = np.random.default_rng(1).integers(0, dataset.num_images, 300)
    np.testing.assert_array_equal(
        dataset.images(index), dataset.render(dataset.index_to_factors(index))
    )


@pytest.mark.parametrize("batch", [0, 1, 7])
def test_dtype_and_shape(dataset, batch):
    index = np.arange(batch, dtype=np.int32)
    for images in (dataset.images(index), dataset.render(dataset.index_to_factors(index))):
        assert images.dtype == np.uint8
        assert images.shape == (batch, 64, 64, 3)
        assert images.flags.c_contiguous


def test_sample_factors(dataset):
    factors = dataset.sample_factors(np.random.default_rng(3), 5000)
    assert factors.shape == (5000, 6) and factors.dtype == np.int64
    for column, size in enumerate(FACTOR_SIZES):
        np.testing.assert_array_equal(np.unique(factors[:, column]), np.arange(size))
    again = dataset.sample_factors(np.random.default_rng(3), 5000)
    np.testing.assert_array_equal(factors, again)
    assert dataset.sample_factors(np.random.default_rng(0), 0).shape == (0, 6)


# --------------------------------------------------------------------------- #
# Determinism and distinctness
# --------------------------------------------------------------------------- #
def test_deterministic_within_and_across_instances(dataset):
    index = np.random.default_rng(2).choice(dataset.num_images, 2000, replace=False)
    first = dataset.images(index)
    assert first.tobytes() == dataset.images(index).tobytes()
    fresh = Shapes3DSynth()
    assert first.tobytes() == fresh.images(index).tobytes()
    for ours, theirs in zip(dataset.geometry_templates(), fresh.geometry_templates()):
        assert ours.tobytes() == theirs.tobytes()


def test_every_factor_value_changes_the_image(dataset):
    bases = [[0, 5, 8, 4, 0, 7], [3, 3, 3, 0, 2, 0], [9, 1, 6, 7, 3, 14]]
    for base in bases:
        for column, size in enumerate(FACTOR_SIZES):
            sweep = np.tile(base, (size, 1))
            sweep[:, column] = np.arange(size)
            hashes = _image_hashes(dataset.render(sweep))
            assert len(set(hashes)) == size, (FACTOR_NAMES[column], base)


def test_all_geometry_templates_pairwise_distinct(templates, shade_levels):
    labels, _ = templates
    assert labels.shape == (NUM_GEOMETRIES, 64, 64) and labels.dtype == np.uint8
    flat_levels = shade_levels.reshape(NUM_GEOMETRIES, -1)
    assert len(np.unique(flat_levels, axis=0)) == NUM_GEOMETRIES
    # Not needed for the argument, but the silhouettes alone already differ.
    assert len(np.unique(labels.reshape(NUM_GEOMETRIES, -1), axis=0)) == NUM_GEOMETRIES


def test_every_region_visible_in_every_template(templates):
    labels, _ = templates
    counts = np.stack(
        [(labels == region).sum(axis=(1, 2)) for region in range(len(s3d.REGION_NAMES))], -1
    )
    assert set(np.unique(labels)) == {s3d.REGION_FLOOR, s3d.REGION_WALL, s3d.REGION_OBJECT}
    assert counts.min() >= 50, counts.min(axis=0)


def test_shading_is_positive_and_quantised(templates, shade_levels):
    _, shading = templates
    assert shading.dtype == np.float32
    assert shading.min() > 0.0 and shading.max() <= 1.0
    np.testing.assert_allclose(shading * 255.0, shade_levels, atol=1e-4)
    assert shade_levels.min() >= s3d._MIN_SHADE_LEVEL


def test_hues_give_distinct_colours_at_every_shade_level_in_use(shade_levels):
    table = s3d.colour_table()
    for level in np.unique(shade_levels):
        colours = table[:, level]  # [10, 3]
        assert len(np.unique(colours, axis=0)) == FACTOR_SIZES[0], level
        # The brightest channel carries the shading, independent of the hue.
        assert (colours.max(axis=-1) == level).all()


def test_brightest_channel_equals_quantised_shading(dataset, shade_levels):
    index = np.random.default_rng(4).integers(0, dataset.num_images, 500)
    images = dataset.images(index)
    geometry = index % NUM_GEOMETRIES
    np.testing.assert_array_equal(images.max(axis=-1), shade_levels[geometry])


def test_pixels_are_region_hue_times_shading(dataset, templates):
    labels, shading = templates
    factors = np.array([[2, 7, 4, 5, 1, 3]])
    image = dataset.render(factors)[0].astype(np.float64)
    geometry = dataset.factors_to_index(factors)[0] % NUM_GEOMETRIES
    hue_of_region = np.array(factors[0, :3]) / 10.0
    rgb = np.array([colorsys.hsv_to_rgb(h, 1.0, 1.0) for h in hue_of_region])
    expected = rgb[labels[geometry]] * shading[geometry, ..., None] * 255.0
    np.testing.assert_allclose(image, expected, atol=0.5 + 1e-3)


def test_all_hue_combinations_distinct_for_some_geometries(dataset):
    hues = np.stack(np.unravel_index(np.arange(1000), (10, 10, 10)), -1)
    for geometry in (0, 137, 479):
        geometry_factors = np.unravel_index(geometry, FACTOR_SIZES[3:])
        factors = np.concatenate([hues, np.tile(geometry_factors, (1000, 1))], axis=1)
        assert len(set(_image_hashes(dataset.render(factors)))) == 1000


def test_random_sample_of_distinct_indices_gives_distinct_images(dataset):
    index = np.random.default_rng(5).choice(dataset.num_images, 20_000, replace=False)
    hashes = []
    for chunk in np.array_split(index, 10):
        hashes += _image_hashes(dataset.images(chunk))
    assert len(set(hashes)) == len(index)


def test_hue_to_rgb_matches_colorsys():
    hues = np.arange(10) / 10.0
    expected = [colorsys.hsv_to_rgb(h, 1.0, 1.0) for h in hues]
    np.testing.assert_allclose(s3d.hue_to_rgb(hues), expected, atol=1e-6)
    assert (s3d.hue_to_rgb(hues).max(axis=-1) == 1.0).all()


# --------------------------------------------------------------------------- #
# The scene looks like Shapes3D
# --------------------------------------------------------------------------- #
def test_room_layout(templates):
    labels, _ = templates
    floor_fraction = (labels == s3d.REGION_FLOOR).mean(axis=(1, 2))
    assert 0.15 < floor_fraction.min() and floor_fraction.max() < 0.5
    assert (labels[:, 0] == s3d.REGION_WALL).all()  # top row: wall only
    assert (labels[:, -1] != s3d.REGION_WALL).all()  # bottom row: floor or object
    columns = np.arange(64)
    on_object = labels == s3d.REGION_OBJECT
    centre = (on_object.sum(axis=1) * columns).sum(-1) / on_object.sum(axis=(1, 2))
    assert np.abs(centre - 31.5).max() < 6  # object stands in the middle


def test_larger_scale_means_larger_object(templates):
    labels, _ = templates
    area = (labels == s3d.REGION_OBJECT).sum(axis=(1, 2)).reshape(8, 4, 15)
    assert (np.diff(area, axis=0) > 0).all()
    assert (area[-1] > 1.5 * area[0]).all()


def test_shapes_differ_clearly(templates, shade_levels):
    # A small frontal cube and cylinder share much of their outline; they are
    # told apart by shading (flat faces vs a gradient round the side), so
    # compare outline and shading together.
    labels, _ = templates
    on_object = (labels == s3d.REGION_OBJECT).reshape(8, 4, 15, 64, 64)
    levels = shade_levels.reshape(8, 4, 15, 64, 64)
    for first, second in itertools.combinations(range(4), 2):
        outline = (on_object[:, first] != on_object[:, second]).sum(axis=(-1, -2))
        assert outline.min() >= 10, (SHAPE_NAMES[first], SHAPE_NAMES[second])
        contrast = np.abs(levels[:, first] - levels[:, second]) > 10
        assert contrast.sum(axis=(-1, -2)).min() >= 100, (SHAPE_NAMES[first], SHAPE_NAMES[second])


def test_orientation_slides_the_wall_corner(shade_levels):
    # The top row shows only wall; the two walls are lit differently, so the
    # corner is where the shading jumps most.
    top_rows = shade_levels.reshape(8, 4, 15, 64, 64)[..., 0, :].astype(float)
    corner = np.argmax(np.abs(np.diff(top_rows, axis=-1)), axis=-1)  # [8, 4, 15]
    assert (np.diff(corner, axis=-1) > 0).all()
    assert (corner[..., -1] - corner[..., 0] > 30).all()


# --------------------------------------------------------------------------- #
# Input validation
# --------------------------------------------------------------------------- #
@pytest.mark.parametrize(
    "factors, message",
    [
        (np.zeros((3, 5), np.int64), r"shape \[B, 6\]"),
        (np.zeros(6, np.int64), r"shape \[B, 6\]"),
        (np.zeros((2, 6), np.float32), "integers"),
        (np.zeros((2, 6), bool), "integers"),
        ([[0, 0, 0, 8, 0, 0]], r"'scale' \(column 3\) must be in \[0, 7\], got 8"),
        ([[0, 0, 0, 0, 4, 0]], r"'shape' \(column 4\) must be in \[0, 3\]"),
        ([[0, 0, 0, 0, 0, 15]], r"'orientation' \(column 5\) must be in \[0, 14\]"),
        ([[-1, 0, 0, 0, 0, 0]], r"'floor_hue' \(column 0\) must be in \[0, 9\], got -1"),
        ([[0, 0, 10, 0, 0, 0]], r"'object_hue'"),
    ],
)
def test_bad_factors_raise(dataset, factors, message):
    with pytest.raises(ValueError, match=message):
        dataset.render(factors)
    with pytest.raises(ValueError, match=message):
        dataset.factors_to_index(factors)


@pytest.mark.parametrize(
    "index, message",
    [
        (np.zeros((2, 2), np.int64), r"shape \[B\]"),
        (np.int64(3), r"shape \[B\]"),
        (np.array([0.0, 1.0]), "integers"),
        (np.array([0, 480_000]), r"\[0, 479999\], got 480000"),
        (np.array([-1]), r"\[0, 479999\], got -1"),
    ],
)
def test_bad_index_raises(dataset, index, message):
    with pytest.raises(ValueError, match=message):
        dataset.images(index)
    with pytest.raises(ValueError, match=message):
        dataset.index_to_factors(index)


def test_bad_sample_arguments_raise(dataset):
    with pytest.raises(ValueError, match="Generator"):
        dataset.sample_factors(np.random.RandomState(0), 3)
    with pytest.raises(ValueError, match="non-negative"):
        dataset.sample_factors(np.random.default_rng(0), -1)
    with pytest.raises(ValueError, match="non-negative"):
        dataset.sample_factors(np.random.default_rng(0), 2.5)


# --------------------------------------------------------------------------- #
# Figures
# --------------------------------------------------------------------------- #
def test_save_png_round_trip(tmp_path, dataset):
    image = dataset.images(np.array([12345]))[0]
    path = tmp_path / "image.png"
    save_png(image, str(path))
    np.testing.assert_array_equal(np.asarray(Image.open(path)), image)
    with pytest.raises(ValueError, match="uint8"):
        save_png(image.astype(np.float32), str(path))
