"""Figures saved as PNG, with no dataset or model knowledge here:

- `image_grid` / `save_png`: a bare tiled uint8 array (pixels only);
- `draw_image_grid` / `save_image_grid`: the same tiles in a matplotlib figure with
  a title, row labels, column labels and optional per-cell captions, every image
  pixel-exact (nearest upscaling, no resampling, no ticks);
- `HeatMap` / `draw_heat_maps`: panels of heat maps on one colour scale, with axis
  labels, panel titles, a figure title and a colour bar;
- `save_figure`: writes any matplotlib figure; `save_drawn` the figure a drawing
  function makes, built by a figure worker process where there is one.

Figures are `matplotlib.figure.Figure` objects, never pyplot's: pyplot keeps every
figure it opens until closed, whereas these are freed with their last reference, so
drawing many figures neither needs a display nor grows memory.
"""

import dataclasses
from collections.abc import Callable, Sequence
from pathlib import Path

import matplotlib
import numpy as np
from matplotlib.artist import Artist
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.cm import ScalarMappable
from matplotlib.colors import Normalize
from matplotlib.figure import Figure
from matplotlib.text import Text
from matplotlib.transforms import IdentityTransform
from PIL import Image

from causal_disent.utils import file_errors

# Every figure is drawn and saved at this resolution, so that one image pixel of an
# image grid covers exactly `upscale` × `upscale` pixels of the PNG.
DPI = 100

# Pixels around a grid's content and between a label and what it names.
_MARGIN = 8
_LABEL_GAP = 4
_CAPTION_GAP = 3  # clears the image's frame

_TITLE_FONT = 10
_LABEL_FONT = 9
_CAPTION_FONT = 7

# The one-pixel frame around every image of a grid.
_FRAME_GREY = 190

# Of a heat-map panel's size, about this much goes to its title, labels and ticks.
_PANEL_LABEL_INCHES = 0.6

# A colour bar spans its panels up to this height.
_COLORBAR_INCHES = 4.0

# An image grid's cells are upscaled to about this many pixels on their long side.
_TARGET_CELL_PIXELS = 128
# The images of one grid, in pixels at most (four bytes each in the PNG's canvas).
MAX_GRID_PIXELS = 200_000_000


def image_grid(
    images: np.ndarray,
    present: np.ndarray | None = None,
    pad: int = 2,
    pad_value: int = 255,
) -> np.ndarray:
    """Tiles uint8 images [rows, cols, H, W, ch] into one [R·(H+pad)+pad, ...] image.

    `present` ([rows, cols] bool, optional) leaves the False cells blank, for
    ragged rows.
    """
    images = np.asarray(images)
    if images.ndim != 5:
        raise ValueError(f"expected [rows, cols, H, W, ch] images, got {images.shape}")
    rows, cols, height, width, channels = images.shape
    grid = np.full(
        (rows * (height + pad) + pad, cols * (width + pad) + pad, channels),
        pad_value,
        dtype=np.uint8,
    )
    for r in range(rows):
        for c in range(cols):
            if present is None or present[r, c]:
                top, left = pad + r * (height + pad), pad + c * (width + pad)
                grid[top : top + height, left : left + width] = images[r, c]
    return grid


def to_uint8(images: np.ndarray) -> np.ndarray:
    """Float images in [0, 1] -> uint8, clipped."""
    return np.round(np.clip(np.asarray(images, np.float32), 0.0, 1.0) * 255).astype(
        np.uint8
    )


def save_png(image: np.ndarray, path: str | Path, upscale: int = 1) -> Path:
    """Writes a uint8 [H, W, ch] image (ch 1, 3 or 4), nearest-upscaled, creating dirs."""
    image = np.asarray(image)
    if image.dtype != np.uint8:
        raise ValueError(f"save_png expects uint8, got {image.dtype}")
    if upscale > 1:
        image = image.repeat(upscale, axis=0).repeat(upscale, axis=1)
    if image.ndim == 3 and image.shape[-1] == 1:
        image = image[..., 0]
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(image).save(path)
    return path


def save_figure(figure: Figure, path: str | Path) -> Path:
    """Writes `figure` as a PNG at `DPI`, creating the folder; returns the path.
    Inside `utils/figure_workers.saved_in_parallel`, another process draws and
    writes it, and the file is there when that block ends."""
    return _save(figure, path)


