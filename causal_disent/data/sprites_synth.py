r"""Procedural Sprites-like pixel-art characters, drawn on demand with no download.

Sprites (Reed et al., 2015, "Deep Visual Analogy-Making") shows game characters
in the style of the Liberated Pixel Cup: a small figure standing in a 64x64
frame on a plain background, over a full grid of seven attributes (body, sex,
hair, armor, arm, greaves, weapon), five animations and four views. This module
draws such a grid procedurally with the same factor names, sizes, stored values
(0, 1, ... per factor) and flat-index order as the TFDS-backed `Sprites`
(row-major over (3, 2, 7, 2, 2, 2, 2, 5, 4), view fastest: 672 characters x 20
animations = 13 440 images), so code written for the real data runs on it
unchanged. The art is drawn here from rectangles,
ellipses, thick segments and pixel lists; nothing is taken from the LPC sheets.

Pixel grid: rows grow downward, pixel (row, col) has its centre at (row, col),
and every shape is rasterised at native resolution (a pixel is in a shape when
its centre is), so edges are hard and the image uses a small fixed palette.
The background is plain black, BACKGROUND = (0, 0, 0), and no figure colour equals
it: on images that are mostly white the CT-VAE configs' MCQ-VAE collapses to one
code (docs/datasets.md, "Why the stand-ins' backgrounds are black"; the colour of
the real Sprites background could not be checked here). The figure stands centred,
soles on row 57 (SOLE_ROW) in every image: 45 px from the crown to the soles and
47-50 px with the hair, 14 px wide in side views to 30 px with an arm held out
(22 px standing in the front view), weapon not counted. Everything, outline and
weapon included, stays at least 4 px inside the frame.

Factors (index: meaning):
  body:    skin tone of face, ears, neck, hands and bare arms: light, tanned, dark;
  sex:     male (square shoulders, straight waist) or female (narrower
           shoulders and waist, wider hips, bust line, lips and eyelashes);
  hair:    short brown, long blonde, spiky black, ginger bun, green mohawk,
           silver bob, blue pigtails (distinct shapes and colours; every style
           ends above the neck);
  armor:   teal cloth tunic with a belt, or steel plate with shoulder plates,
           tassets over the hips and a central ridge;
  arm:     bare forearms and hands, or leather bracers and steel gauntlets
           (same outline, so only those pixels change);
  greaves: blue trousers and leather boots, or steel greaves from the knee
           down (with knee cops one pixel wider) and steel sabatons;
  weapon:  a sword (gold guard and pommel, two-pixel blade) or a spear (long
           wooden shaft, leaf-shaped steel head);
  action:  the first frame of spellcast (arms raised), thrust (weapon pushed
           forward with both hands), walk (legs in stride, arms down), slash
           (weapon arm raised to strike) and shoot (one arm held out, the
           other drawn back as if drawing a bow);
  view:    the order of the LPC sheet rows, facing up (back view), left, down
           (front view) and right. The right view is the exact horizontal
           mirror of the left view; the back view mirrors the front view's limb
           layout (the weapon stays in the character's right hand), except that
           a thrust points up the image, away from the viewer.

Drawing: each image is layered compositing, back to front, of parts that are
functions of the pose (action, view) and of one attribute each:
  1. body:   the neck and, in side views, the far arm (they lie behind the rest);
  2. legs:   trousers or greaves, and feet (the far leg first in side views);
  3. torso:  tunic or plate, over the waistband and the top of the legs;
  4. arms:   the near arms, in front of the torso;
  5. face:   head skin, ears and features, over the collar;
  6. hair:   over the face;
  7. weapon: last, held in the hand, in front of everything.
Painting back to front is what makes a part cover exactly what it hides, and
makes each attribute's change local. A part's pixels that touch pixels of a part
drawn before it (4-neighbours) take the part's shade colour, which separates
overlapping parts as LPC's inner lines do; the weapon gets no such rim (it is
thin, and its colours are its own). Finally every background pixel 4-adjacent
to the figure becomes OUTLINE, the 1 px dark outline around the figure.

What each attribute can change (tested): body changes exactly the skin pixels;
arm only forearm and hand pixels; weapon only pixels within one pixel of either
weapon; hair only pixels within one pixel of either hairstyle, all in rows
<= 25; and `ATTRIBUTE_ROWS` gives the rows that hair, sex, armor and greaves are
confined to.

Rendering: the drawing depends on every factor but body, and body only swaps
the two skin colours, so all 4480 drawings are composed once (well under a
second) into a table of palette codes; an image is then a palette lookup.

Make a contact sheet (one row per factor):
  python -m causal_disent.data.show sprites_synth --out=sheet.png
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import threading
from typing import NamedTuple

import numpy as np

from causal_disent.data.base import FactorDataset

FACTOR_NAMES = ("body", "sex", "hair", "armor", "arm", "greaves", "weapon", "action", "view")
FACTOR_SIZES = (3, 2, 7, 2, 2, 2, 2, 5, 4)
BODY_NAMES = ("light", "tanned", "dark")
SEX_NAMES = ("male", "female")
HAIR_NAMES = ("short", "long", "spiky", "bun", "mohawk", "bob", "pigtails")
ARMOR_NAMES = ("tunic", "plate")
ARM_NAMES = ("bare", "bracers")
GREAVES_NAMES = ("trousers", "greaves")
WEAPON_NAMES = ("sword", "spear")
ACTION_NAMES = ("spellcast", "thrust", "walk", "slash", "shoot")
VIEW_NAMES = ("up", "left", "down", "right")
VIEW_UP, VIEW_LEFT, VIEW_DOWN, VIEW_RIGHT = range(4)

IMAGE_SIZE = 64
BACKGROUND = (0, 0, 0)

# Inclusive row ranges outside which an attribute never changes a pixel (the
# part's own rows, widened by one for its rims and the outline around it).
ATTRIBUTE_ROWS = {
    "hair": (0, 25),  # hair ends on the chin row, 24
    "sex": (0, 39),  # face and torso shape; the torso ends on row 38
    "armor": (26, 42),  # shoulder plates from row 27, tassets down to row 41
    "greaves": (44, 63),  # greaves start on row 45, the knee cops on row 46
}

# --------------------------------------------------------------------------- #
# Palette: an image is a [64, 64] array of codes into this table, the skin codes
# taking the colours of the image's body.
# --------------------------------------------------------------------------- #
SKIN_TONES = (  # (fill, shade) per body
    ((244, 204, 172), (212, 164, 132)),
    ((204, 146, 98), (164, 108, 68)),
    ((122, 80, 54), (90, 58, 40)),
)
HAIR_COLOURS = (  # (fill, shade) per hair style
    ((124, 80, 44), (88, 54, 30)),
    ((234, 202, 98), (190, 152, 62)),
    ((62, 58, 72), (40, 38, 50)),
    ((200, 86, 40), (150, 58, 28)),
    ((86, 170, 74), (54, 120, 48)),
    ((216, 216, 228), (166, 166, 186)),
    ((74, 114, 216), (48, 76, 162)),
)
_FIXED_COLOURS = {
    "background": BACKGROUND,
    "outline": (34, 28, 38),
    "eye": (56, 42, 76),
    "lips": (186, 70, 86),
    "tunic": (48, 142, 150),
    "tunic_shade": (30, 100, 110),
    "belt": (112, 72, 40),
    "steel": (150, 158, 172),
    "steel_shade": (104, 112, 128),
    "steel_light": (198, 204, 216),
    "trousers": (62, 74, 124),
    "trousers_shade": (42, 50, 88),
    "boots": (94, 60, 36),
    "boots_shade": (64, 40, 24),
    "bracer": (160, 110, 62),
    "bracer_shade": (118, 78, 42),
    "blade": (222, 230, 240),
    "blade_shade": (150, 164, 184),
    "gold": (224, 182, 64),
    "gold_shade": (172, 132, 40),
    "shaft": (172, 122, 66),
    "shaft_shade": (126, 86, 46),
}
COLOUR_NAMES = (
    tuple(_FIXED_COLOURS)
    + ("skin", "skin_shade")
    + tuple(f"hair{h}{suffix}" for h in range(len(HAIR_NAMES)) for suffix in ("", "_shade"))
)
CODE = {name: code for code, name in enumerate(COLOUR_NAMES)}
NUM_CODES = len(COLOUR_NAMES)
SKIN_CODES = (CODE["skin"], CODE["skin_shade"])
WEAPON_CODES = tuple(CODE[n] for n in ("blade", "blade_shade", "gold", "gold_shade", "shaft",
                                       "shaft_shade"))
HAIR_CODES = tuple(CODE[f"hair{h}{s}"] for h in range(len(HAIR_NAMES)) for s in ("", "_shade"))
BRACER_CODES = tuple(CODE[n] for n in ("bracer", "bracer_shade", "steel", "steel_shade",
                                       "steel_light"))


def palettes() -> np.ndarray:
    """RGB of every code for every body: [3, NUM_CODES, 3] uint8."""
    table = np.zeros((len(SKIN_TONES), NUM_CODES, 3), np.uint8)
    for name, rgb in _FIXED_COLOURS.items():
        table[:, CODE[name]] = rgb
    for body, (fill, shade) in enumerate(SKIN_TONES):
        table[body, CODE["skin"]] = fill
        table[body, CODE["skin_shade"]] = shade
    for hair, (fill, shade) in enumerate(HAIR_COLOURS):
        table[:, CODE[f"hair{hair}"]] = fill
        table[:, CODE[f"hair{hair}_shade"]] = shade
    return table


# --------------------------------------------------------------------------- #
# Raster primitives: boolean [64, 64] masks on the pixel grid
# --------------------------------------------------------------------------- #
_ROWS, _COLS = np.mgrid[0:IMAGE_SIZE, 0:IMAGE_SIZE].astype(np.float64)
_CENTRE_COL = (IMAGE_SIZE - 1) / 2  # 31.5: front and back views are symmetric about it


def _empty() -> np.ndarray:
    return np.zeros((IMAGE_SIZE, IMAGE_SIZE), bool)


def _rect(top: int, bottom: int, left: int, right: int) -> np.ndarray:
    """Rows top..bottom and columns left..right, both inclusive."""
    _check_inside(top, left)
    _check_inside(bottom, right)
    mask = _empty()
    mask[top : bottom + 1, left : right + 1] = True
    return mask


def _row_spans(spans) -> np.ndarray:
    """Union of (row, first col, last col) runs."""
    mask = _empty()
    for row, left, right in spans:
        _check_inside(row, left)
        _check_inside(row, right)
        mask[row, left : right + 1] = True
    return mask


def _centred_rows(top: int, half_widths) -> np.ndarray:
    """Rows from `top` down, row i covering cols 32 - h .. 31 + h, h = half_widths[i]:
    shapes symmetric about the frame's centre line."""
    return _row_spans((top + i, 32 - h, 31 + h) for i, h in enumerate(half_widths))


