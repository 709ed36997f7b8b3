r"""The Flow dataset of CausalVAE (Yang et al., CVPR 2021), drawn procedurally.

A ball sits in a cup of water; water spouts from a hole in the cup's right wall.
The ball's size raises the water level, and the water level and the hole's
height set how far the jet reaches (Yang et al., CausalVAE, CVPR 2021, §5 /
App.). Geometry follows the authors' generator on a 96x96 RGBA canvas spanning
x, y in (0, 20), y up. For r in [5, 34], h_raw in [10, 39], hole in [6, 14]:

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

`counterfactual_images` draws the true image under do(label = value): a new ball
size recomputes the water as b^3 + h_raw / 10 with the image's own h_raw (its
exogenous noise), and every change of ball, water or hole redraws the jet from
the new water and hole with the image's own eps. do(water_flow = f) redraws only
the jet, as the jet of an effective water height f^2 / (1.96 (d - 0.5)).
"""

from __future__ import annotations

import numpy as np

from causal_disent.data import raster
from causal_disent.data.counterfactuals import (
    DrawnConceptDataset,
    descendants,
    require,
)

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
# `Flow.scene`'s concept arguments, one per label, in label order.
_SCENE_ARGS = ("ball", "water", "flow", "hole")
# The rule each label's intervention values must follow (all physical).
_PHYSICAL_RULES = (
    (lambda v: v > 0, "> 0 (a radius)"),
    (lambda v: v > 0, "> 0 (a height above the water's base)"),
    (lambda v: v >= 0, ">= 0 (a speed)"),
    (lambda v: v > _JET_END_Y, f"> {_JET_END_Y} (the jet ends at y = {_JET_END_Y})"),
)


def water_mechanism(ball: np.ndarray, h_raw: np.ndarray) -> np.ndarray:
    """Water height h = b^3 + h_raw / 10 of ball sizes b and raw water factors h_raw
    (the water's exogenous noise): [B] each -> [B] float64."""
    return np.asarray(ball, np.float64) ** 3 + np.asarray(h_raw, np.float64) / 10.0


def flow_mechanism(water: np.ndarray, hole_height: np.ndarray) -> np.ndarray:
    """The noiseless water flow sqrt(1.96 h (d - 0.5)) of water heights h and hole
    heights d: [B] each -> [B] float64."""
    return np.sqrt(2.0 * _GRAVITY * water * (hole_height - _JET_END_Y))


def jet_water_of_flow(flow: np.ndarray, hole_height: np.ndarray) -> np.ndarray:
    """The water height whose noiseless flow through a hole at d is `flow`:
    f^2 / (1.96 (d - 0.5)), the inverse of `flow_mechanism` in h. [B] -> [B]."""
    return np.asarray(flow, np.float64) ** 2 / (2.0 * _GRAVITY * (hole_height - _JET_END_Y))


