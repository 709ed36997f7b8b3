"""Tests for the true counterfactual images of Pendulum and Flow.

An intervention do(label[c] = v) must redraw c and its descendants and leave
every other part of the picture alone. The tests check this with pixel regions
(which rows or columns may change), with measurements (a redrawn shadow's length,
a recomputed water level) and against the dataset itself: intervening on a cause
with a grid value must give the grid image with that value.

Canvas layout used below. Pendulum (96 rows over y in (-1, 21)): the light fills
rows 0..15, the rod and bob rows 44..87, the shadow rows 92..95. Flow (x, y in
(0, 20), 4.8 px per unit): the left wall, the water and the ball lie in columns
0..36 (x < 7.7); the right wall and the jet start at x = 8 minus 1 px.
"""

import hashlib

import numpy as np
import pytest

from causal_disent.data import flow as flow_lib
from causal_disent.data import pendulum as pendulum_lib
from causal_disent.data import raster
from causal_disent.data.counterfactuals import descendants
from causal_disent.data.flow import Flow
from causal_disent.data.pendulum import Pendulum

LIGHT_ROWS, ROD_ROWS, SHADOW_ROWS = slice(0, 20), slice(20, 90), slice(90, 96)
JET_FREE_COLS = slice(0, 37)
WATER_COLUMN = 18  # inside the cup, clear of the walls and the ball (as in test_pendulum_flow)

# sha256 prefixes of images rendered before the renderers took concept values.
RENDERED_BEFORE = {
    "pendulum": {
        0: "8a406565f82decbc", 1000: "239a71e0fbe884ab",
        4321: "04db724f08a901df", 7307: "b71977c6dc7172a0",
    },
    "flow": {
        0: "e104ff571f0bdcf5", 17: "81e784b22c38770f",
        4049: "61c7f873e00edf12", 8099: "d0c2e3b714cbe63e",
    },
}


@pytest.fixture(scope="module")
def pendulum() -> Pendulum:
    return Pendulum()


@pytest.fixture(scope="module")
def flow() -> Flow:
    return Flow()


def _colour_mask(images: np.ndarray, colour: tuple[float, ...], tol: int = 6) -> np.ndarray:
    """[B, H, W] bool: pixels painted fully in `colour`."""
    target = np.rint(np.asarray(colour) * 255).astype(int)
    return (np.abs(images[..., :3].astype(int) - target) <= tol).all(axis=-1)


def _centroid_col(mask: np.ndarray) -> np.ndarray:
    """[B, H, W] bool -> [B] mean column (pixel centres at col + 0.5)."""
    cols = np.arange(mask.shape[2]) + 0.5
    return (mask * cols).sum(axis=(1, 2)) / mask.sum(axis=(1, 2))


