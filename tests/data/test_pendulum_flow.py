"""Tests for the rasteriser and the Pendulum and Flow datasets.

Labels are closed-form, so properties over whole datasets are checked on all
labels; rendering is checked on a few small batches by measuring what was drawn
(areas, centroids, colours) against the geometry it should follow.
"""

import numpy as np
import pytest

from causal_disent.data import flow as flow_lib
from causal_disent.data import pendulum as pendulum_lib
from causal_disent.data import raster, splits
from causal_disent.data.flow import Flow
from causal_disent.data.pendulum import Pendulum


@pytest.fixture(scope="module")
def pendulum() -> Pendulum:
    return Pendulum()


@pytest.fixture(scope="module")
def flow() -> Flow:
    return Flow()


def _is_acyclic(graph: np.ndarray) -> bool:
    remaining = np.asarray(graph, bool).copy()
    alive = np.ones(len(graph), bool)
    while alive.any():
        sources = alive & ~remaining[alive].any(axis=0)
        if not sources.any():
            return False
        alive &= ~sources
        remaining[sources] = False
    return True


def _colour_mask(images: np.ndarray, colour: tuple[float, ...], tol: int = 6) -> np.ndarray:
    """[B, H, W] bool: pixels painted fully in `colour` (anti-aliased edges excluded)."""
    target = np.rint(np.asarray(colour) * 255).astype(int)
    return (np.abs(images[..., :3].astype(int) - target) <= tol).all(axis=-1)


def _centroid_col(mask: np.ndarray) -> np.ndarray:
    """[B, H, W] bool -> [B] mean column (pixel centres at col + 0.5)."""
    cols = np.arange(mask.shape[2]) + 0.5
    return (mask * cols).sum(axis=(1, 2)) / mask.sum(axis=(1, 2))


# --------------------------------------------------------------------------- #
# Rasteriser
# --------------------------------------------------------------------------- #
def _unit_canvas(size: int = 64) -> raster.Canvas:
    return raster.Canvas(size, size, (0.0, float(size)), (0.0, float(size)))  # 1 unit = 1 px


def _area(coverage: raster.Coverage) -> np.ndarray:
    return coverage.values.sum(axis=(1, 2))


def test_circle_area_is_pi_r_squared_and_ellipse_on_unequal_scales():
    canvas = _unit_canvas()
    radius = np.array([3.0, 10.0, 20.0])
    area = _area(canvas.circle(np.full(3, 31.3), np.full(3, 32.7), radius))
    np.testing.assert_allclose(area, np.pi * radius**2, rtol=0.02)
    # Data-unit circles become ellipses in pixels, as in matplotlib.
    wide = raster.Canvas(48, 96, (0.0, 20.0), (-1.0, 21.0))
    area = _area(wide.circle(np.array([10.0]), np.array([10.0]), np.array([4.0])))
    np.testing.assert_allclose(area, np.pi * 16 * wide.x_scale * wide.y_scale, rtol=0.02)


def test_segment_area_is_length_times_width_plus_round_caps():
    canvas = _unit_canvas()
    x0, y0, x1, y1 = (np.array([v]) for v in (10.2, 12.9, 50.1, 41.3))  # diagonal
    length = np.hypot(39.9, 28.4)
    butt = _area(canvas.segment(x0, y0, x1, y1, 3.0, caps="butt"))
    rounded = _area(canvas.segment(x0, y0, x1, y1, 3.0, caps="round"))
    np.testing.assert_allclose(butt, length * 3.0, rtol=0.02)
    np.testing.assert_allclose(rounded, length * 3.0 + np.pi * 1.5**2, rtol=0.02)


def test_zero_length_segments_and_circles():
    canvas = _unit_canvas()
    point = np.array([20.0])
    assert _area(canvas.segment(point, point, point, point, 4.0, caps="butt"))[0] == 0.0
    np.testing.assert_allclose(
        _area(canvas.segment(point, point, point, point, 4.0, caps="round")), np.pi * 4, rtol=0.05
    )
    assert _area(canvas.circle(point, point, np.array([0.0])))[0] == 0.0


