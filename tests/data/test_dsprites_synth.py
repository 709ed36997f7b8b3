"""Tests for the procedural dSprites renderer: metadata, indexing, and geometric
properties of the rendered sprites (area, centroid, symmetry, containment)."""

import numpy as np
import pytest

from causal_disent.data import dsprites_synth as dsp
from causal_disent.data.dsprites_synth import FACTOR_NAMES, FACTOR_SIZES, DSpritesSynth

SQUARE, ELLIPSE, HEART = 0, 1, 2
SHAPE, SCALE, ORIENTATION, X_POSITION, Y_POSITION = range(5)
PIXEL_CENTRES = np.arange(64) + 0.5


@pytest.fixture(scope="module")
def dataset() -> DSpritesSynth:
    return DSpritesSynth()


def _grid(**fixed_or_swept) -> np.ndarray:
    """[B, 5] factor tuples: every combination of the given index lists; factors
    not named are held at (heart, scale 1, orientation 0, centre-ish position)."""
    base = {"shape": [HEART], "scale": [5], "orientation": [0]}
    base.update(x_position=[15], y_position=[15])
    base.update({k: np.atleast_1d(v) for k, v in fixed_or_swept.items()})
    mesh = np.meshgrid(*(base[name] for name in FACTOR_NAMES), indexing="ij")
    return np.stack([m.ravel() for m in mesh], axis=1)


def _sprites(dataset, factors) -> np.ndarray:
    """[B, 64, 64] float images of the given factor tuples."""
    return dataset.render(factors)[..., 0].astype(np.float64)


def _centroids(images: np.ndarray) -> np.ndarray:
    """[B, 2] (x, y) centroid of the on pixels, in pixel units, y downward."""
    area = images.sum(axis=(1, 2))
    x = (images.sum(axis=1) * PIXEL_CENTRES).sum(axis=1) / area
    y = (images.sum(axis=2) * PIXEL_CENTRES).sum(axis=1) / area
    return np.stack([x, y], axis=1)


# --------------------------------------------------------------------------- #
# Metadata and indexing
# --------------------------------------------------------------------------- #
def test_factor_metadata(dataset):
    assert dataset.name == "dsprites_synth"
    assert dataset.factor_names == ("shape", "scale", "orientation", "x_position", "y_position")
    assert dataset.factor_sizes == FACTOR_SIZES == (3, 6, 40, 32, 32)
    assert dataset.num_images == 737_280
    assert dataset.image_shape == (64, 64, 1)
    values = dataset.factor_values
    np.testing.assert_array_equal(values[SHAPE], [1.0, 2.0, 3.0])
    np.testing.assert_allclose(values[SCALE], [0.5, 0.6, 0.7, 0.8, 0.9, 1.0])
    assert values[ORIENTATION][0] == 0.0 and values[ORIENTATION][-1] == 2.0 * np.pi
    np.testing.assert_allclose(np.diff(values[ORIENTATION]), 2.0 * np.pi / 39)
    for f in (X_POSITION, Y_POSITION):
        np.testing.assert_allclose(values[f], np.arange(32) / 31)


def test_row_major_index_order(dataset):
    rng = np.random.default_rng(0)
    factors = dataset.sample_factors(rng, 200)
    index = dataset.factors_to_index(factors)
    np.testing.assert_array_equal(dataset.index_to_factors(index), factors)
    np.testing.assert_array_equal(dataset.factors_to_index(dataset.index_to_factors(index)), index)
    # Last factor fastest: one more y position is the next image.
    step = factors[factors[:, Y_POSITION] < 31]
    bumped = step + np.array([0, 0, 0, 0, 1])
    np.testing.assert_array_equal(
        dataset.factors_to_index(bumped), dataset.factors_to_index(step) + 1
    )
    np.testing.assert_array_equal(dataset.index_to_factors(np.array([0, 32, 737_279])),
                                  [[0, 0, 0, 0, 0], [0, 0, 0, 1, 0], [2, 5, 39, 31, 31]])


# --------------------------------------------------------------------------- #
# Images
# --------------------------------------------------------------------------- #
def test_images_are_binary_uint8(dataset):
    index = np.random.default_rng(1).integers(0, dataset.num_images, size=32)
    images = dataset.images(index)
    assert images.shape == (32, 64, 64, 1) and images.dtype == np.uint8
    assert set(np.unique(images)) == {0, 255}
    assert np.all(images.sum(axis=(1, 2, 3)) > 0)  # every image shows a sprite


