"""A small deterministic rasteriser for the procedural concept datasets.

Pendulum and Flow were made by their authors with matplotlib; drawing them here
instead keeps the images a pure function of the image index (no fonts, backends
or library versions involved) and renders thousands per second.

A `Canvas` maps data coordinates (y up) onto an H x W pixel grid. Each primitive
gives a per-pixel *coverage* in [0, 1], measured by fixed supersampling: S x S
samples at the centres of an even sub-grid of each pixel, so anti-aliasing is
exact counting and identical on every machine. `paint` alpha-composites a solid
colour through a coverage onto the batch, which starts as opaque white.

Every primitive takes one parameter per image ([B] arrays) and is vectorised
over the batch. Work is limited to the rows and columns that the primitive can
touch in some image of the batch; sample positions are absolute, so a pixel's
value never depends on which other images share the batch.

Conventions, as in matplotlib: circles and rectangles live in data coordinates
(a circle becomes an ellipse when the x and y scales differ); line widths are in
pixels. Segments have butt caps (the ink ends exactly at the end points) or round
caps; polylines have round joins and round caps.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

# Matplotlib's named colours, as RGB in [0, 1].
BLACK = (0.0, 0.0, 0.0)
WHITE = (1.0, 1.0, 1.0)
FIREBRICK = (178 / 255, 34 / 255, 34 / 255)
ORANGE = (255 / 255, 165 / 255, 0.0)
LIGHT_SKY_BLUE = (135 / 255, 206 / 255, 250 / 255)

CAPS = ("butt", "round")


class Coverage(NamedTuple):
    """Fraction of each pixel's samples inside a primitive, over the window of
    pixels it can touch in some image of the batch (zero elsewhere).

    values: [B, h, w] float32 in [0, 1]; rows, cols: the window's place on the canvas.
    """

    values: np.ndarray
    rows: slice
    cols: slice


class Canvas:
    """Data coordinates -> an H x W pixel grid, with supersampled primitives.

    Pixel (row, col) covers pixel-space [col, col + 1] x [row, row + 1], where
    u = (x - x_low) / (x_high - x_low) * W and v = (y_high - y) / (y_high - y_low) * H.
    """

    def __init__(
        self,
        height: int,
        width: int,
        x_range: tuple[float, float],
        y_range: tuple[float, float],
        supersample: int = 4,
    ) -> None:
        if height < 1 or width < 1 or not 1 <= supersample <= 15:
            raise ValueError(
                "height and width must be positive and supersample in [1, 15] (counts "
                f"are kept in uint8), got {height}, {width}, {supersample}"
            )
        if not (x_range[1] > x_range[0] and y_range[1] > y_range[0]):
            raise ValueError(f"ranges must be increasing, got x {x_range}, y {y_range}")
        self.height, self.width, self.supersample = int(height), int(width), int(supersample)
        self.x_range = (float(x_range[0]), float(x_range[1]))
        self.y_range = (float(y_range[0]), float(y_range[1]))
        # Pixels per data unit along each axis.
        self.x_scale = self.width / (x_range[1] - x_range[0])
        self.y_scale = self.height / (y_range[1] - y_range[0])
        # Offsets of the samples inside a pixel, in pixel units.
        self._offsets = (np.arange(self.supersample) + 0.5) / self.supersample

    # -- coordinates -------------------------------------------------------- #
    def to_pixels(self, x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Data (x, y) -> pixel-space (u, v): u to the right, v downwards."""
        u = (np.asarray(x, np.float64) - self.x_range[0]) * self.x_scale
        v = (self.y_range[1] - np.asarray(y, np.float64)) * self.y_scale
        return u, v

    def blank(self, batch: int) -> np.ndarray:
        """An opaque white batch to paint on: [B, H, W, 3] float32 RGB in [0, 1]."""
        return np.ones((batch, self.height, self.width, 3), np.float32)

    def _window(self, low: np.ndarray, high: np.ndarray, size: int) -> tuple[int, int]:
        """Pixel range [start, stop) holding [low, high] of every image (clipped)."""
        start = int(np.clip(np.floor(np.min(low)), 0, size)) if low.size else 0
        stop = int(np.clip(np.ceil(np.max(high)), 0, size)) if high.size else 0
        return start, max(start, stop)

    def _samples(self, start: int, stop: int) -> np.ndarray:
        """Sample positions of pixels [start, stop) along one axis: [(stop-start)*S]."""
        return (np.arange(start, stop)[:, None] + self._offsets[None, :]).reshape(-1)

    def _coverage(
        self, inside: np.ndarray, rows: tuple[int, int], cols: tuple[int, int]
    ) -> Coverage:
        """Boolean samples [B, rows*S, cols*S] of a window -> its Coverage."""
        batch, s = inside.shape[0], self.supersample
        h, w = rows[1] - rows[0], cols[1] - cols[0]
        samples = inside.view(np.uint8).reshape(batch, h, s, w, s)
        # Adding strided slices is several times faster than .sum(axis=(2, 4)).
        per_row = sum(samples[:, :, k] for k in range(s))  # [B, h, w, s]
        counts = sum(per_row[..., k] for k in range(s))  # [B, h, w], at most s * s
        return Coverage(counts.astype(np.float32) / np.float32(s * s), slice(*rows), slice(*cols))

    def dense(self, coverage: Coverage) -> np.ndarray:
        """A Coverage spread over the whole canvas: [B, H, W] float32."""
        full = np.zeros((len(coverage.values), self.height, self.width), np.float32)
        full[:, coverage.rows, coverage.cols] = coverage.values
        return full

    # -- primitives --------------------------------------------------------- #
    def circle(self, centre_x: np.ndarray, centre_y: np.ndarray, radius: np.ndarray) -> Coverage:
        """Filled circles, one per image, in data units: [B] each -> Coverage."""
        cu, cv = self.to_pixels(centre_x, centre_y)
        cu, cv = np.atleast_1d(cu), np.atleast_1d(cv)
        radius = np.broadcast_to(np.asarray(radius, np.float64), cu.shape)
        ru, rv = radius * self.x_scale, radius * self.y_scale
        rows = self._window(cv - rv, cv + rv, self.height)
        cols = self._window(cu - ru, cu + ru, self.width)
        with np.errstate(divide="ignore", invalid="ignore"):
            # Zero radius gives inf/nan here, hence no sample inside: nothing drawn.
            du2 = ((self._samples(*cols)[None, :] - cu[:, None]) / ru[:, None]) ** 2
            dv2 = ((self._samples(*rows)[None, :] - cv[:, None]) / rv[:, None]) ** 2
        du2, dv2 = du2.astype(np.float32), dv2.astype(np.float32)
        inside = (du2[:, None, :] + dv2[:, :, None]) <= 1.0
        return self._coverage(inside, rows, cols)

    def rectangle(
        self, x: np.ndarray, y: np.ndarray, width: np.ndarray, height: np.ndarray
    ) -> Coverage:
        """Filled axis-aligned rectangles from lower-left (x, y), sizes in data units.

        [B] each -> Coverage. Separable, so counted per axis.
        """
        u0, v1 = self.to_pixels(x, y)  # lower-left: largest v
        u1, v0 = self.to_pixels(np.asarray(x) + width, np.asarray(y) + height)
        u0, u1, v0, v1 = (np.atleast_1d(a) for a in (u0, u1, v0, v1))
        rows = self._window(v0, v1, self.height)
        cols = self._window(u0, u1, self.width)
        su, sv = self._samples(*cols), self._samples(*rows)
        in_u = (su[None, :] >= u0[:, None]) & (su[None, :] <= u1[:, None])
        in_v = (sv[None, :] >= v0[:, None]) & (sv[None, :] <= v1[:, None])
        return self._coverage(in_v[:, :, None] & in_u[:, None, :], rows, cols)

    def segment(
        self,
        x0: np.ndarray,
        y0: np.ndarray,
        x1: np.ndarray,
        y1: np.ndarray,
        width_px: float,
        caps: str = "butt",
    ) -> Coverage:
        """Thick line segments (data end points, width in pixels): [B] each -> Coverage.

        caps="butt" ends the ink at the end points (a zero-length segment draws
        nothing); caps="round" adds half-discs (a zero-length one draws a disc).
        """
        if caps not in CAPS:
            raise ValueError(f"caps must be one of {CAPS}, got {caps!r}")
        xs = np.stack(np.broadcast_arrays(np.asarray(x0, float), np.asarray(x1, float)), -1)
        ys = np.stack(np.broadcast_arrays(np.asarray(y0, float), np.asarray(y1, float)), -1)
        return self._thick_path(np.atleast_2d(xs), np.atleast_2d(ys), width_px, caps)

    def polyline(self, xs: np.ndarray, ys: np.ndarray, width_px: float) -> Coverage:
        """Thick open polylines with round joins and caps: [B, N] points -> Coverage.

        The union of the segments is covered once, so joins are not painted twice.
        """
        xs, ys = np.asarray(xs, np.float64), np.asarray(ys, np.float64)
        if xs.ndim != 2 or xs.shape != ys.shape or xs.shape[1] < 2:
            raise ValueError(f"xs and ys must both be [B, N >= 2], got {xs.shape}, {ys.shape}")
        return self._thick_path(xs, ys, width_px, "round")

    def _thick_path(self, xs: np.ndarray, ys: np.ndarray, width_px: float, caps: str) -> Coverage:
        if not width_px > 0:
            raise ValueError(f"width_px must be positive, got {width_px}")
        half = 0.5 * float(width_px)
        u, v = self.to_pixels(xs, ys)  # [B, N]
        rows = self._window(v.min(axis=1) - half, v.max(axis=1) + half, self.height)
        cols = self._window(u.min(axis=1) - half, u.max(axis=1) + half, self.width)
        s = self.supersample
        inside = np.zeros((len(u), (rows[1] - rows[0]) * s, (cols[1] - cols[0]) * s), bool)
        for k in range(u.shape[1] - 1):
            # Only the pixels this segment can reach in some image of the batch.
            seg_u, seg_v = u[:, k : k + 2], v[:, k : k + 2]
            seg_rows = self._window(seg_v.min(axis=1) - half, seg_v.max(axis=1) + half, self.height)
            seg_cols = self._window(seg_u.min(axis=1) - half, seg_u.max(axis=1) + half, self.width)
            su, sv = self._samples(*seg_cols), self._samples(*seg_rows)
            du, dv = u[:, k + 1] - u[:, k], v[:, k + 1] - v[:, k]
            length = np.hypot(du, dv)
            # Unit direction; any direction serves a zero-length segment.
            safe = np.where(length > 0, length, 1.0)
            eu = np.where(length > 0, du / safe, 1.0)[:, None]
            ev = np.where(length > 0, dv / safe, 0.0)[:, None]
            pu = (su[None, :] - u[:, k, None]).astype(np.float32)  # [B, Ws]
            pv = (sv[None, :] - v[:, k, None]).astype(np.float32)  # [B, Hs]
            eu, ev = eu.astype(np.float32), ev.astype(np.float32)
            # Position along and across the segment, each the sum of a per-column
            # and a per-row term; float32 for speed (errors far below 1e-3 px).
            along = (pu * eu)[:, None, :] + (pv * ev)[:, :, None]  # [B, Hs, Ws]
            across = (pv * eu)[:, :, None] - (pu * ev)[:, None, :]
            length = length.astype(np.float32)[:, None, None]
            if caps == "butt":
                hit = (np.abs(along - 0.5 * length) <= 0.5 * length) & (np.abs(across) <= half)
                hit &= length > 0
            else:
                beyond = along - np.clip(along, 0.0, length)
                hit = beyond * beyond + across * across <= half * half
            window = inside[
                :,
                (seg_rows[0] - rows[0]) * s : (seg_rows[1] - rows[0]) * s,
                (seg_cols[0] - cols[0]) * s : (seg_cols[1] - cols[0]) * s,
            ]
            window |= hit
        return self._coverage(inside, rows, cols)


def paint(
    rgb: np.ndarray, coverage: Coverage, colour: tuple[float, float, float], alpha: float = 1.0
) -> np.ndarray:
    """Composites a solid colour over `rgb` in place ("over" onto an opaque batch):
    rgb <- rgb + coverage * alpha * (colour - rgb), touching only the window.

    Args:
      rgb: [B, H, W, 3] float32 in [0, 1], opaque.
      coverage: from a Canvas primitive on the same batch.
      colour: RGB in [0, 1]; alpha: its opacity.
    Returns:
      rgb, for chaining.
    """
    window = rgb[:, coverage.rows, coverage.cols]  # a view
    weight = (coverage.values * np.float32(alpha))[..., None]
    window += weight * (np.asarray(colour, np.float32) - window)
    return rgb


def to_rgba_uint8(rgb: np.ndarray) -> np.ndarray:
    """Opaque [B, H, W, 3] float RGB in [0, 1] -> [B, H, W, 4] uint8 RGBA (alpha 255)."""
    out = np.empty(rgb.shape[:-1] + (4,), np.uint8)
    out[..., :3] = np.rint(np.clip(rgb, 0.0, 1.0) * 255.0)
    out[..., 3] = 255
    return out