def _ellipse(centre_row: float, centre_col: float, radius_rows: float,
             radius_cols: float) -> np.ndarray:
    return ((_ROWS - centre_row) / radius_rows) ** 2 + ((_COLS - centre_col) / radius_cols) ** 2 <= 1.0


def _capsule(points, half_width: float) -> np.ndarray:
    """Pixels whose centres lie within `half_width` of the polyline through
    `points` [(row, col), ...]: a limb of roughly 2 * half_width + 1 pixels."""
    mask = _empty()
    for (r0, c0), (r1, c1) in zip(points[:-1], points[1:]):
        dr, dc = r1 - r0, c1 - c0
        length2 = dr * dr + dc * dc
        t = np.clip(((_ROWS - r0) * dr + (_COLS - c0) * dc) / max(length2, 1e-12), 0.0, 1.0)
        distance2 = (_ROWS - (r0 + t * dr)) ** 2 + (_COLS - (c0 + t * dc)) ** 2
        # The small slack keeps pixels at exactly half_width in, whatever the rounding.
        mask |= distance2 <= half_width * half_width + 1e-9
    return mask


def _pixels(points) -> np.ndarray:
    mask = _empty()
    for row, col in points:
        _check_inside(row, col)
        mask[row, col] = True
    return mask


def _check_inside(row: int, col: int) -> None:
    # Negative indices would silently wrap round to the other side of the frame.
    if not (0 <= row < IMAGE_SIZE and 0 <= col < IMAGE_SIZE):
        raise ValueError(f"pixel {(row, col)} lies outside the frame")


