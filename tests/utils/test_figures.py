"""The shared figure helpers: labelled image grids (pixel-exact cells, label checks)
and heat-map panels (colour bar, titles, axis labels)."""

import numpy as np
import pytest
from PIL import Image

from causal_disent.utils import figures


def random_images(rows, cols, size=8, channels=3, seed=0):
    return np.random.default_rng(seed).integers(
        0, 256, (rows, cols, size, size, channels), dtype=np.uint8)


def saved_pixels(figure, path) -> np.ndarray:
    figures.save_figure(figure, path)
    with Image.open(path) as image:
        return np.asarray(image.convert("RGB"))


def colorbar_axes(figure) -> list:
    return [ax for ax in figure.axes if ax.get_label() == "<colorbar>"]


def test_every_image_lands_pixel_exact_where_the_layout_says(tmp_path):
    images = random_images(3, 4)
    figure, layout = figures.draw_image_grid(
        images, title="a grid\nof noise", row_labels=["first", "second", "third row"],
        column_labels=["input", "b", "c", "d"],
        cell_labels=[[f"{r},{c}" for c in range(4)] for r in range(3)], upscale=3)
    pixels = saved_pixels(figure, tmp_path / "grid.png")
    assert pixels.shape == (layout.height, layout.width, 3)
    assert layout.cell_height == layout.cell_width == 24
    for row in range(3):
        for column in range(4):
            y, x = layout.cell_origin(row, column)
            expected = images[row, column].repeat(3, axis=0).repeat(3, axis=1)
            np.testing.assert_array_equal(pixels[y:y + 24, x:x + 24], expected)
            # A one-pixel grey frame all round.
            ring = np.concatenate([pixels[y - 1, x - 1:x + 25], pixels[y + 24, x - 1:x + 25],
                                   pixels[y:y + 24, x - 1], pixels[y:y + 24, x + 24]])
            assert (ring == 190).all()
    # The labels take room: the title and column labels above, row labels left.
    assert layout.top > 20 and layout.left > 20


def test_the_grid_saves_the_png_that_matplotlibs_figimage_gives(tmp_path):
    # The grid's pixels reach the renderer unresampled (figures._PixelLayer); drawn
    # instead as a figimage, matplotlib's own unscaled image of the same canvas,
    # every pixel of the PNG is the same, labels and blank white included.
    images = random_images(2, 3, channels=3)
    present = np.array([[True, True, False], [True, True, True]])
    figure, layout = figures.draw_image_grid(
        images, title="as a figimage", row_labels=["a", "b"], column_labels=["x", "y", "z"],
        cell_labels=[["1", "2", "3"], ["4", "5", "6"]], present=present, upscale=2)
    ours = saved_pixels(figure, tmp_path / "layer.png")
    (layer,) = [artist for artist in figure.artists if isinstance(artist, figures._PixelLayer)]
    layer.remove()
    figure.figimage(figures._grid_canvas(layout, images, present, 2), xo=0, yo=0,
                    origin="upper")
    np.testing.assert_array_equal(ours, saved_pixels(figure, tmp_path / "figimage.png"))


def test_grey_and_rgba_images_are_drawn_as_rgb_and_blank_cells_stay_white(tmp_path):
    grey = random_images(1, 2, channels=1)
    figure, layout = figures.draw_image_grid(
        grey, title="grey", row_labels=["row"], present=np.array([[True, False]]), upscale=1)
    pixels = saved_pixels(figure, tmp_path / "grey.png")
    (y, x), (_, blank_x) = layout.cell_origin(0, 0), layout.cell_origin(0, 1)
    np.testing.assert_array_equal(pixels[y:y + 8, x:x + 8], grey[0, 0].repeat(3, axis=-1))
    assert (pixels[y - 1:y + 9, blank_x - 1:blank_x + 9] == 255).all()  # no frame either

    rgba = random_images(1, 1, channels=4)
    figure, layout = figures.draw_image_grid(rgba, title="rgba", row_labels=["row"], upscale=1)
    pixels = saved_pixels(figure, tmp_path / "rgba.png")
    y, x = layout.cell_origin(0, 0)
    np.testing.assert_array_equal(pixels[y:y + 8, x:x + 8], rgba[0, 0, ..., :3])


