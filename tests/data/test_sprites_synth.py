"""Tests for the procedural Sprites renderer: metadata and ordering as the real
Sprites, determinism, framing and outline, and the locality of each attribute.

Most tests look at all 13 440 images at once, held as a grid with one axis per
factor and each pixel's colour packed into one 24-bit number
([3, 2, 7, 2, 2, 2, 2, 5, 4, 64, 64] uint32, 220 MB), so that moving one factor is
a slice and comparing or classifying colours is one operation per pixel."""

import hashlib
import threading

import numpy as np
import pytest

from causal_disent.data import show
from causal_disent.data import sprites_synth as sps
from causal_disent.data.sprites_synth import FACTOR_NAMES, FACTOR_SIZES, SpritesSynth
from causal_disent.data.tfds_datasets import Sprites

BODY, SEX, HAIR, ARMOR, ARM, GREAVES, WEAPON, ACTION, VIEW = range(9)
NUM_IMAGES = 3 * 2 * 7 * 2 * 2 * 2 * 2 * 5 * 4  # 672 characters x 20 animations


@pytest.fixture(scope="module")
def dataset() -> SpritesSynth:
    return SpritesSynth()


def _pack(rgb) -> np.ndarray:
    """[..., 3] uint8 RGB -> [...] uint32 0xRRGGBB."""
    rgb = np.asarray(rgb, np.uint32)
    return (rgb[..., 0] << 16) | (rgb[..., 1] << 8) | rgb[..., 2]


@pytest.fixture(scope="module")
def grid(dataset) -> np.ndarray:
    """Every image, packed: [*FACTOR_SIZES, 64, 64] uint32 (row-major flat index)."""
    return _pack(dataset.images(np.arange(NUM_IMAGES))).reshape(FACTOR_SIZES + (64, 64))


def _colour_in(images: np.ndarray, colours) -> np.ndarray:
    """Packed images [..., 64, 64] -> bool [..., 64, 64]: pixel is one of `colours`
    ([k, 3] RGB)."""
    wanted = np.zeros(1 << 24, bool)
    wanted[_pack(np.asarray(colours).reshape(-1, 3))] = True
    return wanted[images]


def _codes_colours(codes, body=None) -> np.ndarray:
    """RGB of palette codes for one body, or for every body ([k, 3])."""
    table = sps.palettes()
    bodies = range(3) if body is None else [body]
    return np.concatenate([table[b, list(codes)] for b in bodies])


def _touching_or_in(mask: np.ndarray) -> np.ndarray:
    """[..., 64, 64] bool: in `mask` or 4-adjacent to it."""
    out = mask.copy()
    out[..., 1:, :] |= mask[..., :-1, :]
    out[..., :-1, :] |= mask[..., 1:, :]
    out[..., :, 1:] |= mask[..., :, :-1]
    out[..., :, :-1] |= mask[..., :, 1:]
    return out


def _step(grid: np.ndarray, factor: int, value: int) -> tuple[np.ndarray, np.ndarray]:
    """(images at factor = value, images at value + 1), everything else aligned."""
    return np.take(grid, value, axis=factor), np.take(grid, value + 1, axis=factor)