# --------------------------------------------------------------------------- #
# Parts: pieces of one material each, and details painted on top
# --------------------------------------------------------------------------- #
@dataclasses.dataclass(frozen=True)
class Part:
    """One layer of the drawing.

    pieces: ((mask [64, 64] bool, fill code, shade code), ...), later pieces over
      earlier ones; their union is the part's mask.
    details: ((mask, code), ...) painted over the pieces, inside the part's mask
      (eyes, belts, highlights).
    rim: whether pixels touching earlier parts take the shade code.
    """

    pieces: tuple
    details: tuple = ()
    rim: bool = True


class Layer(NamedTuple):
    """Parts rasterised for batched compositing, V variants of one layer.

    mask, detail_mask: [V, 64, 64] bool; fill, shade, detail: [V, 64, 64] uint8
    codes (meaningful inside the masks); rim: as Part.rim, for every variant.
    """

    mask: np.ndarray
    fill: np.ndarray
    shade: np.ndarray
    detail_mask: np.ndarray
    detail: np.ndarray
    rim: bool

    def take(self, variant: np.ndarray) -> "Layer":
        """The layer of each drawing: variant indices of any shape S -> arrays
        [*S, 64, 64]. Index arrays that broadcast against each other (an axis per
        attribute) keep these small; `compose` broadcasts them."""
        arrays = (a[variant] for a in self[:5])
        return Layer(*arrays, self.rim)


def rasterise(parts) -> Layer:
    """Parts (the variants of one layer, all with the same rim) -> a Layer."""
    shape = (len(parts), IMAGE_SIZE, IMAGE_SIZE)
    mask, detail_mask = np.zeros(shape, bool), np.zeros(shape, bool)
    fill, shade, detail = (np.zeros(shape, np.uint8) for _ in range(3))
    for v, part in enumerate(parts):
        for piece, fill_code, shade_code in part.pieces:
            mask[v] |= piece
            fill[v][piece] = fill_code
            shade[v][piece] = shade_code
        for piece, code in part.details:
            detail_mask[v] |= piece
            detail[v][piece] = code
    detail_mask &= mask
    rims = {part.rim for part in parts}
    if len(rims) != 1:
        raise ValueError("the variants of a layer must agree on `rim`")
    return Layer(mask, fill, shade, detail_mask, detail, rims.pop())


def _touching(mask: np.ndarray) -> np.ndarray:
    """[..., 64, 64] bool -> pixels with a 4-neighbour in `mask` (a pixel of the
    mask itself only where it touches another)."""
    out = np.zeros_like(mask)
    out[..., 1:, :] |= mask[..., :-1, :]
    out[..., :-1, :] |= mask[..., 1:, :]
    out[..., :, 1:] |= mask[..., :, :-1]
    out[..., :, :-1] |= mask[..., :, 1:]
    return out


def compose(layers) -> np.ndarray:
    """Paints layers back to front, then outlines the figure.

    Args:
      layers: sequence of Layer, back to front, with arrays [*S_i, 64, 64] whose
        batch shapes S_i broadcast to one shape S.
    Returns:
      [*S, 64, 64] uint8 palette codes (CODE["background"] outside the figure).
    """
    shape = np.broadcast_shapes(*(layer.mask.shape for layer in layers))
    codes = np.full(shape, CODE["background"], np.uint8)
    figure = np.zeros(codes.shape, bool)
    for layer in layers:
        np.copyto(codes, layer.fill, where=layer.mask)
        if layer.rim:
            rim = layer.mask & _touching(figure & ~layer.mask)
            np.copyto(codes, layer.shade, where=rim)
        np.copyto(codes, layer.detail, where=layer.detail_mask)
        figure |= layer.mask
    codes[_touching(figure) & ~figure] = CODE["outline"]
    return codes


def _material(name: str) -> tuple[int, int]:
    return CODE[name], CODE[f"{name}_shade"]


_SKIN = (CODE["skin"], CODE["skin_shade"])


# --------------------------------------------------------------------------- #
# Poses
# --------------------------------------------------------------------------- #
Point = tuple[int, int]


@dataclasses.dataclass(frozen=True)
class Leg:
    """hip, knee, ankle (row, col); toe: -1 or +1, the column direction the foot
    and the knee cop stick out to."""

    hip: Point
    knee: Point
    ankle: Point
    toe: int


