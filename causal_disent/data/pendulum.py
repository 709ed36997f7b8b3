r"""The Pendulum dataset of CausalVAE (Yang et al., CVPR 2021), drawn procedurally.

A pendulum hangs from a pivot; a light above casts its shadow on the ground.
Two causes, the pendulum angle and the light angle, determine two effects, the
shadow's length and position (Yang et al., CausalVAE, CVPR 2021, §5 / App.).
Geometry follows the authors' generator, on a 96x96 RGBA canvas spanning
x in (0, 20), y in (-1, 21), y up:

  theta = i * pi / 200 for i in [-40, 43]; phi = j * pi / 200 for j in [60, 147], j != 100.
  rod:    black, 3 px, butt caps, from the pivot (10, 10.5) to
          (10 + 8 sin theta, 10.5 - 8 cos theta);
  bob:    firebrick circle of radius 1.5 at the rod's end;
  light:  orange circle of radius 3 at (proj(10, 10.5, 20.5), 20.5);
  shadow: the pivot and (10 + 9.5 sin theta, 10.5 - 9.5 cos theta) projected onto
          y = -0.5 along the light's direction; mid = their mean x,
          length = max(3, |difference|); black, 3 px, butt caps, from
          mid - length / 2 to mid + length / 2 at y = -0.5;
  where proj(x, y, base) = (base - (y - x tan phi)) / tan phi is where the line
  through (x, y) with slope tan phi meets y = base.

Labels are [i, j, int(length), int(mid)] (int truncates toward zero; both are
positive here). Over the 7308 images: i in -40..43, j in 60..147 without 100,
shadow length 3..12 and position 2..19.

`counterfactual_images` draws the true image under do(label = value): a new
angle or light index (any real, the light's in (0, 200)) moves the rod or the
light and recomputes the shadow from the geometry; a new shadow length or
position redraws only the shadow (untruncated, as the renderer always draws it).
"""

from __future__ import annotations

import numpy as np

from causal_disent.data import raster
from causal_disent.data.counterfactuals import (
    DrawnConceptDataset,
    descendants,
    require,
)

ANGLE_INDICES = np.arange(-40, 44)  # i, 84 values
LIGHT_INDICES = np.array([j for j in range(60, 148) if j != 100])  # j, 87 values
LABEL_NAMES = ("pendulum_angle", "light_angle", "shadow_length", "shadow_position")

# The authors' (mean, scale) per label, used by CausalVAE's label prior:
# normalised label = (label - mean) / scale.
LABEL_SCALE = np.array([[0.0, 44.0], [100.0, 40.0], [6.5, 3.5], [10.0, 5.0]])
LABEL_SCALE.setflags(write=False)

# graph[i, j] = 1: label i causes label j (both angles cause both shadow labels).
CAUSAL_GRAPH = np.array([[0, 0, 1, 1], [0, 0, 1, 1], [0, 0, 0, 0], [0, 0, 0, 0]], np.int64)
CAUSAL_GRAPH.setflags(write=False)

_IMAGE_SIZE = 96
_X_RANGE, _Y_RANGE = (0.0, 20.0), (-1.0, 21.0)
_PIVOT = (10.0, 10.5)
_ROD_LENGTH = 8.0
_SHADOW_TIP = 9.5  # distance from the pivot of the point whose shadow ends the shadow
_BOB_RADIUS = 1.5
_LIGHT_RADIUS, _LIGHT_HEIGHT = 3.0, 20.5
_GROUND = -0.5
_MIN_SHADOW_LENGTH = 3.0
_LINE_WIDTH_PX = 3.0
# `Pendulum.scene`'s arguments, one per label, in label order.
_SCENE_ARGS = ("angle", "light", "shadow_length", "shadow_mid")


def _project(x: np.ndarray, y: np.ndarray, tan_phi: np.ndarray, base: float) -> np.ndarray:
    """x where the line through (x, y) with slope tan_phi crosses y = base."""
    return (base - (y - x * tan_phi)) / tan_phi