def test_polyline_joins_are_not_counted_twice():
    canvas = _unit_canvas()
    xs = np.array([[10.3, 25.3, 40.3]])  # a straight line in two pieces
    ys = np.array([[20.1, 30.1, 40.1]])
    whole = canvas.segment(xs[:, 0], ys[:, 0], xs[:, 2], ys[:, 2], 2.0, caps="round")
    pieces = canvas.polyline(xs, ys, 2.0)
    np.testing.assert_allclose(_area(pieces), _area(whole), atol=0.5)
    np.testing.assert_allclose(_area(pieces), np.hypot(30.0, 20.0) * 2.0 + np.pi, rtol=0.02)


def test_rectangle_area_and_clipping_at_the_canvas_edge():
    canvas = _unit_canvas()
    inside = canvas.rectangle(*(np.array([v]) for v in (10.25, 5.5, 7.5, 3.0)))
    np.testing.assert_allclose(_area(inside), 22.5)
    clipped = canvas.rectangle(*(np.array([v]) for v in (-5.0, 60.0, 10.0, 10.0)))
    np.testing.assert_allclose(_area(clipped), 5.0 * 4.0)
    assert canvas.dense(clipped).shape == (1, 64, 64)


def test_paint_composites_over_opaque_white():
    canvas = raster.Canvas(4, 4, (0.0, 4.0), (0.0, 4.0), supersample=2)
    rgb = canvas.blank(1)
    # Left half of pixel column 1 and all of column 2, full height.
    cover = canvas.rectangle(np.array([1.5]), np.array([0.0]), np.array([1.5]), np.array([4.0]))
    raster.paint(rgb, cover, raster.FIREBRICK)
    corner = canvas.rectangle(*(np.array([v]) for v in (3.0, 0.0, 1.0, 2.0)))
    raster.paint(rgb, corner, raster.BLACK, alpha=0.5)
    image = raster.to_rgba_uint8(rgb)[0]
    assert image.dtype == np.uint8 and (image[..., 3] == 255).all()
    np.testing.assert_array_equal(image[0, 0], [255, 255, 255, 255])
    np.testing.assert_array_equal(image[0, 2], [178, 34, 34, 255])
    # Half covered, and 50% black: halfway to the colour (x.5 may round either way).
    np.testing.assert_allclose(image[0, 1, :3], [(255 + 178) / 2, 144.5, 144.5], atol=0.51)
    np.testing.assert_allclose(image[3, 3, :3], [127.5] * 3, atol=0.51)
    np.testing.assert_array_equal(image[0, 3], [255, 255, 255, 255])


def test_canvas_rejects_bad_arguments():
    canvas = _unit_canvas()
    one = np.array([1.0])
    with pytest.raises(ValueError, match="caps"):
        canvas.segment(one, one, one, one, 2.0, caps="square")
    with pytest.raises(ValueError, match="width_px"):
        canvas.segment(one, one, one, one, 0.0)
    with pytest.raises(ValueError, match="supersample"):
        raster.Canvas(8, 8, (0, 1), (0, 1), supersample=16)
    with pytest.raises(ValueError, match="increasing"):
        raster.Canvas(8, 8, (1, 0), (0, 1))


# --------------------------------------------------------------------------- #
# Pendulum
# --------------------------------------------------------------------------- #
def test_pendulum_grid_labels_and_graph(pendulum):
    assert pendulum.name == "pendulum" and pendulum.image_shape == (96, 96, 4)
    assert pendulum.num_images == 84 * 87 == 7308
    labels = pendulum.labels(np.arange(pendulum.num_images))
    assert labels.shape == (7308, 4)
    np.testing.assert_array_equal(np.unique(labels[:, 0]), np.arange(-40, 44))
    np.testing.assert_array_equal(
        np.unique(labels[:, 1]), [j for j in range(60, 148) if j != 100]
    )
    np.testing.assert_array_equal(np.unique(labels[:, 2]), np.arange(3, 13))
    np.testing.assert_array_equal(np.unique(labels[:, 3]), np.arange(2, 20))
    # Angle outer, light inner: the authors' order.
    np.testing.assert_array_equal(labels[:3, :2], [[-40, 60], [-40, 61], [-40, 62]])
    np.testing.assert_array_equal(labels[87, :2], [-39, 60])
    expected = np.zeros((4, 4), int)
    expected[[0, 0, 1, 1], [2, 3, 2, 3]] = 1
    np.testing.assert_array_equal(pendulum.causal_graph, expected)
    assert _is_acyclic(pendulum.causal_graph)
    assert pendulum.label_names == (
        "pendulum_angle", "light_angle", "shadow_length", "shadow_position"
    )
    assert pendulum_lib.LABEL_SCALE.shape == (4, 2)