@dataclasses.dataclass(frozen=True)
class Pose:
    """Limb layout of one (action, view) in the front, back or left view.

    arms: (shoulder, elbow, hand) per arm; far_arms are drawn behind the torso.
    legs: in drawing order (far leg first).
    grip: the weapon hand's centre; directions: (drow, dcol) steps, each in
      {-1, 0, 1}, along which the sword and the spear point from the grip.
    """

    far_arms: tuple
    near_arms: tuple
    legs: tuple
    grip: Point
    directions: tuple


def _front_legs(left_knee, left_ankle, right_knee, right_ankle) -> tuple:
    # Front and back views: image-left leg from hip column 28, the other from 35.
    return (
        Leg((40, 28), left_knee, left_ankle, -1),
        Leg((40, 35), right_knee, right_ankle, +1),
    )


def _side_legs(far_knee, far_ankle, near_knee, near_ankle) -> tuple:
    # Facing left: toes point left; the far leg hangs from column 33, the near from 31.
    return (
        Leg((40, 33), far_knee, far_ankle, -1),
        Leg((40, 31), near_knee, near_ankle, -1),
    )


_UP, _DOWN, _LEFT_STEP = (-1, 0), (1, 0), (0, -1)
_FRONT_STANDING = _front_legs((47, 28), (54, 28), (47, 35), (54, 35))
_SIDE_STANDING = _side_legs((47, 33), (54, 33), (47, 31), (54, 31))
# Front view: shoulders at columns 23 (weapon arm, the character's right, image
# left) and 40. Left view: both shoulders at column 32/33, the near arm in front.
_FRONT_POSES = {
    "spellcast": Pose(
        (),
        (((28, 23), (24, 20), (19, 20)), ((28, 40), (24, 43), (19, 43))),
        _FRONT_STANDING, (19, 20), (_UP, _UP),
    ),
    "thrust": Pose(
        (),
        (((28, 23), (34, 24), (37, 28)), ((28, 40), (34, 39), (37, 35))),
        _front_legs((47, 26), (54, 26), (47, 35), (54, 36)), (37, 28), ((1, -1), (1, -1)),
    ),
    "walk": Pose(
        (),
        (((28, 23), (34, 22), (40, 22)), ((28, 40), (34, 41), (40, 41))),
        _front_legs((47, 27), (54, 25), (47, 36), (54, 38)), (40, 22), (_DOWN, _UP),
    ),
    "slash": Pose(
        (),
        (((28, 23), (23, 20), (17, 21)), ((28, 40), (34, 42), (39, 43))),
        _FRONT_STANDING, (17, 21), ((-1, -1), (-1, -1)),
    ),
    "shoot": Pose(
        (),
        (((28, 23), (28, 19), (28, 15)), ((28, 40), (32, 42), (30, 36))),
        _front_legs((47, 27), (54, 27), (47, 36), (54, 36)), (28, 15), (_UP, _UP),
    ),
}
_SIDE_POSES = {
    "spellcast": Pose(
        (((28, 33), (25, 28), (22, 21)),),
        (((28, 32), (24, 28), (20, 24)),),
        _SIDE_STANDING, (20, 24), (_UP, _UP),
    ),
    "thrust": Pose(
        (((28, 33), (32, 30), (32, 26)),),
        (((28, 32), (31, 27), (31, 22)),),
        _side_legs((47, 36), (54, 38), (46, 28), (54, 26)), (31, 22), (_LEFT_STEP, _LEFT_STEP),
    ),
    "walk": Pose(
        (((28, 33), (34, 30), (39, 28)),),
        (((28, 32), (34, 34), (39, 36)),),
        _side_legs((47, 35), (54, 36), (47, 29), (54, 28)), (39, 36), (_DOWN, _UP),
    ),
    "slash": Pose(
        (((28, 33), (34, 30), (38, 28)),),
        (((28, 32), (22, 35), (17, 39)),),
        _SIDE_STANDING, (17, 39), ((-1, 1), _UP),
    ),
    "shoot": Pose(
        (((28, 33), (28, 38), (25, 35)),),
        (((28, 32), (28, 27), (28, 22)),),
        _side_legs((47, 34), (54, 35), (47, 30), (54, 29)), (28, 22), (_UP, _UP),
    ),
}


def _mirror_point(point: Point) -> Point:
    return point[0], IMAGE_SIZE - 1 - point[1]


def _mirror_pose(layout: Pose) -> Pose:
    """The pose reflected left-right about the frame's centre line."""
    def arms(limbs):
        return tuple(tuple(_mirror_point(p) for p in limb) for limb in limbs)

    legs = tuple(
        Leg(_mirror_point(leg.hip), _mirror_point(leg.knee), _mirror_point(leg.ankle), -leg.toe)
        for leg in layout.legs
    )
    directions = tuple((dr, -dc) for dr, dc in layout.directions)
    return Pose(arms(layout.far_arms), arms(layout.near_arms), legs, _mirror_point(layout.grip),
                directions)


@functools.lru_cache(maxsize=None)
def pose_of(action: int, view: int) -> Pose:
    """Limb layout of action index `action` in view VIEW_UP, VIEW_LEFT or VIEW_DOWN
    (VIEW_RIGHT is drawn as the mirror image of VIEW_LEFT)."""
    name = ACTION_NAMES[action]
    if view == VIEW_DOWN:
        return _FRONT_POSES[name]
    if view == VIEW_LEFT:
        return _SIDE_POSES[name]
    if view == VIEW_UP:
        # Seen from behind, the weapon hand is on the image right. A thrust
        # pushes the weapon away from the viewer: up the image.
        back = _mirror_pose(_FRONT_POSES[name])
        if name == "thrust":
            back = dataclasses.replace(back, directions=((-1, 1), (-1, 1)))
        return back
    raise ValueError(f"pose is drawn for views up, left and down, got {view}")


