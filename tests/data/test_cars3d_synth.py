"""Tests for the procedural Cars3D renderer: the real dataset's factors and
ordering, determinism, framing, and geometric properties of the orthographic
orbiting camera (mirrored and opposite views, elevation)."""

import threading

import numpy as np
import pytest

from causal_disent.data import cars3d_synth as c3d
from causal_disent.data import show
from causal_disent.data.base import FactorDataset
from causal_disent.data.cars3d_synth import Cars3DSynth
from causal_disent.data.tfds_datasets import Cars3D

ELEVATION, AZIMUTH, OBJECT = range(3)
FRONT, LEFT_FRONT, LEFT_SIDE, LEFT_REAR, REAR = 0, 3, 6, 9, 12  # azimuth indices
# Pixels whose brightest channel differs by more than this count as changed.
CLEAR_DIFFERENCE = 24


@pytest.fixture(scope="module")
def dataset() -> Cars3DSynth:
    return Cars3DSynth()


@pytest.fixture(scope="module")
def extreme_models() -> list[int]:
    """The models most likely to leave the frame or to look odd: longest,
    widest, tallest, lowest, biggest wheels, shortest rear deck; and model 0."""
    models = c3d.car_models()
    keys = [
        lambda m: m.length, lambda m: m.width, lambda m: m.roof_height,
        lambda m: -m.roof_height, lambda m: m.wheel_radius, lambda m: -m.rear_deck_length,
    ]
    chosen = {0} | {max(range(len(models)), key=lambda i: key(models[i])) for key in keys}
    return sorted(chosen)


def _views(dataset, model: int) -> np.ndarray:
    """All 96 views of one model: [4, 24, 64, 64, 3] uint8."""
    elevation, azimuth = np.meshgrid(range(4), range(24), indexing="ij")
    factors = np.stack([elevation.ravel(), azimuth.ravel(), np.full(96, model)], -1)
    return dataset.render(factors).reshape(4, 24, 64, 64, 3)


def _car_mask(images: np.ndarray) -> np.ndarray:
    """[..., 64, 64] True where a pixel is not the background colour."""
    return np.any(images != np.array(c3d.BACKGROUND, np.uint8), axis=-1)


def _clearly_changed(first: np.ndarray, second: np.ndarray) -> np.ndarray:
    """Number of pixels that differ clearly, over the last three axes."""
    difference = np.abs(first.astype(np.int16) - second.astype(np.int16)).max(axis=-1)
    return (difference > CLEAR_DIFFERENCE).sum(axis=(-1, -2))


# --------------------------------------------------------------------------- #
# The real dataset's definition
# --------------------------------------------------------------------------- #
def test_factor_metadata_equals_the_real_cars3d(dataset):
    assert isinstance(dataset, FactorDataset)
    assert dataset.name == "cars3d_synth"
    assert dataset.factor_names == Cars3D.factor_names == ("elevation", "azimuth", "object")
    assert dataset.factor_sizes == Cars3D.factor_sizes == (4, 24, 183)
    assert dataset.image_shape == Cars3D.image_shape == (64, 64, 3)
    assert dataset.num_images == 17_568
    for ours, real in zip(dataset.factor_values, Cars3D.factor_values, strict=True):
        np.testing.assert_array_equal(ours, real)
    np.testing.assert_array_equal(dataset.factor_values[AZIMUTH], np.arange(24) * 15.0)


def test_flat_index_is_row_major_with_object_fastest(dataset):
    expected = {1: [0, 0, 1], 182: [0, 0, 182], 183: [0, 1, 0], 24 * 183: [1, 0, 0],
                17_567: [3, 23, 182]}
    index = np.array(list(expected))
    np.testing.assert_array_equal(dataset.index_to_factors(index), list(expected.values()))
    np.testing.assert_array_equal(dataset.factors_to_index(list(expected.values())), index)
    # The image at a flat index is the view its factors name.
    elevation, azimuth, model = 2, 7, 150
    image = dataset.images(np.array([(elevation * 24 + azimuth) * 183 + model]))[0]
    np.testing.assert_array_equal(image, c3d.render_view(model, elevation, azimuth))


@pytest.mark.parametrize("batch", [0, 1, 5])
def test_dtype_and_shape(dataset, batch):
    images = dataset.images(np.arange(batch))
    assert images.dtype == np.uint8 and images.shape == (batch, 64, 64, 3)


def test_bad_input_is_rejected(dataset):
    with pytest.raises(ValueError, match=r"'azimuth' \(column 1\) must be in \[0, 23\]"):
        dataset.render([[0, 24, 0]])
    with pytest.raises(ValueError, match=r"\[0, 17567\], got 17568"):
        dataset.images(np.array([17_568]))