def _changed(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return a != b


# --------------------------------------------------------------------------- #
# Metadata and indexing
# --------------------------------------------------------------------------- #
def test_metadata_equals_the_real_sprites(dataset):
    assert dataset.name == "sprites_synth"
    assert type(dataset).__name__ == "SpritesSynth"
    assert dataset.factor_names == Sprites.factor_names == FACTOR_NAMES
    assert dataset.factor_sizes == tuple(Sprites.factor_sizes) == (3, 2, 7, 2, 2, 2, 2, 5, 4)
    assert dataset.image_shape == Sprites.image_shape == (64, 64, 3)
    assert dataset.num_images == NUM_IMAGES == 13_440
    for ours, real in zip(dataset.factor_values, Sprites.factor_values, strict=True):
        assert ours.dtype == real.dtype == np.float64
        np.testing.assert_array_equal(ours, real)
    assert len(sps.ACTION_NAMES) == FACTOR_SIZES[ACTION] and len(sps.VIEW_NAMES) == 4
    assert sps.ACTION_NAMES == ("spellcast", "thrust", "walk", "slash", "shoot")


def test_row_major_index_order(dataset):
    factors = dataset.sample_factors(np.random.default_rng(0), 300)
    index = dataset.factors_to_index(factors)
    np.testing.assert_array_equal(dataset.index_to_factors(index), factors)
    np.testing.assert_array_equal(
        dataset.index_to_factors(np.array([0, 1, 4, 20, NUM_IMAGES - 1])),
        [[0, 0, 0, 0, 0, 0, 0, 0, 0], [0, 0, 0, 0, 0, 0, 0, 0, 1], [0, 0, 0, 0, 0, 0, 0, 1, 0],
         [0, 0, 0, 0, 0, 0, 1, 0, 0], [2, 1, 6, 1, 1, 1, 1, 4, 3]],
    )
    # Images follow the index: the drawing at index i is that of its factors.
    images = dataset.images(index)
    for row in range(0, 300, 50):
        codes = sps.draw(*factors[row, 1:7], int(factors[row, ACTION]), int(factors[row, VIEW]))
        np.testing.assert_array_equal(images[row], sps.palettes()[factors[row, BODY]][codes])


# --------------------------------------------------------------------------- #
# Determinism
# --------------------------------------------------------------------------- #
def test_deterministic_and_independent_of_the_batch(dataset, grid):
    index = np.random.default_rng(1).integers(0, NUM_IMAGES, size=200)
    together = dataset.images(index)
    np.testing.assert_array_equal(_pack(together), grid.reshape(-1, 64, 64)[index])
    one_by_one = np.concatenate([dataset.images(index[i : i + 1]) for i in range(0, 200, 23)])
    np.testing.assert_array_equal(one_by_one, together[::23])
    np.testing.assert_array_equal(dataset.images(index[::-1]), together[::-1])
    np.testing.assert_array_equal(dataset.render(dataset.index_to_factors(index)), together)
    np.testing.assert_array_equal(SpritesSynth().images(index), together)  # a fresh table


def test_first_use_from_several_threads_builds_one_table():
    fresh = SpritesSynth()
    index = np.arange(0, NUM_IMAGES, 97)
    results, tables = [None] * 4, [None] * 4

    def work(slot):
        results[slot] = fresh.images(index)
        tables[slot] = fresh.code_table()

    threads = [threading.Thread(target=work, args=(slot,)) for slot in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert all(table is tables[0] for table in tables)
    for result in results[1:]:
        np.testing.assert_array_equal(result, results[0])


# --------------------------------------------------------------------------- #
# Framing, background and outline
# --------------------------------------------------------------------------- #
def test_palette_colours_are_distinct_and_never_the_background():
    table = sps.palettes()
    assert table.shape == (3, sps.NUM_CODES, 3)
    for body in range(3):
        figure_colours = np.delete(table[body], sps.CODE["background"], axis=0)
        assert len(np.unique(figure_colours, axis=0)) == sps.NUM_CODES - 1
        assert not np.any(np.all(figure_colours == sps.BACKGROUND, axis=-1))
    skins = table[:, list(sps.SKIN_CODES)].reshape(-1, 3)
    assert len(np.unique(skins, axis=0)) == 6  # no tone shared between bodies


def test_background_is_exact_and_the_figure_is_outlined(grid):
    images = grid.reshape(-1, 64, 64)
    background = images == _pack(sps.BACKGROUND)
    # Every pixel is the background or a palette colour: no blending anywhere.
    assert np.all(background | _colour_in(images, _codes_colours(range(sps.NUM_CODES))))
    # Every figure pixel that touches the background is the dark outline.
    touches_background = _touching_or_in(background) & ~background
    outline = images == _pack(sps.palettes()[0, sps.CODE["outline"]])
    assert np.all(outline[touches_background])


def test_figure_stands_inside_the_frame(grid):
    images = grid.reshape(-1, 64, 64)
    figure = images != _pack(sps.BACKGROUND)
    rows, cols = figure.any(axis=2), figure.any(axis=1)
    # At least 4 px of plain background on every side, outline included.
    assert not rows[:, :4].any() and not rows[:, 60:].any()
    assert not cols[:, :4].any() and not cols[:, 60:].any()
    # Feet on one ground line: the soles are row 57 (outline on 58) in every image.
    body = figure & (images != _pack(sps.palettes()[0, sps.CODE["outline"]]))
    assert body[:, sps.SOLE_ROW].any(axis=1).all() and not body[:, sps.SOLE_ROW + 1 :].any()
    # A small figure, as in the real set: height (hair to soles) and width
    # without the weapon.
    weapon = _colour_in(images, _codes_colours(sps.WEAPON_CODES, body=0))
    person = body & ~weapon
    heights = 64 - person.any(axis=2).argmax(axis=1) - (63 - sps.SOLE_ROW)
    widths = 64 - person.any(axis=1).argmax(axis=1) - person.any(axis=1)[:, ::-1].argmax(axis=1)
    assert 46 <= heights.min() and heights.max() <= 50, (heights.min(), heights.max())
    assert 12 <= widths.min() and widths.max() <= 30, (widths.min(), widths.max())
    # Centred: the front view's torso is symmetric about the middle of the frame.
    front = grid[1, 0, 0, 0, 0, 0, 0, 2, sps.VIEW_DOWN]
    torso = front[sps.TORSO_TOP_ROW + 2 : sps.WAIST_ROW]
    np.testing.assert_array_equal(torso[:, 24:40], torso[:, 24:40][:, ::-1])


# --------------------------------------------------------------------------- #
# Each attribute changes only its own pixels
# --------------------------------------------------------------------------- #
def test_body_changes_exactly_the_skin_pixels(grid):
    for body in range(2):
        before, after = _step(grid, BODY, body)
        skin = _colour_in(before, _codes_colours(sps.SKIN_CODES, body))
        np.testing.assert_array_equal(_changed(before, after), skin)
        assert skin.any(axis=(-2, -1)).all()  # skin shows in every drawing
        np.testing.assert_array_equal(
            skin, _colour_in(after, _codes_colours(sps.SKIN_CODES, body + 1)))


def test_hair_changes_only_the_head(grid):
    hair_colours = _codes_colours(sps.HAIR_CODES, body=0)
    first, last = sps.ATTRIBUTE_ROWS["hair"]
    for hair in range(FACTOR_SIZES[HAIR] - 1):
        before, after = _step(grid, HAIR, hair)
        changed = _changed(before, after)
        assert changed.any(axis=(-2, -1)).all()
        assert not changed[..., last + 1 :, :].any() and not changed[..., :first, :].any()
        either_hair = _colour_in(before, hair_colours) | _colour_in(after, hair_colours)
        assert not np.any(changed & ~_touching_or_in(either_hair))


@pytest.mark.parametrize("name", ["sex", "armor", "greaves"])
def test_attributes_stay_in_their_rows(grid, name):
    factor = FACTOR_NAMES.index(name)
    first, last = sps.ATTRIBUTE_ROWS[name]
    changed = _changed(*_step(grid, factor, 0))
    assert changed.any(axis=(-2, -1)).all()
    rows = changed.any(axis=-1)
    assert not rows[..., :first].any() and not rows[..., last + 1 :].any()
    # Greaves change nothing above the waist, hair and armour nothing on the legs.
    assert sps.ATTRIBUTE_ROWS["greaves"][0] > sps.WAIST_ROW + 1
    assert sps.ATTRIBUTE_ROWS["armor"][1] < sps.GREAVES_TOP_ROW - 1


def test_arm_changes_only_forearms_and_hands(grid):
    bare, covered = _step(grid, ARM, 0)
    changed = _changed(bare, covered)
    assert changed.any(axis=(-2, -1)).all()
    for body in range(3):
        skin = _colour_in(bare[body], _codes_colours(sps.SKIN_CODES, body))
        assert np.all(skin[changed[body]])
    bracers = _colour_in(covered, _codes_colours(sps.BRACER_CODES, body=0))
    assert np.all(bracers[changed])


def test_weapon_changes_only_pixels_next_to_either_weapon(grid):
    sword, spear = _step(grid, WEAPON, 0)
    changed = _changed(sword, spear)
    assert changed.any(axis=(-2, -1)).all()
    weapon_colours = _codes_colours(sps.WEAPON_CODES, body=0)
    either = _colour_in(sword, weapon_colours) | _colour_in(spear, weapon_colours)
    assert not np.any(changed & ~_touching_or_in(either))
    # The spear is the longer weapon in every pose.
    assert (_colour_in(spear, weapon_colours).sum(axis=(-2, -1))
            > _colour_in(sword, weapon_colours).sum(axis=(-2, -1))).all()


def test_right_view_is_the_mirror_image_of_the_left_view(grid):
    left, right = grid[..., sps.VIEW_LEFT, :, :], grid[..., sps.VIEW_RIGHT, :, :]
    np.testing.assert_array_equal(right, left[..., ::-1])
    # The front and back views are not mirrors of each other (face, hair, hands).
    front, back = grid[..., sps.VIEW_DOWN, :, :], grid[..., sps.VIEW_UP, :, :]
    assert _changed(front, back[..., ::-1]).any(axis=(-2, -1)).all()


# --------------------------------------------------------------------------- #
# Every factor matters; every image is different
# --------------------------------------------------------------------------- #
def test_each_factor_alone_changes_the_image(dataset):
    base = show.default_base_factors(dataset)
    for factor, size in enumerate(FACTOR_SIZES):
        moved = np.tile(base, (size, 1))
        moved[:, factor] = np.arange(size)
        images = dataset.render(moved)
        for a in range(size):
            for b in range(a + 1, size):
                assert np.any(images[a] != images[b]), (FACTOR_NAMES[factor], a, b)


def test_all_images_are_distinct(grid):
    images = grid.reshape(NUM_IMAGES, -1)
    digests = {hashlib.blake2b(image.tobytes(), digest_size=16).digest() for image in images}
    assert len(digests) == NUM_IMAGES


def test_bad_input_is_rejected(dataset):
    with pytest.raises(ValueError, match=r"index must be in \[0, 13439\]"):
        dataset.images(np.array([NUM_IMAGES]))
    with pytest.raises(ValueError, match="index must hold integers"):
        dataset.images(np.array([0.5]))
    with pytest.raises(ValueError, match=r"factor 'hair' \(column 2\) must be in \[0, 6\]"):
        dataset.render(np.array([[0, 0, 7, 0, 0, 0, 0, 0, 0]]))
    assert dataset.images(np.array([], np.int64)).shape == (0, 64, 64, 3)