# --------------------------------------------------------------------------- #
# Body shapes (rows are fixed for every pose: the body stays upright)
# --------------------------------------------------------------------------- #
HEAD_TOP_ROW, CHIN_ROW = 13, 24
TORSO_TOP_ROW, WAIST_ROW = 27, 38
SOLE_ROW = 57  # every foot ends here: the ground line
GREAVES_TOP_ROW = 45
_LEG_HALF_WIDTH = 2.0  # legs 5 px wide
_ARM_HALF_WIDTH = 1.0  # arms 3 px wide

# Torso half-widths from TORSO_TOP_ROW to WAIST_ROW, front and back views.
_TORSO_HALF_WIDTHS = (
    (7, 8, 8, 8, 8, 8, 8, 7, 7, 7, 6, 6),  # male: square shoulders
    (6, 7, 7, 7, 7, 6, 6, 6, 6, 7, 7, 7),  # female: narrow waist, wide hips
)
# Side view (facing left) torso runs (first col, last col) per row.
_SIDE_TORSO_SPANS = (
    ((29, 35),) + ((28, 36),) * 6 + ((29, 35),) * 5,
    ((29, 35),) * 3 + ((28, 35),) * 3 + ((29, 35),) * 3 + ((29, 36),) * 3,
)
_HEAD_HALF_WIDTHS = (4, 5, 6, 6, 6, 6, 6, 6, 6, 6, 5, 4)  # rows 13..24, front and back
_SIDE_HEAD_SPANS = ((29, 35), (28, 36)) + ((27, 37),) * 8 + ((28, 36), (29, 35))


def _torso_shape(view: int, sex: int) -> np.ndarray:
    if view == VIEW_LEFT:
        spans = _SIDE_TORSO_SPANS[sex]
        return _row_spans((TORSO_TOP_ROW + i, a, b) for i, (a, b) in enumerate(spans))
    return _centred_rows(TORSO_TOP_ROW, _TORSO_HALF_WIDTHS[sex])


def _head_shape(view: int) -> np.ndarray:
    if view == VIEW_LEFT:
        return _row_spans((HEAD_TOP_ROW + i, a, b) for i, (a, b) in enumerate(_SIDE_HEAD_SPANS))
    return _centred_rows(HEAD_TOP_ROW, _HEAD_HALF_WIDTHS)


def _arm_parts(limbs, arm: int) -> tuple:
    """Pieces of arms (shoulder, elbow, hand): skin upper arms, then forearms and
    3x3 hands, skin or bracers and gauntlets (same masks either way)."""
    pieces = []
    for shoulder, elbow, hand in limbs:
        pieces.append((_capsule((shoulder, elbow), _ARM_HALF_WIDTH), *_SKIN))
        forearm = _capsule((elbow, hand), _ARM_HALF_WIDTH)
        palm = _rect(hand[0] - 1, hand[0] + 1, hand[1] - 1, hand[1] + 1)
        pieces.append((forearm, *(_material("bracer") if arm else _SKIN)))
        pieces.append((palm, *(_material("steel") if arm else _SKIN)))
    return tuple(pieces)


@functools.lru_cache(maxsize=None)
def body_part(action: int, view: int, arm: int) -> Part:
    """Neck and far arms (side views)."""
    if view == VIEW_LEFT:
        neck = _rect(CHIN_ROW + 1, TORSO_TOP_ROW - 1, 31, 33)
    else:
        neck = _rect(CHIN_ROW + 1, TORSO_TOP_ROW - 1, 30, 33)
    pieces = ((neck, *_SKIN),) + _arm_parts(pose_of(action, view).far_arms, arm)
    return Part(pieces)


@functools.lru_cache(maxsize=None)
def leg_parts(action: int, view: int, greaves: int) -> tuple:
    """One Part per leg, far leg first: trousers from the hip, then greaves from
    GREAVES_TOP_ROW down, then the foot."""
    parts = []
    for leg in pose_of(action, view).legs:
        pieces = [(_capsule((leg.hip, leg.knee, leg.ankle), _LEG_HALF_WIDTH),
                   *_material("trousers"))]
        details = []
        # The pelvis joins the legs under the torso's lower edge.
        if view == VIEW_LEFT:
            pelvis_cols = (29, 35)
        else:  # each leg takes its half of the pelvis, so the two meet in a seam
            pelvis_cols = (26, 31) if leg.hip[1] < _CENTRE_COL else (32, 37)
        pelvis = _rect(WAIST_ROW + 1, WAIST_ROW + 3, *pelvis_cols)
        pieces.insert(0, (pelvis, *_material("trousers")))
        ankle_row, ankle_col = leg.ankle
        foot = _rect(ankle_row + 1, SOLE_ROW, ankle_col - 2, ankle_col + 2)
        toe_col = ankle_col + 3 * leg.toe
        foot |= _rect(SOLE_ROW - 1, SOLE_ROW, min(toe_col, ankle_col), max(toe_col, ankle_col))
        if greaves:
            shin = _capsule((leg.knee, leg.ankle), _LEG_HALF_WIDTH) & (_ROWS >= GREAVES_TOP_ROW)
            knee_row, knee_col = leg.knee
            cop_cols = sorted((knee_col - 2 * leg.toe, knee_col + 3 * leg.toe))
            knee_cop = _rect(knee_row - 1, knee_row + 1, *cop_cols)
            pieces += [(shin, *_material("steel")), (knee_cop, *_material("steel")),
                       (foot, *_material("steel"))]
            details.append((_pixels([(knee_row, knee_col)]), CODE["steel_light"]))
        else:
            pieces.append((foot, *_material("boots")))
        parts.append(Part(tuple(pieces), tuple(details)))
    return tuple(parts)


