r"""The Flow dataset of CausalVAE (Yang et al., CVPR 2021), drawn procedurally.

A ball sits in a cup of water; water spouts from a hole in the cup's right wall.
The ball's size raises the water level, and the water level and the hole's
height set how far the jet reaches. Geometry follows the authors' generator
(SPEC §2.2) on a 96x96 RGBA canvas spanning x, y in (0, 20), y up. For
r in [5, 34], h_raw in [10, 39], hole in [6, 14]:

  ball radius b = r / 30; water height h = b^3 + h_raw / 10; hole height d = hole / 3.
  water:  light-sky-blue rectangle from (3, 0), width 5, height 5 + h;
  walls:  black, 2 px, butt caps: x = 3 from y = 0 to 19; x = 8 from 0 to d
          and from d + 0.4 to 19 (the gap is the hole; 0.4 as in the authors' code);
  ball:   firebrick circle of radius b at (5.5, b + 0.5);
  jet:    light-sky-blue, 2 px, round joins and caps, the curve
          x = 8 + sqrt(2 (0.98 + eps) h (d - y)) for y from d down to 0.5;
  ground: black, 2 px, from (0, 0.2) to (20, 0.2).
  Drawing order as in matplotlib: water, walls, ball, then the jet and ground
  (plotted lines sit above patches).

The authors drew eps = 0.01 max(|z|, 1), z ~ N(0, 1), unseeded. Here z comes from
np.random.default_rng([JET_SEED, index]), so each image is a pure function of its
index whatever batch it is rendered in. eps only shapes the drawing: the label
uses the noiseless flow = sqrt(1.96 h (d - 0.5)), as the authors' did.

Labels are the physical values [b, h, flow, d] (ball size, water height, water
flow, hole). d >= 2 > 0.5 for every hole index, so flow is always real and
positive; the jet's d - y is >= 0 on its whole length, so it is never NaN either.
"""

from __future__ import annotations

import numpy as np

from causal_disent.data import raster
from causal_disent.data.base import FactorDataset, render_in_chunks

BALL_INDICES = np.arange(5, 35)  # r, 30 values
WATER_INDICES = np.arange(10, 40)  # h_raw, 30 values
HOLE_INDICES = np.arange(6, 15)  # hole, 9 values
LABEL_NAMES = ("ball_size", "water_height", "water_flow", "hole")

# graph[i, j] = 1: label i causes label j (ball -> water -> flow <- hole).
CAUSAL_GRAPH = np.array([[0, 1, 0, 0], [0, 0, 1, 0], [0, 0, 0, 0], [0, 0, 1, 0]], np.int64)
CAUSAL_GRAPH.setflags(write=False)

JET_SEED = 20210619  # any fixed constant: makes the authors' jitter reproducible
_GRAVITY = 0.98
_JITTER_SCALE = 0.01

_IMAGE_SIZE = 96
_RANGE = (0.0, 20.0)
_CUP_LEFT, _CUP_RIGHT, _CUP_TOP = 3.0, 8.0, 19.0
_WATER_BASE = 5.0  # the water's height above the cup's floor is 5 + h
_HOLE_GAP = 0.4
_BALL_X, _BALL_LIFT = 5.5, 0.5
_JET_END_Y = 0.5
_GROUND_Y = 0.2
_LINE_WIDTH_PX = 2.0
# The jet is drawn through points evenly spaced in x; with 12 segments the
# polyline strays at most (d - 0.5) / (4 * 12^2) < 0.01 units (0.04 px) from the
# parabola, for any h.
_JET_SEGMENTS = 12
_RENDER_CHUNK = 128  # images per pass: bounds the supersampling buffers


def flow_concepts(r: np.ndarray, h_raw: np.ndarray, hole: np.ndarray) -> dict[str, np.ndarray]:
    """The physical quantities of [B] raw factor values: ball_size b, water_height h,
    hole d and the noiseless water_flow sqrt(1.96 h (d - 0.5)), each [B] float64."""
    ball = np.asarray(r, np.float64) / 30.0
    water = ball**3 + np.asarray(h_raw, np.float64) / 10.0
    hole_height = np.asarray(hole, np.float64) / 3.0
    flow = np.sqrt(2.0 * _GRAVITY * water * (hole_height - _JET_END_Y))
    return {"ball_size": ball, "water_height": water, "water_flow": flow, "hole": hole_height}


def jet_jitter(index: np.ndarray) -> np.ndarray:
    """The authors' eps = 0.01 max(|z|, 1), with z seeded by each image's index: [B]."""
    z = np.array([np.random.default_rng([JET_SEED, int(k)]).standard_normal() for k in index])
    return _JITTER_SCALE * np.maximum(np.abs(z), 1.0)