def test_pendulum_split_is_the_authors_counter(pendulum):
    split = pendulum.predefined_split()
    train, test = split["train"], split["test"]
    assert (len(train), len(test)) == (5482, 1826)
    np.testing.assert_array_equal(np.sort(np.concatenate([train, test])), np.arange(7308))
    np.testing.assert_array_equal(test[:3], [4, 8, 12])
    assert 0 in train


def test_a_run_holds_the_published_test_images_in_an_order_whose_prefix_is_uniform(pendulum):
    published = pendulum.predefined_split()
    split = splits.dataset_split(pendulum, (0.8, 0.0, 0.2), seed=0)
    np.testing.assert_array_equal(split["train"], published["train"])  # training unchanged
    np.testing.assert_array_equal(np.sort(split["test"]), published["test"])
    np.testing.assert_array_equal(
        split["test"], splits.dataset_split(pendulum, (0.8, 0.0, 0.2), seed=0)["test"])
    # The first 512 (a `:small` learning curve's images) span the angles of the whole
    # test split; the published order's first 512 hold only the smallest quarter.
    angles = pendulum.labels(published["test"])[:, 0]
    prefix = pendulum.labels(split["test"][:512])[:, 0]
    assert np.ptp(prefix) >= 0.9 * np.ptp(angles)


def test_pendulum_images_are_deterministic_rgba(pendulum):
    index = np.array([0, 1000, 4321, 7307])
    images = pendulum.images(index)
    assert images.shape == (4, 96, 96, 4) and images.dtype == np.uint8
    assert (images[..., 3] == 255).all()
    mixed = pendulum.images(np.array([7307, 55, 4321, 0, 1000, 3]))
    np.testing.assert_array_equal(mixed[[3, 4, 2, 0]], images)
    alone = pendulum.images(index[2:3])
    assert alone.tobytes() == images[2].tobytes()


def test_bob_follows_the_pendulum_angle(pendulum):
    factors = np.array([[0, 30], [20, 30], [40, 30], [60, 30], [83, 30]])
    index = pendulum.factors_to_index(factors)
    parts = pendulum.geometry(index)
    bob = _colour_mask(pendulum.images(index), raster.FIREBRICK)
    measured = _centroid_col(bob)
    expected, _ = pendulum._canvas.to_pixels(parts["bob_x"], parts["bob_y"])
    assert np.all(np.diff(measured) > 0)  # larger angle index: bob further right
    np.testing.assert_allclose(measured, expected, atol=0.75)


def test_light_follows_the_light_angle(pendulum):
    factors = np.array([[42, 10], [42, 30], [42, 50], [42, 70]])  # light x within (3, 17)
    index = pendulum.factors_to_index(factors)
    light = _colour_mask(pendulum.images(index), raster.ORANGE)
    measured = _centroid_col(light)
    expected, _ = pendulum._canvas.to_pixels(pendulum.geometry(index)["light_x"], 0.0)
    assert np.all(np.diff(measured) < 0)  # larger light angle: light further left
    np.testing.assert_allclose(measured, expected, atol=0.5)


def test_shadow_length_label_matches_the_drawn_shadow(pendulum):
    all_index = np.arange(pendulum.num_images)
    parts = pendulum.geometry(all_index)
    half = parts["shadow_length"] / 2
    inside = (parts["shadow_mid"] - half > 0.5) & (parts["shadow_mid"] + half < 19.5)
    index = np.random.default_rng(0).choice(all_index[inside], size=8, replace=False)
    images = pendulum.images(index)
    # Rows 92..95 hold only the shadow (centred at v = 93.8, 3 px wide).
    darkness = 1.0 - images[:, 90:, :, 0] / 255.0
    drawn_length = darkness.sum(axis=(1, 2)) / 3.0 / pendulum._canvas.x_scale
    np.testing.assert_allclose(drawn_length, parts["shadow_length"][index], atol=0.1)
    label = pendulum.labels(index)[:, 2]
    assert np.all((label <= drawn_length + 0.1) & (drawn_length - 0.1 < label + 1))
    # The shadow's centre is where the label puts it.
    per_column = darkness.sum(axis=1)  # [B, W]
    drawn_mid = (per_column * (np.arange(96) + 0.5)).sum(axis=1) / per_column.sum(axis=1)
    drawn_mid = drawn_mid / pendulum._canvas.x_scale
    np.testing.assert_allclose(drawn_mid, parts["shadow_mid"][index], atol=0.1)