@functools.lru_cache(maxsize=None)
def torso_part(view: int, sex: int, armor: int) -> Part:
    """Tunic (belted, V neck in front) or plate (shoulder plates, tassets, ridge)."""
    shape = _torso_shape(view, sex)
    side = view == VIEW_LEFT
    details = []
    if not armor:
        pieces = ((shape, *_material("tunic")),)
        details.append((shape & (_ROWS == WAIST_ROW), CODE["belt"]))
        if view == VIEW_DOWN:
            details.append((_row_spans([(27, 30, 33), (28, 31, 32)]), CODE["skin"]))
        elif side:
            details.append((_row_spans([(27, 29, 30)]), CODE["skin"]))
        shade = CODE["tunic_shade"]
    else:
        if side:
            # One pixel wider than the torso front and back, its front top corner
            # cut so that the plate does not poke into the chin.
            shoulders = _rect(TORSO_TOP_ROW, TORSO_TOP_ROW + 2, 27, 37) & ~_pixels([(27, 27)])
            tassets = _rect(WAIST_ROW + 1, WAIST_ROW + 3, 28, 36)
            ridge = _rect(TORSO_TOP_ROW + 1, WAIST_ROW - 2, 29, 29)
        else:
            shoulders = _centred_rows(TORSO_TOP_ROW, (8, 9, 9))
            tassets = _rect(WAIST_ROW + 1, WAIST_ROW + 3, 25, 30) | _rect(
                WAIST_ROW + 1, WAIST_ROW + 3, 33, 38)
            ridge = _rect(TORSO_TOP_ROW + 1, WAIST_ROW - 2, 31, 32)
        pieces = ((shape | shoulders, *_material("steel")), (tassets, *_material("steel")))
        details.append((ridge, CODE["steel_light"]))
        lames = (_ROWS == WAIST_ROW - 3) | (_ROWS == WAIST_ROW)
        details.append((shape & lames & ~ridge, CODE["steel_shade"]))
        shade = CODE["steel_shade"]
    if sex == 1 and view == VIEW_DOWN:
        bust = _pixels([(31, 27), (32, 28), (32, 29), (31, 30),
                        (31, 33), (32, 34), (32, 35), (31, 36)])
        details.append((bust, shade))
    elif sex == 1 and side:
        details.append((_pixels([(32, 28), (32, 29)]), shade))
    return Part(pieces, tuple(details))


@functools.lru_cache(maxsize=None)
def arm_part(action: int, view: int, arm: int) -> Part:
    """The near arms (both arms in front and back views)."""
    return Part(_arm_parts(pose_of(action, view).near_arms, arm))


@functools.lru_cache(maxsize=None)
def face_part(view: int, sex: int) -> Part:
    """Head skin and ears; eyes and mouth in front and side views."""
    head = _head_shape(view)
    details = []
    if view == VIEW_LEFT:
        nose = _pixels([(20, 26), (21, 26)])
        pieces = ((head, *_SKIN), (nose, *_SKIN))
        details.append((_pixels([(18, 34), (19, 34), (20, 33)]), CODE["skin_shade"]))
        details.append((_pixels([(19, 29), (20, 29)]), CODE["eye"]))
        if sex:
            details += [(_pixels([(18, 30)]), CODE["eye"]),
                        (_pixels([(23, 28), (23, 29)]), CODE["lips"])]
        else:
            details.append((_pixels([(23, 28)]), CODE["skin_shade"]))
    else:
        ears = _rect(18, 20, 25, 25) | _rect(18, 20, 38, 38)
        pieces = ((head, *_SKIN), (ears, *_SKIN))
        details.append((_pixels([(19, 25), (19, 38)]), CODE["skin_shade"]))
        if view == VIEW_DOWN:
            details.append((_rect(19, 20, 29, 29) | _rect(19, 20, 34, 34), CODE["eye"]))
            if sex:
                details += [(_pixels([(18, 28), (18, 35)]), CODE["eye"]),
                            (_rect(22, 22, 31, 32), CODE["lips"])]
            else:
                details.append((_rect(22, 22, 31, 32), CODE["skin_shade"]))
    return Part(pieces, tuple(details))


def _dome(top: int, bottom: int, centre_col: float, half_width: float) -> np.ndarray:
    """Upper half of an ellipse, from row `top` down to its widest row `bottom`."""
    ellipse = _ellipse(bottom, centre_col, bottom - top + 0.5, half_width)
    return ellipse & (_ROWS <= bottom)


def _spikes(tips, base_row: int) -> np.ndarray:
    """Spikes (row, col) of hair: a 1 px column from the tip, 3 px wide from two
    rows below the tip down to `base_row`."""
    mask = _empty()
    for row, col in tips:
        mask |= _rect(row, base_row, col, col) | _rect(row + 2, base_row, col - 1, col + 1)
    return mask


