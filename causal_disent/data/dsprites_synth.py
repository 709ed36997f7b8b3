r"""Procedural dSprites: one white 2D shape on a black 64x64 canvas, rendered on demand.

dSprites (Matthey et al., 2017) is the full grid of 737 280 binary 64x64 images
over five factors (its sixth, colour, has one value and is dropped, as in TFDS).
This module reproduces that grid with the same factor sizes, stored values and
flat-index order (row-major over (3, 6, 40, 32, 32), y position fastest), so code
written for the real data runs on it unchanged. Pixels are 0 or 255, as every
image in this library is uint8 over the full range (TFDS's "dsprites" stores 0 or
1; the TFDS-backed `DSprites` scales them the same way), so real and synthetic
images are interchangeable.

Geometry (pixel units, pixel (row, col) has its centre at (col + 0.5, row + 0.5)):
  * every shape is defined inside the unit disc about its area centroid and drawn
    at radius `SPRITE_RADIUS * scale`, rotated about that centroid, so the centroid
    is the position and rotation does not move it;
  * x_position moves the centroid right and y_position moves it down (image rows
    grow downward, y = 0 at the top, as in dSprites): position p in [0, 1] puts the
    centroid at MARGIN + p * (64 - 2 * MARGIN); MARGIN exceeds SPRITE_RADIUS, so
    every sprite stays inside the canvas with an empty outer border;
  * orientation rotates the shape counter-clockwise as seen in the image;
  * a pixel is on when its centre lies in the shape (no anti-aliasing, like
    dSprites).

Shapes at orientation 0: an axis-aligned square (half-diagonal 1); an ellipse
with a 2:1 aspect ratio, major axis horizontal (semi-axes 1 and 0.5); an upright
heart (lobes up, tip down), the region (x^2 + y^2 - 1)^3 - x^2 y^3 <= 0 shifted to
its area centroid and shrunk so that its tip, the farthest point, lies on the
unit circle.

Duplicate images are inherent, exactly as in real dSprites: the 40 orientations
are linspace(0, 2*pi, 40), so orientations 0 and 39 are the same angle, and the
square (4-fold symmetric) and the ellipse (2-fold) repeat at other angles too.
"""

from __future__ import annotations

import numpy as np

from causal_disent.data.base import FactorDataset

FACTOR_NAMES = ("shape", "scale", "orientation", "x_position", "y_position")
FACTOR_SIZES = (3, 6, 40, 32, 32)
SHAPE_NAMES = ("square", "ellipse", "heart")

IMAGE_SIZE = 64
# Radius (pixels) of the disc holding a scale-1 sprite. The margin keeps that
# disc at least 2 px from every edge at the extreme positions.
SPRITE_RADIUS = 10.0
MARGIN = 12.0

_ELLIPSE_MINOR = 0.5  # semi-minor axis; the semi-major axis is 1
# Heart (x^2 + y^2 - 1)^3 <= x^2 y^3 in its own units: its area centroid is at
# (0, _HEART_CENTROID_Y) and its tip (0, -1) is the farthest point from it, at
# distance 1 + _HEART_CENTROID_Y (both computed numerically; checked by a test).
_HEART_CENTROID_Y = 0.2934812246
_HEART_RADIUS = 1.0 + _HEART_CENTROID_Y

_RENDER_CHUNK = 256  # images per vectorised pass; bounds temporary memory


def _inside_square(u: np.ndarray, v: np.ndarray) -> np.ndarray:
    half_side = 1.0 / np.sqrt(2.0)
    return (np.abs(u) <= half_side) & (np.abs(v) <= half_side)


def _inside_ellipse(u: np.ndarray, v: np.ndarray) -> np.ndarray:
    return u * u + (v / _ELLIPSE_MINOR) ** 2 <= 1.0


def _inside_heart(u: np.ndarray, v: np.ndarray) -> np.ndarray:
    x = u * _HEART_RADIUS
    y = v * _HEART_RADIUS + _HEART_CENTROID_Y
    return (x * x + y * y - 1.0) ** 3 <= x * x * y**3


_INSIDE = (_inside_square, _inside_ellipse, _inside_heart)