# --------------------------------------------------------------------------- #
# Determinism
# --------------------------------------------------------------------------- #
def test_images_are_a_pure_function_of_the_factors(dataset):
    index = np.random.default_rng(0).choice(dataset.num_images, 12, replace=False)
    first = dataset.images(index)
    np.testing.assert_array_equal(dataset.images(index), first)  # from the cache
    # A fresh instance renders in another order and alongside other images.
    fresh = Cars3DSynth()
    shuffled = np.random.default_rng(1).permutation(len(index))
    others = np.array([5, 17_000, 9_000])
    batch = np.concatenate([others, index[shuffled], index[:2]])
    np.testing.assert_array_equal(fresh.images(batch)[3:-2], first[shuffled])
    np.testing.assert_array_equal(fresh.images(batch)[-2:], first[:2])
    for i in index[:3]:
        np.testing.assert_array_equal(Cars3DSynth().images(np.array([i]))[0], first[index == i][0])


def test_concurrent_requests_give_the_serial_images():
    index = np.random.default_rng(2).choice(17_568, 24, replace=False)
    serial = Cars3DSynth().images(index)
    shared = Cars3DSynth()
    results = [None] * 4

    def request(slot: int) -> None:
        results[slot] = shared.images(np.roll(index, 6 * slot))

    threads = [threading.Thread(target=request, args=(slot,)) for slot in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for slot, images in enumerate(results):
        np.testing.assert_array_equal(images, np.roll(serial, 6 * slot, axis=0))


def test_model_table_is_fixed_and_consistent():
    models = c3d.car_models()
    assert len(models) == 183 and c3d.car_models() is models
    units, paints = c3d.model_shape_coordinates()
    assert units.shape == (183, len(c3d.SHAPE_PARAMETER_NAMES))
    assert units.min() >= 0.0 and units.max() < 1.0
    assert set(paints) == set(range(len(c3d.PAINTS)))
    # Distinct shapes: no two rows of the table coincide.
    assert len(np.unique(np.round(units, 6), axis=0)) == 183
    for m in models:
        assert 3.9 < m.length < 4.85 and 1.6 < m.width < 2.0
        assert m.belt_height >= 2 * m.wheel_radius + 0.08 - 1e-9  # wheels under the body
        assert m.roof_length > 0.2 * (m.length - m.bonnet_length - m.rear_deck_length)
        assert m.front_overhang > m.wheel_radius and m.rear_overhang > m.wheel_radius
        assert max(m.paint) <= 0.86 and min(m.paint) > 0.0
    # Drawing the table again (not from the cache) gives the same models.
    assert c3d._model_table.__wrapped__()[0] == models


# --------------------------------------------------------------------------- #
# Framing
# --------------------------------------------------------------------------- #
def test_car_stays_inside_the_canvas_with_a_background_border(dataset, extreme_models):
    border = 3
    for model in extreme_models:
        views = _views(dataset, model)
        mask = _car_mask(views)  # [4, 24, 64, 64]
        inner = mask[..., border:-border, border:-border].sum(axis=(-1, -2))
        assert (mask.sum(axis=(-1, -2)) == inner).all(), model
        assert (inner > 150).all(), model  # a front view is about 20 x 15 px


def test_background_is_exact_wherever_no_ray_hits_the_car(dataset):
    for model, elevation, azimuth in [(3, 0, 6), (40, 3, 4), (150, 1, 13)]:
        samples = c3d.trace_view(model, elevation, azimuth)
        covered = (samples.material != c3d.MATERIAL_NONE).reshape(64, 3, 64, 3).any(axis=(1, 3))
        image = c3d.render_view(model, elevation, azimuth)
        np.testing.assert_array_equal(_car_mask(image), covered)
        assert (image[~covered] == c3d.BACKGROUND).all()


def test_side_view_fills_most_of_the_width(dataset):
    side = dataset.render(np.stack([np.zeros(183), np.full(183, LEFT_SIDE), np.arange(183)],
                                   -1).astype(np.int64))
    columns = _car_mask(side).any(axis=1).sum(axis=-1) / 64  # [183] fraction of the width
    assert 0.65 <= columns.min() and columns.max() <= 0.86
    assert 0.72 <= columns.mean() <= 0.8


# --------------------------------------------------------------------------- #
# Camera geometry
# --------------------------------------------------------------------------- #
@pytest.mark.parametrize("model", [0, 91])
def test_azimuths_a_and_minus_a_are_mirror_images(model):
    """The car is mirror symmetric, so its view from azimuth -a is the mirror of
    the view from a, in outline and in materials (the light is off-centre, so not
    in shading)."""
    for elevation in range(4):
        for azimuth in (1, 4, LEFT_SIDE, 11):
            ours = c3d.trace_view(model, elevation, azimuth).material
            mirrored = c3d.trace_view(model, elevation, 24 - azimuth).material
            np.testing.assert_array_equal(ours, mirrored[:, ::-1])
    assert not np.array_equal(ours, ours[:, ::-1])  # not trivially symmetric


@pytest.mark.parametrize("model", [7, 120])
def test_opposite_azimuths_at_the_horizon_are_mirror_silhouettes(model):
    """Orthographic and level, azimuth a + 180 looks along the same rays as a from
    the other side: the same outline, mirrored."""
    for azimuth in range(12):
        ours = c3d.trace_view(model, 0, azimuth).material != c3d.MATERIAL_NONE
        opposite = c3d.trace_view(model, 0, azimuth + 12).material != c3d.MATERIAL_NONE
        np.testing.assert_array_equal(ours, opposite[:, ::-1])


def test_azimuth_zero_faces_the_nose_and_ninety_the_left_side():
    model = 5

    def samples_of(material, azimuth):
        return c3d.trace_view(model, 1, azimuth).material == material

    head, tail = c3d.MATERIAL_HEADLAMP, c3d.MATERIAL_TAIL_LAMP
    assert samples_of(head, FRONT).sum() > 50 and not samples_of(tail, FRONT).any()
    assert samples_of(tail, REAR).sum() > 50 and not samples_of(head, REAR).any()
    # Front-left view: the nose is on the image left; rear-left: the tail on the right.
    columns = np.arange(192)
    assert (columns[samples_of(head, LEFT_FRONT).any(axis=0)] < 96).all()
    assert (columns[samples_of(tail, LEFT_REAR).any(axis=0)] >= 96).all()


@pytest.mark.parametrize("azimuth", [FRONT, LEFT_FRONT, LEFT_SIDE])
def test_a_higher_camera_sees_more_of_the_top(azimuth):
    for model in (0, 60, 182):
        up_facing = [
            (c3d.trace_view(model, e, azimuth).normal[..., 1] == 1.0).sum() for e in range(4)
        ]
        assert up_facing[0] == 0  # level camera: the roof is edge-on
        assert (np.diff(up_facing) > 100).all(), (model, up_facing)
        # The silhouette grows too: the roof and bonnet come into view.
        area = [_car_mask(c3d.render_view(model, e, azimuth)).sum() for e in range(4)]
        assert (np.diff(area) > 10).all(), (model, area)


# --------------------------------------------------------------------------- #
# Every factor changes the image
# --------------------------------------------------------------------------- #
def test_every_pair_of_models_differs_clearly(dataset):
    factors = np.stack([np.ones(183), np.full(183, 4), np.arange(183)], -1).astype(np.int64)
    images = dataset.render(factors).reshape(183, -1).astype(np.float64)
    squares = (images**2).sum(axis=1)
    distance = squares[:, None] + squares[None] - 2.0 * images @ images.T
    np.fill_diagonal(distance, np.inf)
    rms = np.sqrt(np.maximum(distance, 0.0) / images.shape[1])
    # On the black background a dark paint's silhouette has less contrast than it
    # had on white (rms above 10, 100 pixels then): the closest pair, two racing-green
    # models of different proportions, differs by an rms of 4.1 over 51 pixels.
    assert rms.min() > 4.0
    first, second = np.unravel_index(np.argmin(rms), rms.shape)
    closest = dataset.render(factors[[first, second]])
    assert _clearly_changed(closest[0], closest[1]) >= 40


def test_adjacent_azimuths_and_elevations_differ(dataset, extreme_models):
    for model in extreme_models[:4]:
        views = _views(dataset, model)
        next_azimuth = _clearly_changed(views, np.roll(views, -1, axis=1))  # [4, 24]
        assert next_azimuth.min() >= 20, model
        next_elevation = _clearly_changed(views[:-1], views[1:])  # [3, 24]
        assert next_elevation.min() >= 20, model


def test_each_factor_alone_changes_the_image_from_the_sheet_base(dataset):
    base = show.default_base_factors(dataset)
    for factor, size in enumerate(dataset.factor_sizes):
        moved = base.copy()
        moved[factor] = (base[factor] + 1) % size
        first, second = dataset.render(np.stack([base, moved]))
        assert _clearly_changed(first, second) >= 20, dataset.factor_names[factor]