def _hair_shape(view: int, hair: int) -> tuple[np.ndarray, np.ndarray]:
    """(hair mask, shade-strand mask) of a style in the front, back or left view."""
    name = HAIR_NAMES[hair]
    c = _CENTRE_COL
    if view == VIEW_LEFT:
        return _side_hair(name)
    back = view == VIEW_UP
    cap = _dome(11, 15, c, 7.0)
    strands = _empty()
    if name == "short":
        shape = cap | _rect(16, 17, 26, 26) | _rect(16, 17, 37, 37)
        if back:
            shape |= _rect(15, 21, 26, 37)
        strands = _pixels([(13, 29), (13, 34)])
    elif name == "long":
        shape = _dome(11, 16, c, 7.0) | _rect(16, 23, 25, 26) | _rect(16, 23, 37, 38)
        shape |= _row_spans([(24, 25, 25), (24, 38, 38)])
        if back:
            shape |= _rect(16, 24, 25, 38)
            strands = _rect(17, 23, 29, 29) | _rect(17, 23, 34, 34)
        else:
            strands = _rect(17, 22, 26, 26) | _rect(17, 22, 37, 37)
    elif name == "spiky":
        shape = _dome(12, 15, c, 7.0) | _spikes([(9, 26), (8, 30), (8, 33), (9, 37)], 12)
        if back:
            shape |= _rect(15, 20, 26, 37)
        strands = _pixels([(10, 30), (10, 33)])
    elif name == "bun":
        shape = cap | _ellipse(10, c, 2.4, 2.6)
        if back:
            shape |= _rect(15, 20, 26, 37)
        else:
            shape |= _rect(16, 16, 26, 29)  # fringe swept to one side
        strands = _rect(11, 11, 30, 33)
    elif name == "mohawk":
        # Shaved head: only the crest, front to back along the middle.
        shape = _rect(9, 15, 30, 33) | _rect(8, 8, 31, 32)
        if back:
            shape |= _rect(16, 23, 30, 33)
        strands = _rect(10, 14, 31, 31)
    elif name == "bob":
        shape = _dome(11, 16, c, 7.5) | _rect(16, 22, 24, 26) | _rect(16, 22, 37, 39)
        if back:
            shape |= _rect(16, 22, 24, 39)
            strands = _rect(22, 22, 24, 39)
        else:
            strands = _rect(16, 16, 27, 36)  # straight fringe
    elif name == "pigtails":
        tails = _ellipse(19.5, 23.5, 3.6, 1.6) | _ellipse(19.5, 39.5, 3.6, 1.6)
        shape = cap | tails | _rect(15, 16, 24, 25) | _rect(15, 16, 38, 39)
        if back:
            shape |= _rect(15, 20, 26, 37)
        strands = _pixels([(16, 23), (16, 24), (16, 39), (16, 40)])  # ties
    else:  # pragma: no cover - HAIR_NAMES is fixed
        raise ValueError(name)
    return shape, strands & shape


def _side_hair(name: str) -> tuple[np.ndarray, np.ndarray]:
    """Hair in the left view: it covers the top and the back (right) of the head."""
    cap = _dome(11, 15, 32.5, 6.0)
    strands = _empty()
    if name == "short":
        shape = cap | _rect(15, 21, 34, 38) | _rect(15, 15, 27, 33)
        strands = _rect(13, 13, 31, 35)
    elif name == "long":
        shape = _dome(11, 16, 32.5, 6.0) | _rect(15, 24, 33, 38)
        strands = _rect(17, 23, 36, 36)
    elif name == "spiky":
        shape = _dome(12, 15, 32.5, 6.0) | _spikes([(9, 29), (8, 32), (8, 35), (10, 38)], 12)
        shape |= _rect(15, 20, 35, 38)
        strands = _pixels([(10, 32), (10, 35)])
    elif name == "bun":
        shape = cap | _ellipse(11, 38, 2.6, 2.6) | _rect(15, 20, 35, 38)
        strands = _rect(11, 11, 37, 39)
    elif name == "mohawk":
        shape = _rect(9, 12, 29, 37) | _rect(8, 8, 31, 36) | _rect(13, 19, 37, 38)
        strands = _rect(10, 10, 30, 36)
    elif name == "bob":
        shape = _dome(11, 16, 32.5, 6.5) | _rect(16, 22, 33, 39)
        strands = _rect(22, 22, 33, 39)
    elif name == "pigtails":
        shape = cap | _rect(15, 19, 35, 38) | _ellipse(20, 39.5, 3.6, 1.6)
        strands = _pixels([(17, 39), (17, 40)])
    else:  # pragma: no cover - HAIR_NAMES is fixed
        raise ValueError(name)
    return shape, strands & shape


@functools.lru_cache(maxsize=None)
def hair_part(view: int, hair: int) -> Part:
    """A hair style in view VIEW_UP, VIEW_LEFT or VIEW_DOWN, with darker strands."""
    shape, strands = _hair_shape(view, hair)
    fill, shade = CODE[f"hair{hair}"], CODE[f"hair{hair}_shade"]
    return Part(((shape, fill, shade),), ((strands, shade),))


def _weapon_pixels(grip: Point, direction: Point, weapon: int) -> list[tuple[list, str]]:
    """(pixel list, colour name) runs of a weapon held at `grip` and pointing
    along `direction`. Positions t along the weapon are steps of `direction`
    from the grip; t in -1..1 lies under the hand and is not drawn."""
    dr, dc = direction
    normal = (dc, -dr)  # perpendicular step: guard, spear head
    # Second line that makes the blade 2 px wide: sideways for axis directions,
    # one column over for diagonals (a staircase).
    beside = normal if dr == 0 or dc == 0 else (0, -dc)

    def at(t, k=0, offset=normal):
        return grip[0] + t * dr + k * offset[0], grip[1] + t * dc + k * offset[1]

    if WEAPON_NAMES[weapon] == "sword":
        return [
            ([at(-2)], "gold"),
            ([at(2, k) for k in range(-2, 3)], "gold"),
            ([at(2, 0)], "gold_shade"),
            ([at(t) for t in range(3, 13)], "blade"),
            ([at(t, 1, beside) for t in range(3, 12)], "blade_shade"),
        ]
    return [
        ([at(t) for t in itertools.chain(range(-16, -1), range(2, 9))], "shaft"),
        ([at(-16), at(8)], "shaft_shade"),
        ([at(t, k) for t in (9, 10) for k in (-1, 0, 1)] + [at(11), at(12)], "blade"),
        ([at(9, 1), at(10, 1)], "blade_shade"),
    ]