def test_the_grid_carries_the_labels_it_was_given():
    figure, _ = figures.draw_image_grid(
        random_images(2, 2), title="the title", row_labels=["r0", "r1"],
        column_labels=["c0", "c1"], cell_labels=[["a", ""], ["b", "c"]])
    texts = {text.get_text() for text in figure.texts}
    assert {"the title", "r0", "r1", "c0", "c1", "a", "b", "c"} <= texts


@pytest.mark.parametrize("labels, match", [
    ({"row_labels": ["only one"]}, "row_labels: the grid needs 2 labels, got 1"),
    ({"row_labels": ["a", "b"], "column_labels": ["x"] * 4},
     "column_labels: the grid needs 3 labels, got 4"),
    ({"row_labels": ["a", "b"], "cell_labels": [["x"] * 3, ["x"] * 2]},
     r"cell_labels\[1\]: the grid needs 3 labels, got 2"),
    ({"row_labels": "ab"}, "row_labels: the grid needs 2 labels, got a string"),
    ({"row_labels": ["a", "b"], "present": np.ones((3, 2), bool)},
     r"present must be \[2, 3\] like the grid"),
])
def test_a_label_count_that_does_not_match_the_grid_is_refused(labels, match):
    with pytest.raises(ValueError, match=match):
        figures.draw_image_grid(random_images(2, 3), title="t", **labels)


def test_bad_images_are_refused():
    with pytest.raises(ValueError, match="uint8"):
        figures.draw_image_grid(random_images(1, 1).astype(np.float32), title="t",
                                row_labels=["a"])
    with pytest.raises(ValueError, match=r"\[rows, cols, H, W, ch\]"):
        figures.draw_image_grid(random_images(1, 1)[0], title="t", row_labels=["a"])


def test_default_upscale_shows_small_images_larger():
    assert figures.default_upscale((64, 64, 3)) == 2
    assert figures.default_upscale((96, 96, 4)) == 1
    assert figures.default_upscale((218, 178, 3)) == 1


def test_heat_maps_share_one_colour_bar_and_keep_their_labels(tmp_path):
    panels = [[figures.HeatMap(np.eye(3), title="identity", xlabel="column j", ylabel="row i"),
               None],
              [figures.HeatMap(np.full((2, 4), 0.5), title="half", ticks="none")]]
    figure = figures.draw_heat_maps(panels, title="two maps", colorbar_label="value")
    assert len(colorbar_axes(figure)) == 1
    assert colorbar_axes(figure)[0].get_ylabel() == "value"
    assert figure.get_suptitle() == "two maps"
    drawn = [ax for ax in figure.axes if ax.images]
    assert [ax.get_title() for ax in drawn] == ["identity", "half"]
    assert (drawn[0].get_xlabel(), drawn[0].get_ylabel()) == ("column j", "row i")
    assert list(drawn[1].get_xticks()) == []
    empty = [ax for ax in figure.axes if not ax.images and ax.get_label() != "<colorbar>"]
    assert len(empty) == 2 and not any(ax.axison for ax in empty)
    assert saved_pixels(figure, tmp_path / "maps.png").std() > 10


def test_colour_bar_marks_values_beyond_its_scale():
    def extend(values):
        figure = figures.draw_heat_maps([[figures.HeatMap(np.asarray(values, float))]],
                                        title="t", colorbar_label="v")
        return colorbar_axes(figure)[0]._colorbar.extend

    assert extend([[0.0, 1.0]]) == "neither"
    assert extend([[-0.5, 1.0, np.nan]]) == "min"
    assert extend([[0.0, 1.5]]) == "max"
    assert extend([[-1.0, 2.0]]) == "both"


def test_a_long_title_widens_the_heat_map_figure():
    title = "a title much longer than one small panel is wide " * 2
    figure = figures.draw_heat_maps([[figures.HeatMap(np.eye(2))]], title=title,
                                    colorbar_label="v")
    assert figure.get_size_inches()[0] * figures.DPI > 6 * len(title)