def _changed(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """[B, H, W] bool: pixels that differ between two image batches."""
    return (a != b).any(axis=-1)


# --------------------------------------------------------------------------- #
# Shared
# --------------------------------------------------------------------------- #
@pytest.mark.parametrize("which", ["pendulum", "flow"])
def test_images_are_those_rendered_before_the_refactor(which, request):
    dataset = request.getfixturevalue(which)
    expected = RENDERED_BEFORE[which]
    images = dataset.images(np.array(list(expected)))
    got = [hashlib.sha256(image.tobytes()).hexdigest()[:16] for image in images]
    assert got == list(expected.values())


def test_descendants_follow_the_edges_transitively():
    np.testing.assert_array_equal(descendants(pendulum_lib.CAUSAL_GRAPH, 0), [0, 0, 1, 1])
    np.testing.assert_array_equal(descendants(pendulum_lib.CAUSAL_GRAPH, 3), [0, 0, 0, 0])
    # ball -> water -> flow: the flow is a descendant of the ball through the water.
    np.testing.assert_array_equal(descendants(flow_lib.CAUSAL_GRAPH, 0), [0, 1, 1, 0])
    np.testing.assert_array_equal(descendants(flow_lib.CAUSAL_GRAPH, 3), [0, 0, 1, 0])
    chain = np.eye(5, k=1, dtype=int)  # 0 -> 1 -> 2 -> 3 -> 4
    np.testing.assert_array_equal(descendants(chain, 1), [0, 0, 1, 1, 1])
    cycle = chain.copy()
    cycle[4, 1] = 1
    np.testing.assert_array_equal(descendants(cycle, 2), [0, 1, 1, 1, 1])
    with pytest.raises(ValueError, match=r"concept 5 is out of range: the graph has 5"):
        descendants(chain, 5)
    with pytest.raises(ValueError, match=r"graph must be a square \[n, n\]"):
        descendants(np.zeros((2, 3)), 0)


def _factual_values(dataset, index: np.ndarray) -> np.ndarray:
    """[B, 4] factual concept values; Pendulum's shadow untruncated, as drawn."""
    values = dataset.labels(index)
    if isinstance(dataset, Pendulum):
        parts = dataset.geometry(index)
        values[:, 2], values[:, 3] = parts["shadow_length"], parts["shadow_mid"]
    return values


@pytest.mark.parametrize("which", ["pendulum", "flow"])
@pytest.mark.parametrize("concept", [0, 1, 2, 3])
def test_doing_the_factual_value_reproduces_the_image(which, concept, request):
    dataset = request.getfixturevalue(which)
    index = np.array([0, 17, 3333, dataset.num_images - 1])
    values = _factual_values(dataset, index)[:, concept]
    counterfactual = dataset.counterfactual_images(index, concept, values)
    assert counterfactual.dtype == np.uint8 and counterfactual.shape == (4, 96, 96, 4)
    np.testing.assert_array_equal(counterfactual, dataset.images(index))


BAD_INPUTS = [
    # (dataset, concept, values, message) on two images
    ("pendulum", 7, [1.0, 2.0],
     r"^concept 7 is out of range: pendulum has 4 concepts \(pendulum_angle, light_angle, "
     r"shadow_length, shadow_position\); pass an int in \[0, 4\)$"),
    ("flow", -1, [1.0, 2.0],
     r"^concept -1 is out of range: flow has 4 concepts \(ball_size, water_height, "
     r"water_flow, hole\); pass an int in \[0, 4\)$"),
    ("pendulum", 1.0, [1.0, 2.0], r"^concept must be an int, got float 1.0: pendulum has 4"),
    ("flow", "hole", [1.0, 2.0], r"^concept must be an int, got str 'hole': flow has 4"),
    ("flow", True, [1.0, 2.0], r"^concept must be an int, got bool True"),
    ("pendulum", 0, [1.0, 2.0, 3.0],
     r"^values must have shape \[B\] = \(2,\), one per index, got shape \(3,\)$"),
    ("flow", 0, [[1.0], [2.0]], r"^values must have shape \[B\] = \(2,\), .* got shape \(2, 1\)$"),
    ("pendulum", 3, [1.0, np.nan], r"^values must be finite, got nan at position 1$"),
    ("flow", 1, [np.inf, 1.0], r"^values must be finite, got inf at position 0$"),
    ("pendulum", 2, [1.0, -0.5],
     r"^shadow_length must be >= 0 \(a length\), got -0.5 at position 1$"),
    ("pendulum", 1, [0.0, 50.0], r"^light_angle must be in \(0, 200\) .* got 0.0 at position 0$"),
    ("pendulum", 1, [50.0, 200.0],
     r"^light_angle must be in \(0, 200\) .* got 200.0 at position 1$"),
    ("flow", 0, [0.5, 0.0], r"^ball_size must be > 0 \(a radius\), got 0.0 at position 1$"),
    ("flow", 1, [-1.0, 1.0], r"^water_height must be > 0 .* got -1.0 at position 0$"),
    ("flow", 2, [1.0, -0.1], r"^water_flow must be >= 0 \(a speed\), got -0.1 at position 1$"),
    ("flow", 3, [0.5, 3.0],
     r"^hole must be > 0.5 \(the jet ends at y = 0.5\), got 0.5 at position 0$"),
    ("flow", 0, [1e200, 1.0], r"^water must be finite \(the intervention overflows it"),
]


@pytest.mark.parametrize("which, concept, values, message", BAD_INPUTS)
def test_bad_interventions_are_rejected(which, concept, values, message, request):
    dataset = request.getfixturevalue(which)
    with pytest.raises(ValueError, match=message):
        dataset.counterfactual_images(np.array([3, 5]), concept, np.array(values))


def test_bad_indices_are_rejected(pendulum):
    with pytest.raises(ValueError, match=r"index must be in \[0, 7307\], got 7308"):
        pendulum.counterfactual_images(np.array([7308]), 0, np.array([1.0]))


# --------------------------------------------------------------------------- #
# Pendulum
# --------------------------------------------------------------------------- #
def _shadow_inside(pendulum, margin: float) -> np.ndarray:
    """Four images whose shadow, grown by `margin` at both ends, stays on the canvas."""
    all_index = np.arange(pendulum.num_images)
    parts = pendulum.geometry(all_index)
    half = parts["shadow_length"] / 2 + margin
    inside = (parts["shadow_mid"] - half > 0.5) & (parts["shadow_mid"] + half < 19.5)
    return np.random.default_rng(1).choice(all_index[inside], size=4, replace=False)


def _measure_shadow(pendulum, images: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """[B] drawn shadow length and centre, in data units, from the shadow rows."""
    darkness = 1.0 - images[:, SHADOW_ROWS, :, 0] / 255.0
    length = darkness.sum(axis=(1, 2)) / 3.0 / pendulum._canvas.x_scale
    per_column = darkness.sum(axis=1)
    mid = (per_column * (np.arange(96) + 0.5)).sum(axis=1) / per_column.sum(axis=1)
    return length, mid / pendulum._canvas.x_scale


@pytest.mark.parametrize("concept, shift", [(2, (2.0, 0.0)), (3, (0.0, -1.5))])
def test_shadow_interventions_redraw_only_the_shadow(pendulum, concept, shift):
    index = _shadow_inside(pendulum, margin=2.0)
    parts = pendulum.geometry(index)
    length = parts["shadow_length"] + shift[0]
    mid = parts["shadow_mid"] + shift[1]
    counterfactual = pendulum.counterfactual_images(index, concept, (length, mid)[concept - 2])
    changed = _changed(counterfactual, pendulum.images(index))
    assert not changed[:, : SHADOW_ROWS.start].any()  # rod, bob and light untouched
    assert changed[:, SHADOW_ROWS].any(axis=(1, 2)).all()
    drawn_length, drawn_mid = _measure_shadow(pendulum, counterfactual)
    np.testing.assert_allclose(drawn_length, length, atol=0.1)
    np.testing.assert_allclose(drawn_mid, mid, atol=0.1)


def test_angle_intervention_moves_the_rod_and_the_shadow(pendulum):
    source = np.array([[10, 30], [50, 5], [70, 60]])
    target = np.array([[60, 30], [20, 5], [30, 60]])
    index = pendulum.factors_to_index(source)
    new_angle = pendulum_lib.ANGLE_INDICES[target[:, 0]]
    counterfactual = pendulum.counterfactual_images(index, 0, new_angle)
    factual = pendulum.images(index)
    changed = _changed(counterfactual, factual)
    assert not changed[:, LIGHT_ROWS].any()
    assert changed[:, ROD_ROWS].any(axis=(1, 2)).all()
    assert changed[:, SHADOW_ROWS].any(axis=(1, 2)).all()
    # A larger angle index puts the bob further right.
    bob_moves = _centroid_col(_colour_mask(counterfactual, raster.FIREBRICK)) - _centroid_col(
        _colour_mask(factual, raster.FIREBRICK)
    )
    np.testing.assert_array_equal(np.sign(bob_moves), np.sign(target[:, 0] - source[:, 0]))
    # A grid angle gives the dataset's own image with that angle.
    np.testing.assert_array_equal(counterfactual, pendulum.render(target))


def test_light_intervention_moves_the_light_and_the_shadow(pendulum):
    source = np.array([[42, 10], [20, 70], [60, 40]])  # light x within (3, 17)
    target = np.array([[42, 70], [20, 10], [60, 45]])
    index = pendulum.factors_to_index(source)
    new_light = pendulum_lib.LIGHT_INDICES[target[:, 1]]
    counterfactual = pendulum.counterfactual_images(index, 1, new_light)
    factual = pendulum.images(index)
    changed = _changed(counterfactual, factual)
    assert not changed[:, ROD_ROWS].any()
    assert changed[:, LIGHT_ROWS].any(axis=(1, 2)).all()
    assert changed[:, SHADOW_ROWS].any(axis=(1, 2)).all()
    # A larger light index puts the light further left.
    light_moves = _centroid_col(_colour_mask(counterfactual, raster.ORANGE)) - _centroid_col(
        _colour_mask(factual, raster.ORANGE)
    )
    np.testing.assert_array_equal(np.sign(light_moves), -np.sign(target[:, 1] - source[:, 1]))
    np.testing.assert_array_equal(counterfactual, pendulum.render(target))


def test_an_off_grid_angle_lies_between_its_grid_neighbours(pendulum):
    # Angle indices 10 and 11 are at positions 50 and 51.
    neighbours = pendulum.images(pendulum.factors_to_index(np.array([[50, 30], [51, 30]])))
    between = pendulum.counterfactual_images(
        pendulum.factors_to_index(np.array([[50, 30]])), 0, np.array([10.5])
    )
    bob = _centroid_col(_colour_mask(np.concatenate([neighbours, between]), raster.FIREBRICK))
    assert bob[0] < bob[2] < bob[1]


# --------------------------------------------------------------------------- #
# Flow
# --------------------------------------------------------------------------- #
def _water_level_px(images: np.ndarray) -> np.ndarray:
    """[B] water column height in pixels above the ground line, at WATER_COLUMN."""
    return ((255.0 - images[:, :94, WATER_COLUMN, 0]) / (255.0 - 135.0)).sum(axis=1)


def _expected_water_px(flow, water: np.ndarray) -> np.ndarray:
    return 94.0 - (20.0 - (5.0 + water)) * flow._canvas.y_scale


def _jet_reach_px(images: np.ndarray) -> np.ndarray:
    """[B] one past the rightmost inked column right of the cup, above the ground."""
    ink = (images[:, :94, 41:, :3] < 255).any(axis=(1, 3))  # [B, columns 41..95]
    return 96 - np.argmax(ink[:, ::-1], axis=1)


FLOW_INDEX = np.array([40, 2222, 4049, 7000])


def test_flow_intervention_redraws_only_the_jet(flow):
    factual = flow.images(FLOW_INDEX)
    labels = flow.labels(FLOW_INDEX)
    hole_top = np.floor((20.0 - labels[:, 3]) * flow._canvas.y_scale - 1.0).astype(int)
    reach = []
    for scale in (0.5, 1.5):
        counterfactual = flow.counterfactual_images(FLOW_INDEX, 2, scale * labels[:, 2])
        changed = _changed(counterfactual, factual)
        assert not changed[:, :, JET_FREE_COLS].any()  # left wall, water, ball
        for image_changed, top in zip(changed, hole_top):
            assert not image_changed[:top].any()  # the cup above the hole
        assert changed[:, :, 40:].any(axis=(1, 2)).all()
        reach.append(_jet_reach_px(counterfactual))
    assert np.all(reach[0] < _jet_reach_px(factual)) and np.all(_jet_reach_px(factual) < reach[1])
    # The jet ends where a flow f reaches: x = 8 + f sqrt((0.98 + eps) / 0.98), plus its cap.
    eps = flow_lib.jet_jitter(FLOW_INDEX)
    end_x = 8.0 + 1.5 * labels[:, 2] * np.sqrt((0.98 + eps) / 0.98)
    np.testing.assert_allclose(reach[1], end_x * flow._canvas.x_scale + 1.0, atol=1.5)
    # No flow: nothing right of the cup but the ground line.
    dry = flow.counterfactual_images(FLOW_INDEX, 2, np.zeros(4))
    assert (dry[:, :93, 41:, :3] == 255).all()


def test_ball_intervention_changes_the_ball_and_the_water_level(flow):
    factual = flow.images(FLOW_INDEX)
    labels = flow.labels(FLOW_INDEX)
    h_raw = flow.index_to_factors(FLOW_INDEX)[:, 1] + flow_lib.WATER_INDICES[0]
    new_ball = labels[:, 0] + np.array([0.3, -0.2, 0.25, 0.1])
    counterfactual = flow.counterfactual_images(FLOW_INDEX, 0, new_ball)
    ball_area = [
        _colour_mask(images, raster.FIREBRICK).sum(axis=(1, 2))
        for images in (factual, counterfactual)
    ]
    growth = np.sign(ball_area[1] - ball_area[0])
    np.testing.assert_array_equal(growth, np.sign(new_ball - labels[:, 0]))
    new_water = new_ball**3 + h_raw / 10.0
    level = _water_level_px(counterfactual)
    np.testing.assert_allclose(level, _expected_water_px(flow, new_water), atol=0.3)
    assert np.all(np.abs(level - _water_level_px(factual)) > 0.1)


def test_water_intervention_keeps_the_ball(flow):
    factual = flow.images(FLOW_INDEX)
    new_water = flow.labels(FLOW_INDEX)[:, 1] + np.array([1.0, -0.5, 0.7, -1.2])
    counterfactual = flow.counterfactual_images(FLOW_INDEX, 1, new_water)
    np.testing.assert_array_equal(
        _colour_mask(counterfactual, raster.FIREBRICK), _colour_mask(factual, raster.FIREBRICK)
    )
    np.testing.assert_allclose(
        _water_level_px(counterfactual), _expected_water_px(flow, new_water), atol=0.3
    )


def test_hole_intervention_keeps_the_ball_and_the_water(flow):
    factual = flow.images(FLOW_INDEX)
    new_hole = flow.labels(FLOW_INDEX)[:, 3] + np.array([0.5, -0.5, 1.0, -1.0])
    counterfactual = flow.counterfactual_images(FLOW_INDEX, 3, new_hole)
    changed = _changed(counterfactual, factual)
    assert not changed[:, :, JET_FREE_COLS].any()
    assert changed[:, :, 38].any(axis=1).all()  # the gap in the right wall moved
    assert changed[:, :, 41:].any(axis=(1, 2)).all()  # and the jet with it


@pytest.mark.parametrize("axis, concept", [(0, 0), (1, 1), (2, 3)])
def test_intervening_on_a_cause_gives_the_grid_image_with_that_cause(flow, axis, concept):
    """do(ball = b2) on image (r1, h_raw, hole) is image (r2, h_raw, hole), and likewise
    for the water and the hole. The jet's eps is seeded by the flat index and the
    counterfactual keeps the source image's own eps, so the images are equal where
    both grid images happen to share eps (0.01 max(|z|, 1) is 0.01 for |z| <= 1);
    otherwise they agree left of the jet."""
    base = np.array([12, 7, 4])
    line = np.repeat(base[None], flow.factor_sizes[axis], axis=0)
    line[:, axis] = np.arange(flow.factor_sizes[axis])
    index = flow.factors_to_index(line)
    eps, labels = flow_lib.jet_jitter(index), flow.labels(index)
    source = int(np.flatnonzero(eps == 0.01)[0])
    same = [k for k in np.flatnonzero(eps == eps[source]) if k != source]
    targets = np.array([same[0], same[-1], np.argmax(np.abs(eps - eps[source]))])
    counterfactual = flow.counterfactual_images(
        np.full(3, index[source]), concept, labels[targets, concept]
    )
    grid = flow.images(index[targets])
    np.testing.assert_array_equal(counterfactual[:2], grid[:2])
    np.testing.assert_array_equal(counterfactual[2, :, JET_FREE_COLS], grid[2, :, JET_FREE_COLS])
    assert (counterfactual[2] != grid[2]).any()
