"""The dataset CLIs: contact sheets (`data.show`) and descriptions (`data.describe`)."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest
from PIL import Image

from causal_disent.data import describe, registry, show
from causal_disent.data.shapes3d_synth import Shapes3DSynth
from tests.helpers import REPO_ROOT


@pytest.fixture(scope="module")
def shapes3d() -> Shapes3DSynth:
    return Shapes3DSynth()


def test_contact_sheet_layout(shapes3d):
    base = [0, 5, 8, 4, 0, 7]
    sheet = show.contact_sheet(shapes3d, base, upscale=1, gap=2)
    assert sheet.dtype == np.uint8
    assert sheet.shape == (6 * 66 + 2, 15 * 66 + 2, 3)
    # Cell (row=scale, column=2) shows scale 2 with the other factors at base.
    cell = sheet[2 + 3 * 66 : 2 + 3 * 66 + 64, 2 + 2 * 66 : 2 + 2 * 66 + 64]
    np.testing.assert_array_equal(cell, shapes3d.render([[0, 5, 8, 2, 0, 7]])[0])
    # Shape has 4 values: the rest of its row is padding.
    assert (sheet[2 + 4 * 66 : 2 + 4 * 66 + 64, 2 + 4 * 66 :] == 255).all()
    doubled = show.contact_sheet(shapes3d, base, upscale=2, gap=2)
    np.testing.assert_array_equal(doubled[::2, ::2], sheet)
    with pytest.raises(ValueError, match=r"6 entries"):
        show.contact_sheet(shapes3d, [0, 0, 0])
    with pytest.raises(ValueError, match="'scale'"):
        show.contact_sheet(shapes3d, [0, 0, 0, 9, 0, 0])


def test_every_row_varies_its_factor_alone(shapes3d):
    """Each cell of row f differs from the base image only through factor f."""
    sheet = show.contact_sheet(shapes3d, None, upscale=1, gap=2, max_columns=4)
    base = show.default_base_factors(shapes3d)
    for factor, size in enumerate(shapes3d.factor_sizes):
        for column, value in enumerate(show.shown_values(size, 4)):
            expected = base.copy()
            expected[factor] = value
            top, left = 2 + factor * 66, 2 + column * 66
            np.testing.assert_array_equal(
                sheet[top : top + 64, left : left + 64], shapes3d.render(expected[None])[0]
            )


def test_shown_values_keep_both_ends():
    np.testing.assert_array_equal(show.shown_values(5, 16), np.arange(5))
    values = show.shown_values(183, 16)
    assert len(values) == 16 and values[0] == 0 and values[-1] == 182
    assert np.all(np.diff(values) > 0)


def test_binary_images_are_stretched_for_display():
    binary = np.array([[[[0], [1]]]], np.uint8)
    np.testing.assert_array_equal(show.for_display(binary), binary * 255)
    rgb = np.array([[[[0, 1, 200]]]], np.uint8)
    np.testing.assert_array_equal(show.for_display(rgb), rgb)


def test_show_command_writes_a_labelled_png(shapes3d, tmp_path, capsys):
    path = tmp_path / "sheet.png"
    show.main(["shapes3d_synth", f"--out={path}", "--upscale=1", "--base_factors=0,5,8,4,0,7"])
    assert str(path) in capsys.readouterr().out
    figure, layout = show.draw_contact_sheet(shapes3d, [0, 5, 8, 4, 0, 7], upscale=1)
    pixels = np.asarray(Image.open(path).convert("RGB"))
    assert pixels.shape == (layout.height, layout.width, 3)
    # Cell (row=scale, column=2) shows scale 2 with the other factors at base.
    y, x = layout.cell_origin(3, 2)
    np.testing.assert_array_equal(pixels[y:y + 64, x:x + 64],
                                  shapes3d.render([[0, 5, 8, 2, 0, 7]])[0])
    texts = [text.get_text() for text in figure.texts]
    assert set(shapes3d.factor_names) <= set(texts)  # the row labels
    assert "0.893" in texts  # scale's value 2, under its image
    assert "floor_hue=0, wall_hue=0.5, object_hue=0.8, scale=1.04" in texts[0]  # the base


def test_commands_reject_unknown_dataset_with_suggestion(tmp_path):
    with pytest.raises(SystemExit, match="Did you mean 'shapes3d_synth'"):
        show.main(["shapes3d_synt", f"--out={tmp_path / 'x.png'}"])
    with pytest.raises(SystemExit, match="Did you mean 'shapes3d_synth'"):
        describe.main(["shapes3d_synt"])
    # Factors that are no numbers, and a sheet too large to draw, are one line each.
    out = f"--out={tmp_path / 'x.png'}"
    with pytest.raises(SystemExit, match=r"^error: --base_factors=a,b: give one whole number"):
        show.main(["shapes3d_synth", out, "--base_factors=a,b"])
    with pytest.raises(SystemExit, match=r"^error: a grid of 6 x 15 images of 64 x 64 pixels "
                                         r"at upscale 1000 would be over 200 megapixels"):
        show.main(["shapes3d_synth", out, "--upscale=1000"])
    assert not (tmp_path / "x.png").exists()


def test_describe_shapes3d_synth(capsys):
    describe.main(["shapes3d_synth"])
    info = json.loads(capsys.readouterr().out)
    assert info["name"] == "shapes3d_synth"
    assert info["num_images"] == 480_000
    assert [f["name"] for f in info["factors"]] == list(Shapes3DSynth.factor_names)
    assert [f["size"] for f in info["factors"]] == [10, 10, 10, 8, 4, 15]
    assert info["factors"][5]["values"][0] == -30 and info["factors"][5]["values"][-1] == 30
    assert sum(info["splits"].values()) == 480_000
    assert info["splits"]["train"] == 336_000
    assert info["num_actions"] == 12 and info["action_names"][0] == "floor_hue+"
    assert "causal_graph" not in info


def test_describe_lists_a_range_for_long_factors():
    class Long:
        name = "long"
        image_shape = (1, 1, 1)
        factor_names = ("a",)
        factor_sizes = (60,)
        factor_values = (np.linspace(0.0, 1.0, 60),)
        num_images = 60

    info = describe.describe(Long())
    assert info["factors"] == [{"name": "a", "size": 60, "range": [0, 1]}]


def test_registry_lists_every_dataset_module():
    for name in registry.DATASETS:
        registry.check_dataset_name(name)


def test_describe_an_unprepared_real_dataset_is_one_error_without_tfds_warnings(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "causal_disent.data.describe", "dsprites",
         f"--data_dir={tmp_path}"],
        env=dict(os.environ, PYTHONPATH=str(REPO_ROOT), JAX_PLATFORMS="cpu"),
        capture_output=True, text=True, timeout=300)
    assert result.returncode == 1
    assert result.stderr.startswith("error: dsprites is not prepared"), result.stderr
    assert "Variant folder" not in result.stderr
