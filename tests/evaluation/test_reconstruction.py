"""The reconstruction figure: inputs over reconstructions, labelled, with each
reconstruction's error."""

import flax.linen as nn
import numpy as np
from PIL import Image

from causal_disent.evaluation import reconstruction


class Inverting(nn.Module):
    """A parameter-free stand-in autoencoder whose reconstruction is 1 - x."""

    @nn.compact
    def __call__(self, images):
        return {"reconstruction": 1.0 - images}


def test_inputs_lie_over_their_reconstructions_with_their_errors(tmp_path):
    images = np.random.default_rng(0).integers(0, 256, (3, 8, 8, 1), dtype=np.uint8)
    path = tmp_path / "figures" / "r.png"
    reconstruction.save_reconstruction_figure(Inverting(), {}, images, path, title="inverted")
    inverted = 255 - images
    figure, layout = reconstruction.draw_reconstruction_figure(images, inverted, "inverted")
    with Image.open(path) as saved:
        pixels = np.asarray(saved.convert("RGB"))
    assert pixels.shape == (layout.height, layout.width, 3)
    size = layout.cell_height
    for row, expected in enumerate((images, inverted)):
        for column in range(3):
            y, x = layout.cell_origin(row, column)
            cell = pixels[y:y + size, x:x + size, 0]
            np.testing.assert_array_equal(cell[::size // 8, ::size // 8], expected[column, ..., 0])
    texts = [text.get_text() for text in figure.texts]
    assert {"input", "reconstruction"} <= set(texts)
    mse = reconstruction.pixel_mse(images, inverted)
    np.testing.assert_allclose(
        mse, (((images / 255.0) - (inverted / 255.0)) ** 2).mean(axis=(1, 2, 3)))
    assert [f"MSE {value:.4f}" for value in mse] == [t for t in texts if t.startswith("MSE")]
