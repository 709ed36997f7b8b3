"""TensorBoard events written without TensorFlow, read back with TensorBoard's own
event reader."""

import io

import numpy as np
import pytest
from PIL import Image
from tensorboard.backend.event_processing import event_accumulator

from causal_disent.runs import tensorboard


def read_events(directory):
    events = event_accumulator.EventAccumulator(
        str(directory), size_guidance={event_accumulator.SCALARS: 0,
                                       event_accumulator.IMAGES: 0})
    events.Reload()
    return events


def test_scalars_and_figures_read_back(tmp_path):
    tensorboard.add_scalars(tmp_path, "vae", 1, {
        "loss": np.float32(2.5), "kl_per_latent": np.ones(3), "mode": "action",
        "nan": float("nan"), "flag": True}, prefix="train")
    tensorboard.add_scalars(tmp_path, "vae", 2, {"loss": 1.5}, prefix="train")
    png = tmp_path / "vae_figure.png"
    Image.fromarray(np.full((6, 8, 3), 200, np.uint8)).save(png)
    tensorboard.add_figures(tmp_path, "vae", 2, [png])
    tensorboard.close(tmp_path, "vae")

    events = read_events(tensorboard.board_dir(tmp_path, "vae"))
    assert events.Tags()["scalars"] == ["train/loss"]  # arrays, text, NaN, bools left out
    assert [(e.step, e.value) for e in events.Scalars("train/loss")] == [(1, 2.5), (2, 1.5)]
    (image,) = events.Images("figures/vae_figure")
    assert (image.step, image.width, image.height) == (2, 8, 6)


def test_a_resumed_stage_hides_what_the_earlier_attempt_logged_past_its_checkpoint(tmp_path):
    for step in (1, 2, 3, 4):  # the first attempt got to step 4, its checkpoint was at 2
        tensorboard.add_scalars(tmp_path, "ct", step, {"loss": 10.0 + step}, prefix="train")
    tensorboard.open_writer(tmp_path, "ct", purge_step=3)  # resumed from step 2
    for step in (3, 4):
        tensorboard.add_scalars(tmp_path, "ct", step, {"loss": float(step)}, prefix="train")
    tensorboard.close(tmp_path, "ct")
    events = read_events(tensorboard.board_dir(tmp_path, "ct"))
    assert [(e.step, e.value) for e in events.Scalars("train/loss")] == [
        (1, 11.0), (2, 12.0), (3, 3.0), (4, 4.0)]


def test_figures_keep_their_pixels_and_other_formats_are_shown_as_rgb(tmp_path):
    rng = np.random.default_rng(0)
    rgba = rng.integers(0, 256, (5, 7, 4), dtype=np.uint8)  # what matplotlib saves
    Image.fromarray(rgba).save(tmp_path / "drawn.png")
    rgb = np.full((4, 3, 3), 90, np.uint8)
    Image.fromarray(rgb).save(tmp_path / "photo.bmp")
    tensorboard.add_figures(tmp_path, "vae", 5, [tmp_path / "drawn.png", tmp_path / "photo.bmp"])
    tensorboard.close(tmp_path, "vae")

    events = read_events(tensorboard.board_dir(tmp_path, "vae"))
    shown = {}
    for tag in ("figures/drawn", "figures/photo"):
        (image,) = events.Images(tag)
        shown[tag] = np.asarray(Image.open(io.BytesIO(image.encoded_image_string)))
    np.testing.assert_array_equal(shown["figures/drawn"], rgba)
    np.testing.assert_array_equal(shown["figures/photo"], rgb)


def test_a_failed_write_names_the_stages_event_folder(tmp_path, monkeypatch):
    tensorboard.add_scalars(tmp_path, "vae", 1, {"loss": 1.0}, prefix="train")
    events = tensorboard._file(tmp_path, "vae")

    def full_disk(*args):
        raise OSError(28, "No space left on device")  # no file named

    monkeypatch.setattr(events._records, "write", full_disk)
    with pytest.raises(OSError) as raised:
        tensorboard.add_scalars(tmp_path, "vae", 2, {"loss": 1.0}, prefix="train")
    assert (raised.value.errno, raised.value.filename) == (
        28, str(tensorboard.board_dir(tmp_path, "vae")))
    monkeypatch.undo()
    tensorboard.close(tmp_path, "vae")


def test_close_all_closes_every_stages_file_and_a_later_row_starts_another(tmp_path):
    for stage in ("mcqvae", "ct"):
        tensorboard.add_scalars(tmp_path, stage, 1, {"loss": 1.0}, prefix="train")
    tensorboard.close_all()
    tensorboard.add_scalars(tmp_path, "ct", 2, {"loss": 0.5}, prefix="train")
    tensorboard.close_all()
    assert len(list(tensorboard.board_dir(tmp_path, "mcqvae").iterdir())) == 1
    assert len(list(tensorboard.board_dir(tmp_path, "ct").iterdir())) == 2  # a new file
    steps = [e.step for e in read_events(tensorboard.board_dir(tmp_path, "ct")).Scalars(
        "train/loss")]
    assert steps == [1, 2]