def pendulum_geometry(
    sin_theta: np.ndarray, cos_theta: np.ndarray, tan_phi: np.ndarray
) -> dict[str, np.ndarray]:
    """Positions of every part for [B] pendulum and light angles (as sin, cos, tan).

    Returns [B] arrays: bob_x, bob_y, light_x, shadow_mid, shadow_length.
    """
    pivot_x, pivot_y = _PIVOT
    tip_x = pivot_x + _SHADOW_TIP * sin_theta
    tip_y = pivot_y - _SHADOW_TIP * cos_theta
    shadow_pivot = _project(pivot_x, pivot_y, tan_phi, _GROUND)
    shadow_tip = _project(tip_x, tip_y, tan_phi, _GROUND)
    return {
        "bob_x": pivot_x + _ROD_LENGTH * sin_theta,
        "bob_y": pivot_y - _ROD_LENGTH * cos_theta,
        "light_x": _project(pivot_x, pivot_y, tan_phi, _LIGHT_HEIGHT),
        "shadow_mid": 0.5 * (shadow_pivot + shadow_tip),
        "shadow_length": np.maximum(_MIN_SHADOW_LENGTH, np.abs(shadow_pivot - shadow_tip)),
    }


def _trig_on_grid(
    values: np.ndarray, grid: np.ndarray, table: np.ndarray, trig
) -> np.ndarray:
    """trig(values * pi / 200) for [B] angle indices, taken from `table` (trig of
    each `grid` index, computed once) wherever a value is on the grid: vectorised
    trig may differ in the last bit with the batch layout, so a grid angle always
    gets the same value, hence the same image, however it was asked for."""
    position = np.clip(np.searchsorted(grid, values), 0, len(grid) - 1)
    on_grid = grid[position] == values
    return np.where(on_grid, table[position], trig(values * np.pi / 200.0))