@pytest.mark.parametrize("which", ["pendulum", "flow"])
def test_bad_indices_are_rejected(which, request):
    dataset = request.getfixturevalue(which)
    cases = [
        (np.array([dataset.num_images]), rf"index must be in \[0, {dataset.num_images - 1}\]"),
        (np.array([3, -1]), r"got -1 at position 1"),
        (np.array([1.0, 2.0]), "must hold integers"),
        (np.array([[1, 2]]), r"must have shape \[B\]"),
    ]
    for index, message in cases:
        with pytest.raises(ValueError, match=message):
            dataset.images(index)
        with pytest.raises(ValueError, match=message):
            dataset.labels(index)


# --------------------------------------------------------------------------- #
# Flow
# --------------------------------------------------------------------------- #
def test_flow_grid_labels_and_graph(flow):
    assert flow.name == "flow" and flow.image_shape == (96, 96, 4)
    assert flow.num_images == 30 * 30 * 9 == 8100
    labels = flow.labels(np.arange(flow.num_images))
    assert labels.shape == (8100, 4) and np.isfinite(labels).all()
    ball, water, water_flow, hole = labels.T
    np.testing.assert_allclose([ball.min(), ball.max()], [5 / 30, 34 / 30])
    np.testing.assert_allclose([hole.min(), hole.max()], [2.0, 14 / 3])
    np.testing.assert_allclose(water, ball**3 + np.repeat(np.tile(np.arange(10, 40), 30), 9) / 10)
    np.testing.assert_allclose(water_flow, np.sqrt(1.96 * water * (hole - 0.5)))
    assert water_flow.min() > 0
    expected = np.zeros((4, 4), int)
    expected[[0, 1, 3], [1, 2, 2]] = 1
    np.testing.assert_array_equal(flow.causal_graph, expected)
    assert _is_acyclic(flow.causal_graph)
    cyclic = expected.copy()
    cyclic[2, 0] = 1
    assert not _is_acyclic(cyclic)


def test_flow_split_sends_every_fifth_image_to_test(flow):
    split = flow.predefined_split()
    train, test = split["train"], split["test"]
    assert (len(train), len(test)) == (6480, 1620)
    np.testing.assert_array_equal(np.sort(np.concatenate([train, test])), np.arange(8100))
    assert (test % 5 == 4).all()


def test_flow_images_and_jitter_are_deterministic(flow):
    index = np.array([0, 4049, 8099])
    images = flow.images(index)
    assert images.shape == (3, 96, 96, 4) and images.dtype == np.uint8
    assert (images[..., 3] == 255).all()
    mixed = flow.images(np.array([8099, 17, 0, 4049]))
    np.testing.assert_array_equal(mixed[[2, 3, 0]], images)
    jitter = flow_lib.jet_jitter(np.arange(200))
    np.testing.assert_array_equal(jitter[[5, 150]], flow_lib.jet_jitter(np.array([5, 150])))
    assert jitter.min() == 0.01 and jitter.max() > 0.01  # 0.01 max(|z|, 1)


def test_water_height_grows_with_h_raw(flow):
    factors = np.array([[12, h, 4] for h in (0, 1, 10, 29)])
    index = flow.factors_to_index(factors)
    images = flow.images(index)
    # Column 18 (x in [3.75, 3.96]) is inside the cup, clear of the wall and the
    # ball; rows 0..93 are above the ground line. Coverage from the red channel.
    water_px = ((255.0 - images[:, :94, 18, 0]) / (255.0 - 135.0)).sum(axis=1)
    water = flow.labels(index)[:, 1]
    expected_px = 94.0 - (20.0 - (5.0 + water)) * flow._canvas.y_scale
    np.testing.assert_allclose(water_px, expected_px, atol=0.3)
    assert np.all(np.diff(water_px) > 0)