def flow_concepts(r: np.ndarray, h_raw: np.ndarray, hole: np.ndarray) -> dict[str, np.ndarray]:
    """The physical quantities of [B] raw factor values: ball_size b, water_height h,
    hole d and the noiseless water_flow sqrt(1.96 h (d - 0.5)), each [B] float64."""
    ball = np.asarray(r, np.float64) / 30.0
    water = water_mechanism(ball, h_raw)
    hole_height = np.asarray(hole, np.float64) / 3.0
    flow = flow_mechanism(water, hole_height)
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
    evenly in x rather than y to follow the bend. Water 0 (no flow) gives a jet of
    zero length: every point at the hole.
    """
    k = 2.0 * (_GRAVITY + jitter) * water
    reach = np.sqrt(k * (hole_height - _JET_END_Y))
    dx = reach[:, None] * np.linspace(0.0, 1.0, _JET_SEGMENTS + 1)[None, :]
    # dx = 0 where k = 0, so any divisor serves there.
    return _CUP_RIGHT + dx, hole_height[:, None] - dx**2 / np.where(k > 0, k, 1.0)[:, None]


class Flow(DrawnConceptDataset):
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

    def scene(
        self,
        ball: np.ndarray,
        water: np.ndarray,
        hole: np.ndarray,
        jitter: np.ndarray,
        flow: np.ndarray | None = None,
    ) -> dict[str, np.ndarray]:
        """What `render_scene` draws for [B] concept values, in label units.

        ball, water, hole: b, h and d as drawn. jitter: each jet's eps (see
        `jet_jitter`). flow: where given, the jet is drawn as if the noiseless
        flow were `flow` (water height `jet_water_of_flow` in the jet formula
        only); otherwise from `water`. Returns [B] float64 ball, water, hole,
        jitter and jet_water.
        """
        ball, water, hole, jitter = (np.asarray(v, np.float64) for v in (ball, water, hole, jitter))
        jet_water = water if flow is None else jet_water_of_flow(flow, hole)
        parts = {"ball": ball, "water": water, "hole": hole, "jitter": jitter}
        return {**parts, "jet_water": jet_water}

    def _intervened_scene(
        self, index: np.ndarray, concept: int, values: np.ndarray
    ) -> dict[str, np.ndarray]:
        """`scene` of the images at `index` under do(label[concept] = values), inputs valid:
        the factual concepts, the intervened one replaced, its descendants recomputed.

        The water is recomputed with the image's own h_raw when the ball changes,
        the jet (with the image's own eps) when the ball, water or hole does;
        do(water_flow) redraws the jet alone. As eps is seeded by the flat index,
        do(ball = b2) on image (r1, h_raw, hole) is the grid image (r2, h_raw, hole)
        where the two share eps, and differs from it in the jet alone elsewhere
        (likewise water and hole).
        """
        factual = self.concepts(index)
        do = {arg: factual[name] for arg, name in zip(_SCENE_ARGS, LABEL_NAMES)}
        do[_SCENE_ARGS[concept]] = values
        changed = descendants(CAUSAL_GRAPH, concept)
        if changed[LABEL_NAMES.index("water_height")]:
            h_raw = WATER_INDICES[self.index_to_factors(index)[:, 1]]  # the image's own noise
            do["water"] = water_mechanism(do["ball"], h_raw)
        if changed[LABEL_NAMES.index("water_flow")]:
            do["flow"] = None  # the jet is drawn from the new water and hole
        return self.scene(**do, jitter=jet_jitter(index))

    @staticmethod
    def _check_physical(concept: int, values: np.ndarray) -> None:
        """ValueError for intervention values no flow scene can have: ball size > 0,
        water height > 0, water flow >= 0, hole height above the jet's end."""
        holds, rule = _PHYSICAL_RULES[concept]
        require(values, holds(values), LABEL_NAMES[concept], rule)

    def _render(self, index: np.ndarray) -> np.ndarray:
        concepts = self.concepts(index)
        parts = self.scene(
            concepts["ball_size"], concepts["water_height"], concepts["hole"], jet_jitter(index)
        )
        return self._draw(parts)

    def _draw(self, parts: dict[str, np.ndarray]) -> np.ndarray:
        """`scene` parts ([B] each) -> [B, 96, 96, 4] uint8 images, in one pass."""
        ball, water, hole = parts["ball"], parts["water"], parts["hole"]
        canvas, batch = self._canvas, len(ball)

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
        jet_x, jet_y = jet_points(parts["jet_water"], hole, parts["jitter"])
        raster.paint(rgb, canvas.polyline(jet_x, jet_y, _LINE_WIDTH_PX), raster.LIGHT_SKY_BLUE)
        ground = canvas.segment(
            constant(_RANGE[0]), constant(_GROUND_Y), constant(_RANGE[1]), constant(_GROUND_Y),
            _LINE_WIDTH_PX,
        )
        raster.paint(rgb, ground, raster.BLACK)
        return raster.to_rgba_uint8(rgb)