def test_deterministic_and_independent_of_batch(dataset):
    index = np.random.default_rng(2).integers(0, dataset.num_images, size=300)
    together = dataset.images(index)  # crosses a render chunk boundary
    np.testing.assert_array_equal(together, dataset.images(index))
    one_by_one = np.concatenate([dataset.images(index[i : i + 1]) for i in range(0, 300, 37)])
    np.testing.assert_array_equal(one_by_one, together[::37])
    np.testing.assert_array_equal(dataset.images(index[::-1]), together[::-1])
    np.testing.assert_array_equal(dataset.render(dataset.index_to_factors(index)), together)


def test_area_grows_with_scale_squared(dataset):
    # Averaged over orientations so that pixel-grid luck cancels out.
    for shape in (SQUARE, ELLIPSE, HEART):
        areas = _sprites(dataset, _grid(shape=shape, scale=[0, 5], orientation=np.arange(40)))
        small, large = areas.sum(axis=(1, 2)).reshape(2, 40).mean(axis=1)
        assert 3.7 < large / small < 4.3, (shape, large / small)


def test_area_is_invariant_under_rotation(dataset):
    for shape in (SQUARE, ELLIPSE, HEART):
        areas = _sprites(dataset, _grid(shape=shape, orientation=np.arange(40))).sum(axis=(1, 2))
        assert np.max(np.abs(areas / areas.mean() - 1.0)) < 0.05, (shape, areas)


def test_centroid_is_linear_in_position(dataset):
    positions = np.arange(32)
    for shape in (SQUARE, ELLIPSE, HEART):
        for axis, factor in ((0, "x_position"), (1, "y_position")):
            images = _sprites(dataset, _grid(shape=shape, orientation=7, **{factor: positions}))
            centroid = _centroids(images)
            moving, other = centroid[:, axis], centroid[:, 1 - axis]
            values = positions / 31
            slope, intercept = np.polyfit(values, moving, 1)
            # Right with x, down with y (rows grow downward), from MARGIN to 64 - MARGIN.
            assert slope == pytest.approx(64 - 2 * dsp.MARGIN, abs=0.5)
            assert intercept == pytest.approx(dsp.MARGIN, abs=0.5)
            assert np.max(np.abs(moving - (slope * values + intercept))) < 0.3
            assert np.ptp(other) < 0.3  # the other coordinate stays put


def test_orientation_rotates_counter_clockwise(dataset):
    # The ellipse's major axis starts horizontal; after ~46 degrees counter-
    # clockwise it runs from lower left to upper right: x and the row index
    # are anti-correlated.
    images = _sprites(dataset, _grid(shape=ELLIPSE, orientation=[0, 5]))
    rows, cols = np.meshgrid(PIXEL_CENTRES, PIXEL_CENTRES, indexing="ij")
    correlations = []
    for image in images:
        x, y = cols[image > 0], rows[image > 0]
        correlations.append(np.corrcoef(x, y)[0, 1])
        if len(correlations) == 1:
            assert np.var(x) > 3 * np.var(y)  # horizontal at orientation 0
    assert abs(correlations[0]) < 0.05 and correlations[1] < -0.5, correlations


def test_heart_lacks_the_ellipses_half_turn_symmetry(dataset):
    # Positions i and 31 - i are mirror images through the canvas centre, and so
    # is the pixel grid; a shape symmetric under a half turn therefore gives the
    # point-reflected image there.
    for shape, symmetric in ((ELLIPSE, True), (HEART, False)):
        factors = _grid(shape=shape, orientation=[0, 3], x_position=[4, 27], y_position=[9, 22])
        factors = factors.reshape(2, 2, 2, 5)
        images = _sprites(dataset, factors.reshape(-1, 5)).reshape(2, 2, 2, 64, 64)
        for orientation in range(2):
            turned = images[orientation, 0, 0, ::-1, ::-1]
            mismatch = np.sum(turned != images[orientation, 1, 1])
            assert (mismatch <= 2) if symmetric else (mismatch > 30), (shape, mismatch)


def test_orientation_zero_and_two_pi_give_the_same_image(dataset):
    for shape in (SQUARE, ELLIPSE, HEART):
        images = dataset.render(_grid(shape=shape, orientation=[0, 39], x_position=3))
        np.testing.assert_array_equal(images[0], images[1])