def jet_points(
    water: np.ndarray, hole_height: np.ndarray, jitter: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Points on each jet, [B] inputs -> xs, ys: [B, _JET_SEGMENTS + 1], from the hole down.

    The curve x = 8 + sqrt(k (d - y)), k = 2 (0.98 + eps) h, is the parabola
    y = d - (x - 8)^2 / k; it leaves the hole horizontally, so points are spaced
    evenly in x rather than y to follow the bend.
    """
    k = 2.0 * (_GRAVITY + jitter) * water
    reach = np.sqrt(k * (hole_height - _JET_END_Y))
    dx = reach[:, None] * np.linspace(0.0, 1.0, _JET_SEGMENTS + 1)[None, :]
    return _CUP_RIGHT + dx, hole_height[:, None] - dx**2 / k[:, None]


class Flow(FactorDataset):
    """CausalVAE's Flow: 30 ball sizes x 30 water levels x 9 holes = 8100 images.

    Flat index = (r_position * 30 + h_raw_position) * 9 + hole_position, the
    authors' loop order. Factor values are the raw integers r, h_raw and hole;
    `labels` gives the physical concepts. Images are rendered on demand.
    """

    name = "flow"
    image_shape = (_IMAGE_SIZE, _IMAGE_SIZE, 4)
    factor_names = ("ball_r", "water_h_raw", "hole")
    factor_sizes = (len(BALL_INDICES), len(WATER_INDICES), len(HOLE_INDICES))
    factor_values = tuple(v.astype(np.float64) for v in (BALL_INDICES, WATER_INDICES, HOLE_INDICES))
    label_names = LABEL_NAMES
    causal_graph = CAUSAL_GRAPH

    def __init__(self) -> None:
        super().__init__()
        self._canvas = raster.Canvas(_IMAGE_SIZE, _IMAGE_SIZE, _RANGE, _RANGE)

    def concepts(self, index: np.ndarray) -> dict[str, np.ndarray]:
        """[B] flat indices -> `flow_concepts` of each image."""
        factors = self.index_to_factors(index)
        return flow_concepts(
            BALL_INDICES[factors[:, 0]], WATER_INDICES[factors[:, 1]], HOLE_INDICES[factors[:, 2]]
        )

    def labels(self, index: np.ndarray) -> np.ndarray:
        """[B] flat indices -> [B, 4] float64 [ball size b, water height h, flow, hole d]."""
        concepts = self.concepts(index)
        return np.stack([concepts[name] for name in LABEL_NAMES], axis=1)

    def predefined_split(self) -> dict[str, np.ndarray]:
        """Every 5th image to test (flat index % 5 == 4, the last of each five, as
        a counter that resets after four training images gives): 6480 / 1620."""
        index = np.arange(self.num_images, dtype=np.int64)
        is_test = index % 5 == 4
        return {"train": index[~is_test], "test": index[is_test]}

    def _images_at(self, index: np.ndarray) -> np.ndarray:
        return render_in_chunks(index, self._render, _RENDER_CHUNK, self.image_shape)

    def _render(self, index: np.ndarray) -> np.ndarray:
        concepts = self.concepts(index)
        ball, water, hole = concepts["ball_size"], concepts["water_height"], concepts["hole"]
        canvas, batch = self._canvas, len(index)

        def constant(value: float) -> np.ndarray:
            return np.full(batch, value)

        def wall(x: float, y_low: np.ndarray, y_high: np.ndarray) -> raster.Coverage:
            return canvas.segment(constant(x), y_low, constant(x), y_high, _LINE_WIDTH_PX)

        rgb = canvas.blank(batch)
        # Drawing order as in the authors' matplotlib figure (see module docstring).
        cup_width = constant(_CUP_RIGHT - _CUP_LEFT)
        water_box = canvas.rectangle(
            constant(_CUP_LEFT), constant(0.0), cup_width, _WATER_BASE + water
        )
        raster.paint(rgb, water_box, raster.LIGHT_SKY_BLUE)
        raster.paint(rgb, wall(_CUP_LEFT, constant(0.0), constant(_CUP_TOP)), raster.BLACK)
        raster.paint(rgb, wall(_CUP_RIGHT, constant(0.0), hole), raster.BLACK)
        raster.paint(rgb, wall(_CUP_RIGHT, hole + _HOLE_GAP, constant(_CUP_TOP)), raster.BLACK)
        raster.paint(
            rgb, canvas.circle(constant(_BALL_X), ball + _BALL_LIFT, ball), raster.FIREBRICK
        )
        jet_x, jet_y = jet_points(water, hole, jet_jitter(index))
        raster.paint(rgb, canvas.polyline(jet_x, jet_y, _LINE_WIDTH_PX), raster.LIGHT_SKY_BLUE)
        ground = canvas.segment(
            constant(_RANGE[0]), constant(_GROUND_Y), constant(_RANGE[1]), constant(_GROUND_Y),
            _LINE_WIDTH_PX,
        )
        raster.paint(rgb, ground, raster.BLACK)
        return raster.to_rgba_uint8(rgb)