@functools.lru_cache(maxsize=None)
def weapon_part(action: int, view: int, weapon: int) -> Part:
    """The sword or the spear in the weapon hand of one pose; no rim (see the
    module docstring)."""
    layout = pose_of(action, view)
    pieces = []
    for points, colour in _weapon_pixels(layout.grip, layout.directions[weapon], weapon):
        code = CODE[colour]
        pieces.append((_pixels(points), code, code))
    return Part(tuple(pieces), rim=False)


@functools.lru_cache(maxsize=None)
def pose_layers(action: int, view: int) -> tuple[Layer, ...]:
    """Every variant of every layer of one pose (VIEW_UP, VIEW_LEFT or VIEW_DOWN),
    back to front: body [arm], far and near leg [greaves], torso [sex * 2 + armor],
    arms [arm], face [sex], hair [hair], weapon [weapon] (variants in brackets)."""
    legs = [leg_parts(action, view, greaves) for greaves in range(2)]
    return (
        rasterise([body_part(action, view, arm) for arm in range(2)]),
        rasterise([legs[greaves][0] for greaves in range(2)]),
        rasterise([legs[greaves][1] for greaves in range(2)]),
        rasterise([torso_part(view, sex, armor) for sex in range(2) for armor in range(2)]),
        rasterise([arm_part(action, view, arm) for arm in range(2)]),
        rasterise([face_part(view, sex) for sex in range(2)]),
        rasterise([hair_part(view, hair) for hair in range(len(HAIR_NAMES))]),
        rasterise([weapon_part(action, view, weapon) for weapon in range(2)]),
    )


def draw(sex, hair, armor, arm, greaves, weapon, action: int, view: int) -> np.ndarray:
    """Palette codes of characters in one pose; body only recolours skin, so it is
    not needed here.

    Args:
      sex, hair, armor, arm, greaves, weapon: integer factor indices, arrays of
        shapes that broadcast to one shape S.
      action, view: one index each (views as in VIEW_NAMES).
    Returns:
      [*S, 64, 64] uint8 codes into `palettes()`.
    """
    if view == VIEW_RIGHT:
        return draw(sex, hair, armor, arm, greaves, weapon, action, VIEW_LEFT)[..., ::-1]
    body, far_leg, near_leg, torso, arms, face, hair_layer, weapon_layer = pose_layers(
        action, view)
    sex, armor = np.asarray(sex), np.asarray(armor)
    return compose((
        body.take(arm), far_leg.take(greaves), near_leg.take(greaves),
        torso.take(sex * 2 + armor), arms.take(arm), face.take(sex),
        hair_layer.take(hair), weapon_layer.take(weapon),
    ))


_NUM_DRAWINGS = int(np.prod(FACTOR_SIZES[1:]))  # 4480: every factor but body


def compute_code_table() -> np.ndarray:
    """Codes of every drawing: [4480, 64 * 64] uint8, drawing d being the factors
    (sex, ..., view) = unravel(d, FACTOR_SIZES[1:]) (row-major, as the flat index)."""
    sizes = FACTOR_SIZES[1:]
    # One axis per attribute: each layer then gathers only its few variants and
    # compositing broadcasts them over the 224 attribute tuples.
    attributes = np.ix_(*(np.arange(size) for size in sizes[:6]))
    table = np.empty(sizes[:6] + sizes[6:] + (IMAGE_SIZE, IMAGE_SIZE), np.uint8)
    for action in range(sizes[6]):
        for view in range(sizes[7]):
            table[..., action, view, :, :] = draw(*attributes, action, view)
    return table.reshape(_NUM_DRAWINGS, IMAGE_SIZE * IMAGE_SIZE)


# --------------------------------------------------------------------------- #
# Dataset
# --------------------------------------------------------------------------- #
class SpritesSynth(FactorDataset):
    """Procedural stand-in for Sprites with the real data's factors and ordering.

    All 4480 drawings (every factor but body) are composed on first use, in well
    under a second, and cached on the instance as palette codes (18 MB); an image
    is then one palette lookup. No randomness: every image is a pure function of
    its factor indices.
    """

    name = "sprites_synth"
    image_shape = (IMAGE_SIZE, IMAGE_SIZE, 3)
    factor_names = FACTOR_NAMES
    factor_sizes = FACTOR_SIZES
    factor_values = tuple(np.arange(s, dtype=np.float64) for s in FACTOR_SIZES)

    def __init__(self) -> None:
        super().__init__()
        self._codes: np.ndarray | None = None
        # Input pipelines render from background threads: build the table once.
        self._codes_lock = threading.Lock()
        self._colours = palettes().reshape(-1, 3)  # [3 * NUM_CODES, 3]

    def code_table(self) -> np.ndarray:
        """[4480, 4096] uint8 palette codes of every drawing, built once."""
        with self._codes_lock:
            if self._codes is None:
                self._codes = compute_code_table()
        return self._codes

    def _images_at(self, index: np.ndarray) -> np.ndarray:
        table = self.code_table()
        # Body is the slowest factor: index = body * 4480 + drawing.
        body, drawing = np.divmod(index, _NUM_DRAWINGS)
        codes = table[drawing].astype(np.intp)
        codes += (body * NUM_CODES)[:, None]
        images = np.take(self._colours, codes, axis=0)
        return images.reshape((len(index),) + self.image_shape)
