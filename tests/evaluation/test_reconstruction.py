"""The reconstruction figure: inputs over reconstructions, labelled, with each
reconstruction's error."""

import flax.linen as nn
import numpy as np
import pytest
from PIL import Image

from causal_disent.evaluation import drawings, reconstruction


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
    figure, layout = drawings.draw_reconstruction_figure(images, inverted, "inverted")
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
    mse = drawings.pixel_mse(images, inverted)
    np.testing.assert_allclose(
        mse, (((images / 255.0) - (inverted / 255.0)) ** 2).mean(axis=(1, 2, 3)))
    assert [f"MSE {value:.4f}" for value in mse] == [t for t in texts if t.startswith("MSE")]


def test_reconstruction_scores_equal_a_direct_computation_on_padded_batches():
    """5 images in batches of 4 (one padded) score as the model applied to all five at
    once, and the compiled evaluator serves a second, different set of images."""
    import jax

    from causal_disent import models
    from causal_disent.data.registry import get_dataset
    from causal_disent.utils.images import images_to_unit_range
    from causal_disent.utils.sharding import make_data_mesh
    from tests.helpers import tiny_config

    config = tiny_config()
    dataset = get_dataset(config.data.name)
    model = models.build_mcqvae(config.mcqvae.model, out_channels=dataset.image_shape[-1])
    images = dataset.images(np.arange(5))
    params = model.init(jax.random.key(0), images_to_unit_range(images[:1]))["params"]
    evaluate = reconstruction.reconstruction_evaluator(model, make_data_mesh(), batch_size=4)
    for indices in (np.arange(5), np.array([7, 3])):
        scores = evaluate(params, dataset, indices)
        unit = np.asarray(images_to_unit_range(dataset.images(indices)))
        outputs = model.apply({"params": params}, unit)
        mse = ((np.asarray(outputs["reconstruction"]) - unit) ** 2).mean(axis=(1, 2, 3))
        np.testing.assert_allclose(scores["test_mse"], mse.mean(), rtol=1e-5)
        np.testing.assert_allclose(scores["test_psnr_per_image_mean"],
                                   (-10 * np.log10(mse)).mean(), rtol=1e-5)
        codes = np.asarray(outputs["codes"])  # [B, num_codebooks, ...] code indices
        codes = np.moveaxis(codes, 1, -1).reshape(len(indices), -1, model.num_codebooks)
        for codebook in range(model.num_codebooks):
            counts = np.bincount(codes[..., codebook].ravel(), minlength=model.num_codes)
            usage = (counts > 0).mean()
            probs = counts[counts > 0] / counts.sum()
            assert scores["codebook_usage"][codebook] == usage
            np.testing.assert_allclose(scores["codebook_perplexity"][codebook],
                                       np.exp(-(probs * np.log(probs)).sum()), atol=2e-3)
        assert scores["num_images"] == len(indices)


def test_an_evaluation_batch_the_host_cannot_hold_is_refused_before_it_runs(monkeypatch):
    """On a CPU the evaluations' sums are compiled ahead and their memory held against
    the host's (a `:small` β-VAE with eval_batch_size 73 728 was killed, status 137)."""
    import jax.numpy as jnp

    from causal_disent.evaluation import image_sums
    from causal_disent.utils import host_memory
    from causal_disent.utils.sharding import make_data_mesh

    class Images:
        def images(self, index):
            return np.full((len(index), 4, 4, 1), 255, np.uint8)

    summed = image_sums.image_summer(
        lambda params, images, valid: {"pixels": jnp.einsum("b,bhwc->", valid, images)},
        make_data_mesh())
    monkeypatch.setattr(host_memory, "available_bytes", lambda: 0)
    with pytest.raises(MemoryError, match="^an evaluation batch needs"):
        summed({}, Images(), np.arange(5), 8)
    monkeypatch.setattr(host_memory, "available_bytes", lambda: 2**40)
    assert float(summed({}, Images(), np.arange(5), 8)["pixels"]) == 5 * 16