class DSpritesSynth(FactorDataset):
    """Procedural stand-in for dSprites with the official factors and ordering.

    Factors (values as dSprites stores them): shape {1, 2, 3} = square, ellipse,
    heart; scale linspace(0.5, 1, 6); orientation linspace(0, 2*pi, 40) radians,
    both ends included; x_position and y_position linspace(0, 1, 32).
    Images are [64, 64, 1] uint8 in {0, 255}, rendered on demand from the factors:
    nothing is stored and there is no random state.
    """

    name = "dsprites_synth"
    image_shape = (IMAGE_SIZE, IMAGE_SIZE, 1)
    factor_names = FACTOR_NAMES
    factor_sizes = FACTOR_SIZES

    def __init__(self) -> None:
        self.factor_values = (
            np.array([1.0, 2.0, 3.0]),
            np.linspace(0.5, 1.0, 6),
            np.linspace(0.0, 2.0 * np.pi, 40),
            np.linspace(0.0, 1.0, 32),
            np.linspace(0.0, 1.0, 32),
        )
        super().__init__()
        # Pixel-centre coordinates, shared by every render.
        self._pixel_centres = np.arange(IMAGE_SIZE, dtype=np.float64) + 0.5

    def _images_at(self, index: np.ndarray) -> np.ndarray:
        factors = (index[:, None] // self._strides) % np.array(self.factor_sizes, np.int64)
        images = np.empty((len(index), IMAGE_SIZE, IMAGE_SIZE), np.uint8)
        for start in range(0, len(index), _RENDER_CHUNK):
            chunk = slice(start, start + _RENDER_CHUNK)
            images[chunk] = self._draw(factors[chunk])
        return images[..., None]

    def _draw(self, factors: np.ndarray) -> np.ndarray:
        """[B, 5] factor indices -> [B, 64, 64] uint8 in {0, 255}.

        Only the window of pixels whose centres can lie in the sprite's disc is
        tested (`_WINDOW` px square about the centroid; the rest of the canvas is
        always off), which is ~9x less work than testing the whole canvas.
        """
        shape, scale, angle, x_pos, y_pos = (
            np.asarray(values)[factors[:, f]] for f, values in enumerate(self.factor_values)
        )
        # 2*pi -> 0 exactly, so orientations 0 and 39 give identical images.
        angle = np.mod(angle, 2.0 * np.pi)
        travel = IMAGE_SIZE - 2.0 * MARGIN
        centre_x, centre_y = MARGIN + travel * x_pos, MARGIN + travel * y_pos
        # First pixel whose centre can be within SPRITE_RADIUS of the centroid.
        first_col = _window_start(centre_x)
        first_row = _window_start(centre_y)
        cols = first_col[:, None] + np.arange(_WINDOW)  # [B, W]
        rows = first_row[:, None] + np.arange(_WINDOW)
        radius = (SPRITE_RADIUS * scale)[:, None, None]
        # Offsets from the centroid in sprite units, v pointing up (rows grow down).
        u = (cols[:, None, :] + 0.5 - centre_x[:, None, None]) / radius
        v = (centre_y[:, None, None] - (rows[:, :, None] + 0.5)) / radius
        # Undo a counter-clockwise rotation to test against the upright shape.
        cos, sin = np.cos(angle)[:, None, None], np.sin(angle)[:, None, None]
        u, v = cos * u + sin * v, cos * v - sin * u
        on = np.zeros(u.shape, bool)
        for code, inside in enumerate(_INSIDE):
            selected = shape == code + 1
            if selected.any():
                on[selected] = inside(u[selected], v[selected])
        images = np.zeros((len(factors), IMAGE_SIZE, IMAGE_SIZE), np.uint8)
        batch = np.arange(len(factors))[:, None, None]
        images[batch, rows[:, :, None], cols[:, None, :]] = on.astype(np.uint8) * np.uint8(255)
        return images


# Side of the square window that holds every pixel centre within SPRITE_RADIUS of a
# centroid: 2 * SPRITE_RADIUS + 1 centres fit in any interval of that length.
_WINDOW = int(2 * SPRITE_RADIUS) + 2


def _window_start(centre: np.ndarray) -> np.ndarray:
    """First pixel index of the window about `centre` (pixel coordinates), kept on
    the canvas (MARGIN > SPRITE_RADIUS + 1 keeps the window inside anyway)."""
    start = np.ceil(centre - SPRITE_RADIUS - 0.5).astype(np.int64)
    return np.clip(start, 0, IMAGE_SIZE - _WINDOW)