@dataclasses.dataclass(frozen=True)
class Drawing:
    """A figure not yet built: `draw(*args, **kwargs)`, a Figure or a tuple whose
    first item is one. It pickles as the function's qualified name and the
    arguments' values, so a figure worker process builds the figure itself."""

    draw: Callable
    args: tuple = ()
    kwargs: dict = dataclasses.field(default_factory=dict)

    def figure(self) -> Figure:
        made = self.draw(*self.args, **self.kwargs)
        return made[0] if isinstance(made, tuple) else made


def save_drawn(path: str | Path, draw: Callable, *args, **kwargs) -> Path:
    """`save_figure(draw(*args, **kwargs), path)`, except that inside
    `saved_in_parallel` the worker process also builds the figure: laying out a
    figure's texts and images costs as much host time as drawing it. `draw` must be a
    module-level function of a module that imports no JAX (a worker imports it), its
    arguments plain values such as arrays, strings and dicts."""
    return _save(Drawing(draw, args, kwargs), path)


def as_figure(job: "Figure | Drawing") -> Figure:
    """The figure of a saved job: itself, or what its Drawing builds."""
    return job.figure() if isinstance(job, Drawing) else job


def _save(job: "Figure | Drawing", path: str | Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    if _parallel_saver is not None:
        _parallel_saver(job, path)
    else:
        write_png(as_figure(job), path)
    return path


# Set by figure_workers.saved_in_parallel: fn(job, path) that hands a Figure or a
# Drawing to a worker process.
_parallel_saver = None


def write_png(figure: Figure, path: Path) -> None:
    """Draws `figure` once on an Agg canvas at `DPI` and writes it to `path` with PIL:
    `Figure.savefig` draws a figure with a layout engine twice (once to lay it out,
    once to print it), a tenth to a fifth of the time of a consistency heat-map
    figure, for the same pixels."""
    figure.set_dpi(DPI)
    canvas = FigureCanvasAgg(figure)
    canvas.draw()
    with file_errors.naming(path):  # PIL's error on a full disk names no file
        Image.fromarray(np.asarray(canvas.buffer_rgba())).save(path, format="png")


# --------------------------------------------------------------------------- #
# Labelled image grids
# --------------------------------------------------------------------------- #
@dataclasses.dataclass(frozen=True)
class GridLayout:
    """Where the cells of a `draw_image_grid` figure lie in its saved PNG, in pixels
    from the PNG's top-left corner."""

    width: int  # of the whole PNG
    height: int
    top: int  # of cell (0, 0)
    left: int
    cell_height: int  # an upscaled image
    cell_width: int
    row_pitch: int  # from one row's top to the next (image, caption, gap)
    column_pitch: int

    def cell_origin(self, row: int, column: int) -> tuple[int, int]:
        """(y, x) of the top-left pixel of cell (row, column)."""
        return self.top + row * self.row_pitch, self.left + column * self.column_pitch


def default_upscale(image_shape: Sequence[int]) -> int:
    """Nearest-neighbour magnification that shows [H, W, ...] images at about
    `_TARGET_CELL_PIXELS` on their long side (64 -> 2, 96 -> 1), never below 1."""
    return max(1, _TARGET_CELL_PIXELS // max(image_shape[0], image_shape[1]))


def draw_image_grid(
    images: np.ndarray,
    *,
    title: str,
    row_labels: Sequence[str],
    column_labels: Sequence[str] | None = None,
    cell_labels: Sequence[Sequence[str]] | None = None,
    present: np.ndarray | None = None,
    upscale: int | None = None,
    pad: int = 4,
) -> tuple[Figure, GridLayout]:
    """A figure of uint8 images [rows, cols, H, W, ch] in a labelled grid.

    Args:
      images: uint8 [rows, cols, H, W, ch], ch 1 (grey), 3 (RGB) or 4 (RGBA: drawn
        as its RGB, on the white background).
      title: the figure title ("\\n" separates lines).
      row_labels: one string per row, written left of it.
      column_labels: one string per column, written above it (None: none).
      cell_labels: [rows][cols] captions written under each image ("" for none).
      present: [rows, cols] bool; False cells stay blank (ragged rows).
      upscale: integer nearest magnification (default: `default_upscale`).
      pad: pixels between neighbouring images.
    Returns:
      the figure (save it with `save_figure`) and the cells' `GridLayout` in the
      saved PNG.
    Raises:
      ValueError: images not uint8 [rows, cols, H, W, ch], or labels or `present`
        that do not match the grid.
    """
    images = _display_rgb(images)
    rows, cols, height, width, _ = images.shape
    _check_grid_labels(rows, cols, row_labels, column_labels, cell_labels)
    if present is not None and np.shape(present) != (rows, cols):
        raise ValueError(f"present must be [{rows}, {cols}] like the grid, got "
                         f"shape {np.shape(present)}")
    upscale = default_upscale(images.shape[2:]) if upscale is None else int(upscale)
    if upscale < 1:
        raise ValueError(f"upscale must be >= 1, got {upscale}")
    if rows * cols * height * width * upscale ** 2 > MAX_GRID_PIXELS:
        raise ValueError(
            f"a grid of {rows} x {cols} images of {height} x {width} pixels at upscale "
            f"{upscale} would be over {MAX_GRID_PIXELS // 10**6} megapixels; lower upscale")

    figure = Figure(dpi=DPI)
    renderer = FigureCanvasAgg(figure).get_renderer()
    texts = _GridTexts(
        title=_pixel_text(figure, title, _TITLE_FONT, ha="center", va="top"),
        rows=[_pixel_text(figure, label, _LABEL_FONT, ha="right", va="center")
              for label in row_labels],
        columns=[_pixel_text(figure, label, _LABEL_FONT, ha="center", va="bottom")
                 for label in (column_labels or [])],
        cells=[[_pixel_text(figure, caption, _CAPTION_FONT, ha="center", va="top")
                for caption in captions] for captions in (cell_labels or [])],
    )
    layout = _grid_layout(texts, renderer, rows, cols, height * upscale, width * upscale, pad)
    figure.set_size_inches(_inches(layout.width), _inches(layout.height))
    texts.place(layout)
    present = np.ones((rows, cols), bool) if present is None else np.asarray(present, bool)
    figure.add_artist(_PixelLayer(_grid_canvas(layout, images, present, upscale)))
    if cell_labels is not None:
        for row, column in zip(*np.nonzero(~present)):
            texts.cells[row][column].set_visible(False)  # a blank cell has no caption
    return figure, layout


def save_image_grid(images: np.ndarray, path: str | Path, **labels) -> Path:
    """`draw_image_grid(images, **labels)` written to `path` (a PNG; `save_drawn`)."""
    return save_drawn(path, draw_image_grid, images, **labels)


@dataclasses.dataclass
class _GridTexts:
    """The text artists of an image grid, placed once the layout is known."""

    title: Text
    rows: list
    columns: list
    cells: list

    def place(self, layout: GridLayout) -> None:
        def at(text, y, x):  # (y, x) from the top-left -> display pixels
            text.set_position((x, layout.height - y))

        at(self.title, _MARGIN, layout.width / 2)
        half_height, half_width = layout.cell_height / 2, layout.cell_width / 2
        for row, text in enumerate(self.rows):
            y, x = layout.cell_origin(row, 0)
            at(text, y + half_height, x - _LABEL_GAP)
        for column, text in enumerate(self.columns):
            y, x = layout.cell_origin(0, column)
            at(text, y - _LABEL_GAP, x + half_width)
        for row, captions in enumerate(self.cells):
            for column, text in enumerate(captions):
                y, x = layout.cell_origin(row, column)
                at(text, y + layout.cell_height + _CAPTION_GAP, x + half_width)


def _grid_layout(texts: _GridTexts, renderer, rows: int, cols: int, cell_height: int,
                 cell_width: int, pad: int) -> GridLayout:
    """Sizes the figure around the measured labels: title on top, column labels
    above the grid, row labels on its left, captions under each image."""
    column_pitch = cell_width + pad
    # Column labels wider than their column turn upright rather than overlap.
    if _largest(texts.columns, renderer, "width") > column_pitch - 2:
        for text in texts.columns:
            text.set_rotation(90)
    caption_height = _largest(sum(texts.cells, []), renderer, "height")
    row_pitch = cell_height + pad + (caption_height + _CAPTION_GAP if caption_height else 0)
    row_label_width = _largest(texts.rows, renderer, "width")
    title_height = _largest([texts.title], renderer, "height")
    column_label_height = _largest(texts.columns, renderer, "height")
    grid_width = cols * column_pitch - pad
    grid_height = rows * row_pitch - pad
    left = _MARGIN + (row_label_width + _LABEL_GAP if row_label_width else 0)
    content_width = left + grid_width + _MARGIN
    width = max(content_width, _largest([texts.title], renderer, "width") + 2 * _MARGIN)
    left += (width - content_width) // 2  # a title wider than the grid: centre the grid
    top = (_MARGIN + (title_height + _LABEL_GAP if title_height else 0)
           + (column_label_height + _LABEL_GAP if column_label_height else 0))
    return GridLayout(width=width, height=top + grid_height + _MARGIN, top=top, left=left,
                      cell_height=cell_height, cell_width=cell_width,
                      row_pitch=row_pitch, column_pitch=column_pitch)


def _grid_canvas(layout: GridLayout, images: np.ndarray, present: np.ndarray,
                 upscale: int) -> np.ndarray:
    """RGBA [height, width, 4] of the whole PNG: each present image upscaled at its
    cell, on a frame one pixel wider all round (so that white images stand out from
    the page), the rest transparent. Drawn as one `_PixelLayer`, so every image pixel
    lands 1:1 in the PNG; one image instead of two per cell took a quarter off
    drawing and saving a grid of 110 captioned cells."""
    canvas = np.zeros((layout.height, layout.width, 4), np.uint8)
    for row, column in zip(*np.nonzero(present)):
        y, x = layout.cell_origin(row, column)
        big = images[row, column].repeat(upscale, axis=0).repeat(upscale, axis=1)
        height, width = big.shape[:2]
        canvas[y - 1:y + height + 1, x - 1:x + width + 1] = (_FRAME_GREY,) * 3 + (255,)
        canvas[y:y + height, x:x + width, :3] = big
    return canvas


class _PixelLayer(Artist):
    """An RGBA uint8 [height, width, 4] image covering the figure from its top-left
    corner, handed to the renderer as it is. A figimage would give the same PNG, but
    first converts the pixels to floats and resamples them at scale 1, two fifths of
    the time of drawing and saving a traversal grid."""

    zorder = 0  # under the labels, as a figimage is

    def __init__(self, pixels: np.ndarray):
        super().__init__()
        # The Agg renderer takes rows from the bottom of the figure up.
        self._rows_upward = np.ascontiguousarray(pixels[::-1])

    def draw(self, renderer) -> None:
        if not self.get_visible():
            return
        context = renderer.new_gc()
        renderer.draw_image(context, 0, 0, self._rows_upward)
        context.restore()


def _display_rgb(images: np.ndarray) -> np.ndarray:
    """uint8 [rows, cols, H, W, ch] -> uint8 [rows, cols, H, W, 3]."""
    images = np.asarray(images)
    if images.ndim != 5 or images.shape[-1] not in (1, 3, 4):
        raise ValueError(f"expected images [rows, cols, H, W, ch] with ch 1, 3 or 4, "
                         f"got shape {images.shape}")
    if images.dtype != np.uint8:
        raise ValueError(f"expected uint8 images, got {images.dtype}")
    if images.shape[-1] == 1:
        return images.repeat(3, axis=-1)
    return images[..., :3]


def _check_grid_labels(rows: int, cols: int, row_labels, column_labels,
                       cell_labels) -> None:
    """ValueError naming the first label list whose length does not fit the grid."""
    _check_labels("row_labels", row_labels, rows)
    if column_labels is not None:
        _check_labels("column_labels", column_labels, cols)
    if cell_labels is not None:
        _check_labels("cell_labels", cell_labels, rows)
        for row, captions in enumerate(cell_labels):
            _check_labels(f"cell_labels[{row}]", captions, cols)


def _check_labels(name: str, labels: Sequence, expected: int) -> None:
    if isinstance(labels, str) or len(labels) != expected:
        count = "a string" if isinstance(labels, str) else f"{len(labels)} labels"
        raise ValueError(f"{name}: the grid needs {expected} labels, got {count}")


def _pixel_text(figure: Figure, text: str, size: float, **alignment) -> Text:
    """A text artist positioned in PNG pixels (from the bottom-left corner)."""
    return figure.text(0, 0, text, fontsize=size, transform=IdentityTransform(), **alignment)


def _largest(texts: Sequence, renderer, side: str) -> int:
    """The largest width or height, in whole pixels, of the non-empty `texts`."""
    extents = [text.get_window_extent(renderer) for text in texts if text.get_text()]
    return int(np.ceil(max((getattr(extent, side) for extent in extents), default=0)))


def _inches(pixels: int) -> float:
    # Half a pixel more, so that Agg's truncation of size · DPI gives `pixels` back
    # whatever the floating-point error of the division.
    return (pixels + 0.5) / DPI


# --------------------------------------------------------------------------- #
# Heat maps
# --------------------------------------------------------------------------- #
@dataclasses.dataclass(frozen=True)
class HeatMap:
    """One panel of `draw_heat_maps`: values [h, w] (NaN drawn grey)."""

    values: np.ndarray
    title: str = ""
    xlabel: str = ""
    ylabel: str = ""
    # "auto": matplotlib's index ticks; "every": one per row and column (a single
    # row gets none on y); "none": no ticks (small spatial maps).
    ticks: str = "auto"


def draw_heat_maps(
    panels: Sequence[Sequence[HeatMap | None]],
    *,
    title: str,
    colorbar_label: str,
    vmin: float = 0.0,
    vmax: float = 1.0,
    cmap: str = "viridis",
    panel_inches: tuple[float, float] = (2.4, 2.2),
) -> Figure:
    """Rows of heat-map panels on one colour scale, with one colour bar for all.

    Args:
      panels: rows of `HeatMap`s; None (or a short row) leaves an empty slot.
      title: the figure title ("\\n" separates lines).
      colorbar_label: what the colours measure.
      vmin, vmax: the colour scale; the bar gets an arrow at an end that some value
        passes.
      cmap: a matplotlib colormap name.
      panel_inches: (width, height) of one panel.
    Returns:
      the figure (save it with `save_figure`).
    """
    rows, cols = len(panels), max((len(row) for row in panels), default=0)
    if rows == 0 or cols == 0:
        raise ValueError("draw_heat_maps needs at least one panel")
    title_lines = title.count("\n") + 1
    figure = Figure(
        figsize=(cols * panel_inches[0] + 1.2, rows * panel_inches[1] + 0.25 * title_lines),
        dpi=DPI, layout="constrained",
    )
    axes = figure.subplots(rows, cols, squeeze=False)
    colormap = matplotlib.colormaps[cmap].with_extremes(bad="lightgrey")
    for row in range(rows):
        for column in range(cols):
            panel = panels[row][column] if column < len(panels[row]) else None
            _draw_panel(axes[row, column], panel, colormap, vmin, vmax,
                        (min(panel_inches) - _PANEL_LABEL_INCHES) * DPI)
    every = [panel.values for row in panels for panel in row if panel is not None]
    colorbar = figure.colorbar(
        ScalarMappable(Normalize(vmin, vmax), colormap), ax=axes,
        extend=_colorbar_extend(every, vmin, vmax),
        shrink=min(1.0, _COLORBAR_INCHES / (rows * panel_inches[1])),
    )
    colorbar.set_label(colorbar_label, fontsize=8)
    _fit_width(figure, figure.suptitle(title, fontsize=_TITLE_FONT))
    return figure


def _fit_width(figure: Figure, text: Text) -> None:
    """Widens `figure` so that `text` (its title) is not cut at the edges."""
    renderer = FigureCanvasAgg(figure).get_renderer()
    needed = (_largest([text], renderer, "width") + 2 * _MARGIN) / DPI
    width, height = figure.get_size_inches()
    if needed > width:
        figure.set_size_inches(needed, height)


def matrix_panel_inches(size: int, smallest: float = 2.4, largest: float = 5.0) -> float:
    """The side of a heat-map panel that gives a [size, size] matrix about 1.5
    pixels a cell, within [smallest, largest] inches."""
    return float(np.clip(1.5 * size / DPI + _PANEL_LABEL_INCHES, smallest, largest))


def _draw_panel(ax, panel: HeatMap | None, colormap, vmin: float, vmax: float,
                panel_pixels: float) -> None:
    if panel is None:
        ax.set_axis_off()
        return
    values = np.asarray(panel.values, np.float64)
    # Crisp cells while each gets a pixel or more; a larger matrix is averaged down
    # rather than losing whole rows and columns.
    crisp = max(values.shape) <= panel_pixels
    ax.imshow(values, vmin=vmin, vmax=vmax, cmap=colormap,
              interpolation="nearest" if crisp else "antialiased")
    ax.set_title(panel.title, fontsize=8)
    ax.set_xlabel(panel.xlabel, fontsize=8)
    ax.set_ylabel(panel.ylabel, fontsize=8)
    ax.tick_params(labelsize=6)
    if panel.ticks == "none":
        ax.set_xticks([]), ax.set_yticks([])
    elif panel.ticks == "every":
        ax.set_xticks(range(values.shape[1]))
        ax.set_yticks(range(values.shape[0]) if values.shape[0] > 1 else [])


def _colorbar_extend(values: Sequence[np.ndarray], vmin: float, vmax: float) -> str:
    """"min", "max", "both" or "neither": the ends of the scale that values pass
    (their colour is the end's, and the arrow says so)."""
    flat = np.concatenate([np.ravel(np.asarray(v, np.float64)) for v in values] or [[]])
    finite = flat[np.isfinite(flat)]
    below = bool(finite.size and finite.min() < vmin)
    above = bool(finite.size and finite.max() > vmax)
    return {(False, False): "neither", (True, False): "min",
            (False, True): "max", (True, True): "both"}[(below, above)]