class Pendulum(DrawnConceptDataset):
    """CausalVAE's Pendulum: 84 pendulum angles x 87 light angles = 7308 images.

    Flat index = angle_position * 87 + light_position (the authors' loop order,
    pendulum angle outer). Factor values are the authors' integer indices i and
    j. Images are rendered on demand; everything is a pure function of the index.
    """

    name = "pendulum"
    image_shape = (_IMAGE_SIZE, _IMAGE_SIZE, 4)
    factor_names = ("pendulum_angle", "light_angle")
    factor_sizes = (len(ANGLE_INDICES), len(LIGHT_INDICES))
    factor_values = (ANGLE_INDICES.astype(np.float64), LIGHT_INDICES.astype(np.float64))
    label_names = LABEL_NAMES
    causal_graph = CAUSAL_GRAPH

    def __init__(self) -> None:
        super().__init__()
        # Trig of each factor value computed once and gathered, so an image's
        # geometry cannot depend on how a batch is vectorised.
        theta = ANGLE_INDICES * np.pi / 200.0
        self._sin_theta, self._cos_theta = np.sin(theta), np.cos(theta)
        self._tan_phi = np.tan(LIGHT_INDICES * np.pi / 200.0)
        self._canvas = raster.Canvas(_IMAGE_SIZE, _IMAGE_SIZE, _X_RANGE, _Y_RANGE)

    def scene(
        self,
        angle: np.ndarray,
        light: np.ndarray,
        shadow_length: np.ndarray | None = None,
        shadow_mid: np.ndarray | None = None,
    ) -> dict[str, np.ndarray]:
        """Every drawn position for [B] concept values, in label units.

        angle, light: angle indices i and j (any reals; theta = i pi / 200,
        phi = j pi / 200). shadow_length, shadow_mid: replace the shadow the
        geometry casts (continuous, untruncated) where given. Returns the
        `pendulum_geometry` parts, [B] float64 each.
        """
        angle, light = np.asarray(angle, np.float64), np.asarray(light, np.float64)
        parts = pendulum_geometry(
            _trig_on_grid(angle, ANGLE_INDICES, self._sin_theta, np.sin),
            _trig_on_grid(angle, ANGLE_INDICES, self._cos_theta, np.cos),
            _trig_on_grid(light, LIGHT_INDICES, self._tan_phi, np.tan),
        )
        if shadow_length is not None:
            parts["shadow_length"] = np.asarray(shadow_length, np.float64)
        if shadow_mid is not None:
            parts["shadow_mid"] = np.asarray(shadow_mid, np.float64)
        return parts

    def geometry(self, index: np.ndarray) -> dict[str, np.ndarray]:
        """[B] flat indices -> `pendulum_geometry` of each image."""
        factors = self.index_to_factors(index)
        return self.scene(ANGLE_INDICES[factors[:, 0]], LIGHT_INDICES[factors[:, 1]])

    def labels(self, index: np.ndarray) -> np.ndarray:
        """[B] flat indices -> [B, 4] float64 [i, j, int(shadow length), int(shadow mid)]."""
        factors = self.index_to_factors(index)
        parts = self.geometry(index)
        return np.stack(
            [
                ANGLE_INDICES[factors[:, 0]].astype(np.float64),
                LIGHT_INDICES[factors[:, 1]].astype(np.float64),
                np.trunc(parts["shadow_length"]),
                np.trunc(parts["shadow_mid"]),
            ],
            axis=1,
        )

    def predefined_split(self) -> dict[str, np.ndarray]:
        """The authors' train/test split: 5482 / 1826 images.

        Their generator kept a counter that sent the 5th image, then every 4th
        one, to test: flat indices k >= 4 with k % 4 == 0. ("Every 5th of the
        first half and every 4th of the rest" does not give these counts; the
        counter does.)
        """
        index = np.arange(self.num_images, dtype=np.int64)
        is_test = (index >= 4) & (index % 4 == 0)
        return {"train": index[~is_test], "test": index[is_test]}

    def _intervened_scene(
        self, index: np.ndarray, concept: int, values: np.ndarray
    ) -> dict[str, np.ndarray]:
        """`scene` of the images at `index` under do(label[concept] = values), inputs valid:
        the factual concepts (shadow untruncated), the intervened one replaced, its
        descendants recomputed from the geometry: angle or light moved and the shadow
        recomputed, or the shadow alone redrawn, its other attribute kept. Values are
        angle indices i or j, or a shadow length or position, drawn untruncated."""
        factors, factual = self.index_to_factors(index), self.geometry(index)
        do = {
            "angle": ANGLE_INDICES[factors[:, 0]],
            "light": LIGHT_INDICES[factors[:, 1]],
            "shadow_length": factual["shadow_length"],
            "shadow_mid": factual["shadow_mid"],
        }
        do[_SCENE_ARGS[concept]] = values
        for label in np.flatnonzero(descendants(CAUSAL_GRAPH, concept)):
            do[_SCENE_ARGS[label]] = None  # `scene` recomputes it
        return self.scene(**do)

    @staticmethod
    def _check_physical(concept: int, values: np.ndarray) -> None:
        """ValueError for intervention values no pendulum scene can have."""
        if concept == 1:
            rule = "in (0, 200) (phi = j pi / 200 in (0, pi): a light above the ground)"
            require(values, (values > 0) & (values < 200), "light_angle", rule)
        if concept == 2:
            require(values, values >= 0, "shadow_length", ">= 0 (a length)")

    def _render(self, index: np.ndarray) -> np.ndarray:
        return self._draw(self.geometry(index))

    def _draw(self, parts: dict[str, np.ndarray]) -> np.ndarray:
        """`scene` parts ([B] each) -> [B, 96, 96, 4] uint8 images, in one pass."""
        canvas, batch = self._canvas, len(parts["bob_x"])
        pivot_x = np.full(batch, _PIVOT[0])
        pivot_y = np.full(batch, _PIVOT[1])
        ground = np.full(batch, _GROUND)
        half = 0.5 * parts["shadow_length"]
        rgb = canvas.blank(batch)
        # The authors' drawing order: rod, bob, shadow, light.
        raster.paint(
            rgb,
            canvas.segment(pivot_x, pivot_y, parts["bob_x"], parts["bob_y"], _LINE_WIDTH_PX),
            raster.BLACK,
        )
        raster.paint(
            rgb, canvas.circle(parts["bob_x"], parts["bob_y"], _BOB_RADIUS), raster.FIREBRICK
        )
        shadow = canvas.segment(
            parts["shadow_mid"] - half, ground, parts["shadow_mid"] + half, ground, _LINE_WIDTH_PX
        )
        raster.paint(rgb, shadow, raster.BLACK)
        light = canvas.circle(parts["light_x"], np.full(batch, _LIGHT_HEIGHT), _LIGHT_RADIUS)
        raster.paint(rgb, light, raster.ORANGE)
        return raster.to_rgba_uint8(rgb)