def test_sprites_stay_inside_the_canvas(dataset):
    factors = _grid(shape=[SQUARE, ELLIPSE, HEART], orientation=np.arange(40),
                    x_position=[0, 31], y_position=[0, 31])
    images = _sprites(dataset, factors)
    border = np.ones((64, 64), bool)
    border[2:-2, 2:-2] = False  # MARGIN - SPRITE_RADIUS = 2 px always stay empty
    assert not np.any(images[:, border])
    # On pixels lie within the sprite's disc (plus half a pixel diagonal).
    centre = dsp.MARGIN + (64 - 2 * dsp.MARGIN) * dataset.factor_values_of(factors)[:, 3:]
    rows, cols = np.meshgrid(PIXEL_CENTRES, PIXEL_CENTRES, indexing="ij")
    distance = np.hypot(cols - centre[:, 0, None, None], rows - centre[:, 1, None, None])
    assert np.max(np.where(images > 0, distance, 0.0)) <= dsp.SPRITE_RADIUS + 0.71


def test_heart_constants_match_its_curve():
    # Dense grid over the implicit heart: area centroid and farthest point.
    x, y = np.meshgrid(np.linspace(-1.2, 1.2, 1201), np.linspace(-1.1, 1.3, 1201))
    inside = (x * x + y * y - 1.0) ** 3 <= x * x * y**3
    assert y[inside].mean() == pytest.approx(dsp._HEART_CENTROID_Y, abs=2e-3)
    assert np.hypot(x, y - dsp._HEART_CENTROID_Y)[inside].max() == pytest.approx(
        dsp._HEART_RADIUS, abs=3e-3
    )


def test_shapes_differ_at_the_same_pose(dataset):
    for orientation in (0, 13):
        images = dataset.render(_grid(shape=[SQUARE, ELLIPSE, HEART], orientation=orientation))
        for a in range(3):
            for b in range(a + 1, 3):
                assert np.sum(images[a] != images[b]) > 20


# --------------------------------------------------------------------------- #
# Validation
# --------------------------------------------------------------------------- #
def test_bad_input_is_rejected(dataset):
    with pytest.raises(ValueError, match=r"index must be in \[0, 737279\]"):
        dataset.images(np.array([737_280]))
    with pytest.raises(ValueError, match=r"index must be in"):
        dataset.images(np.array([-1]))
    with pytest.raises(ValueError, match="index must hold integers"):
        dataset.images(np.array([0.5]))
    with pytest.raises(ValueError, match=r"index must have shape \[B\]"):
        dataset.images(np.zeros((2, 2), np.int64))
    with pytest.raises(ValueError, match=r"factors must have shape \[B, 5\]"):
        dataset.render(np.zeros((1, 4), np.int64))
    with pytest.raises(ValueError, match=r"factor 'orientation' \(column 2\) must be in \[0, 39\]"):
        dataset.render(np.array([[0, 0, 40, 0, 0]]))
    with pytest.raises(ValueError, match="factors must hold integers"):
        dataset.render(np.zeros((1, 5), np.float32))


def _full_canvas_render(dataset, factors) -> np.ndarray:
    """Reference: test every pixel of the canvas against the shape (no window)."""
    values = [np.asarray(v)[factors[:, f]] for f, v in enumerate(dataset.factor_values)]
    shape, scale, angle, x_pos, y_pos = values
    angle = np.mod(angle, 2 * np.pi)
    travel = 64 - 2 * dsp.MARGIN
    radius = (dsp.SPRITE_RADIUS * scale)[:, None, None]
    u = (PIXEL_CENTRES[None, None, :] - (dsp.MARGIN + travel * x_pos)[:, None, None]) / radius
    v = ((dsp.MARGIN + travel * y_pos)[:, None, None] - PIXEL_CENTRES[None, :, None]) / radius
    cos, sin = np.cos(angle)[:, None, None], np.sin(angle)[:, None, None]
    u, v = cos * u + sin * v, cos * v - sin * u
    inside = [dsp._inside_square, dsp._inside_ellipse, dsp._inside_heart]
    on = np.stack([inside[int(s) - 1](u[b], v[b]) for b, s in enumerate(shape)])
    return on.astype(np.uint8) * 255


def test_windowed_render_equals_the_full_canvas_test(dataset):
    # Every shape, scale, orientation; positions at the extremes and in between.
    rng = np.random.default_rng(0)
    factors = dataset.sample_factors(rng, 3000)
    factors[:200, X_POSITION] = rng.choice([0, 31], 200)
    factors[100:300, Y_POSITION] = rng.choice([0, 31], 200)
    np.testing.assert_array_equal(dataset.render(factors)[..., 0],
                                  _full_canvas_render(dataset, factors))
