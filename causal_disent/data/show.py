r"""Contact sheet of a factor dataset: one row per factor, that factor alone varying.

  python -m causal_disent.data.show shapes3d_synth                # -> shapes3d_synth.png
  python -m causal_disent.data.show dsprites_synth --out=sheet.png --upscale=2
  python -m causal_disent.data.show pendulum --base_factors=40,30

Factors with more values than `--max_columns` show that many evenly spaced values
(first and last included). Binary images stored as {0, 1} are stretched to
{0, 255} for display. The PNG labels each row with its factor and each image with
that factor's value.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from causal_disent.data import registry
from causal_disent.utils import arguments, figures


def default_base_factors(dataset) -> np.ndarray:
    """The middle value of every factor."""
    return np.array([size // 2 for size in dataset.factor_sizes], np.int64)


def shown_values(size: int, max_columns: int) -> np.ndarray:
    """Indices of the values a row shows: all, or `max_columns` evenly spaced."""
    if size <= max_columns:
        return np.arange(size)
    return np.unique(np.round(np.linspace(0, size - 1, max_columns)).astype(np.int64))


def contact_sheet(
    dataset,
    base_factors: Sequence[int] | None = None,
    upscale: int = 1,
    gap: int = 2,
    max_columns: int = 16,
) -> np.ndarray:
    """[H, W, ch] uint8 sheet: row f sweeps factor f, every other factor at its base.

    Args:
      dataset: any factor dataset (`factor_sizes`, `render`).
      base_factors: [F] factor indices held fixed (default: the middle values).
      upscale: nearest-neighbour magnification of the sheet.
      gap: pixels between cells (before upscaling).
      max_columns: at most this many values per row.
    """
    images, present, _ = sheet_cells(dataset, base_factors, max_columns)
    sheet = figures.image_grid(images, present, pad=gap)
    return sheet.repeat(upscale, axis=0).repeat(upscale, axis=1)


def sheet_cells(
    dataset, base_factors: Sequence[int] | None, max_columns: int
) -> tuple[np.ndarray, np.ndarray, list[np.ndarray]]:
    """The contact sheet's cells: display images [F, columns, H, W, ch] (row f
    sweeps factor f), `present` [F, columns] (False past a row's last value) and
    each row's shown value indices (`shown_values`). ValueError for bad
    `base_factors` (default: the middle values)."""
    num_factors = len(dataset.factor_sizes)
    base = default_base_factors(dataset) if base_factors is None else np.asarray(base_factors)
    if base.shape != (num_factors,):
        raise ValueError(
            f"base_factors must have {num_factors} entries (one per factor of "
            f"{dataset.name}: {', '.join(dataset.factor_names)}), got shape {base.shape}"
        )
    dataset.factors_to_index(base[None])  # validates the ranges
    rows = [shown_values(size, max_columns) for size in dataset.factor_sizes]
    columns = max(len(values) for values in rows)
    tuples = np.tile(base, (num_factors, columns, 1))
    present = np.zeros((num_factors, columns), bool)
    for factor, values in enumerate(rows):
        tuples[factor, : len(values), factor] = values
        present[factor, : len(values)] = True
    images = dataset.render(tuples.reshape(-1, num_factors))
    images = for_display(images).reshape(tuples.shape[:2] + images.shape[1:])
    return images, present, rows


def draw_contact_sheet(
    dataset,
    base_factors: Sequence[int] | None = None,
    upscale: int | None = None,
    max_columns: int = 16,
):
    """The contact sheet as a labelled figure: a row per factor (its name), each
    image captioned with that factor's value, the base values in the title.
    Returns `figures.draw_image_grid`'s (figure, layout)."""
    images, present, rows = sheet_cells(dataset, base_factors, max_columns)
    columns = images.shape[1]
    captions = [[_value_text(dataset.factor_values[factor][index]) for index in values]
                + [""] * (columns - len(values)) for factor, values in enumerate(rows)]
    base = default_base_factors(dataset) if base_factors is None else np.asarray(base_factors)
    held = ", ".join(f"{name}={_value_text(values[index])}" for name, values, index
                     in zip(dataset.factor_names, dataset.factor_values, base))
    return figures.draw_image_grid(
        images, row_labels=list(dataset.factor_names), cell_labels=captions,
        present=present, upscale=upscale,
        title=(f"{dataset.name}: each row varies one factor (captions: its value), "
               f"the others held at\n{held}"),
    )


def _value_text(value) -> str:
    return f"{value:.3g}" if isinstance(value, (float, np.floating)) else str(value)


def for_display(images: np.ndarray) -> np.ndarray:
    """Binary {0, 1} images -> {0, 255}; anything else unchanged."""
    if images.size and images.max() <= 1:
        return images * np.uint8(255)
    return images


def _base_factors(text: str | None) -> list[int] | None:
    if text is None:
        return None
    try:
        return [int(value) for value in text.split(",")]
    except ValueError:
        raise ValueError(f"--base_factors={text}: give one whole number (a factor value's "
                         f"index) per factor, comma-separated, e.g. --base_factors=0,2,1"
                         ) from None


def main(argv: Sequence[str] | None = None) -> None:
    parser = arguments.OneLineArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dataset", help=f"one of: {', '.join(sorted(registry.DATASETS))}")
    parser.add_argument("--out", default=None, help="PNG path (default: <dataset>.png)")
    parser.add_argument(
        "--base_factors", default=None,
        help="comma-separated factor indices held fixed (default: middle values)",
    )
    parser.add_argument("--upscale", type=arguments.positive_int, default=None,
                        help="nearest magnification (default: about 128 pixels an image)")
    parser.add_argument("--max_columns", type=arguments.positive_int, default=16)
    parser.add_argument("--data_dir", default=None, help="TFDS data dir (real datasets)")
    parser.add_argument("--path", default=None,
                        help="files: the file or folder of one's own dataset")
    args = parser.parse_args(argv)
    out = Path(args.out or f"{args.dataset}.png")
    if out.suffix.lower() != ".png":
        raise SystemExit(f"error: --out {out} must name a .png file")
    try:
        dataset = registry.get_dataset(args.dataset, data_dir=args.data_dir, path=args.path)
        base = _base_factors(args.base_factors)
        figure, _ = draw_contact_sheet(dataset, base, args.upscale, args.max_columns)
    except (ValueError, FileNotFoundError) as error:
        raise SystemExit(f"error: {error}") from None
    try:
        path = figures.save_figure(figure, out)
    except OSError as error:
        raise SystemExit(f"error: cannot write {out} ({error.strerror or error}); pass "
                         "--out=<a writable folder>/<name>.png") from None
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
