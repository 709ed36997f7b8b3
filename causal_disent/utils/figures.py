"""Generic image-grid figures saved as PNG (no dataset or model knowledge here)."""

from pathlib import Path

import numpy as np
from PIL import Image


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
