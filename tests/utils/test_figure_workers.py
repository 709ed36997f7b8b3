"""Figures written by worker processes (utils/figure_workers.py): the same PNGs as
drawn in place, every file there when the block ends, errors raised there."""

import logging
import os
import sys

import numpy as np
import pytest
from PIL import Image

from causal_disent.utils import figure_workers, figures
from tests import helpers


def grid_figure(seed: int):
    images = np.random.default_rng(seed).integers(0, 256, (2, 3, 8, 8, 3), dtype=np.uint8)
    figure, _ = figures.draw_image_grid(images, title=f"grid {seed}", row_labels=["a", "b"],
                                        cell_labels=[["1", "2", "3"], ["4", "5", "6"]])
    return figure


def heat_map_figure(seed: int):
    values = np.random.default_rng(seed).random((4, 4))
    values[0, 0] = np.nan
    return figures.draw_heat_maps([[figures.HeatMap(values, title="m", xlabel="i")]],
                                  title=f"maps {seed}", colorbar_label="score")


def pixels(path) -> np.ndarray:
    with Image.open(path) as image:
        return np.asarray(image)


def test_workers_write_the_pngs_drawn_in_place_by_the_end_of_the_block(tmp_path):
    makers = [grid_figure, heat_map_figure] * 2
    for index, make in enumerate(makers):
        figures.save_figure(make(index), tmp_path / "here" / f"{index}.png")
    with figure_workers.saved_in_parallel(2):
        for index, make in enumerate(makers):
            returned = figures.save_figure(make(index), tmp_path / "workers" / f"{index}.png")
            assert returned == tmp_path / "workers" / f"{index}.png"
    for index in range(len(makers)):
        np.testing.assert_array_equal(pixels(tmp_path / "workers" / f"{index}.png"),
                                      pixels(tmp_path / "here" / f"{index}.png"))
    # Outside the block figures are drawn in place again.
    figures.save_figure(grid_figure(9), tmp_path / "after.png")
    assert (tmp_path / "after.png").exists()


def test_a_drawing_is_built_by_a_worker_into_the_png_built_in_place(tmp_path):
    images = np.random.default_rng(0).integers(0, 256, (2, 3, 8, 8, 1), dtype=np.uint8)
    labels = {"title": "drawn", "row_labels": ["a", "b"]}
    figures.save_drawn(tmp_path / "here.png", figures.draw_image_grid, images, **labels)
    figures.save_drawn(tmp_path / "here_pid.png", helpers.figure_drawn_with_pid,
                       str(tmp_path / "here_pid"))
    with figure_workers.saved_in_parallel(2):
        figures.save_drawn(tmp_path / "worker.png", figures.draw_image_grid, images, **labels)
        figures.save_drawn(tmp_path / "worker_pid.png", helpers.figure_drawn_with_pid,
                           str(tmp_path / "worker_pid"))
    np.testing.assert_array_equal(pixels(tmp_path / "worker.png"), pixels(tmp_path / "here.png"))
    np.testing.assert_array_equal(pixels(tmp_path / "worker_pid.png"),
                                  pixels(tmp_path / "here_pid.png"))
    assert int((tmp_path / "here_pid").read_text()) == os.getpid()
    assert int((tmp_path / "worker_pid").read_text()) != os.getpid()  # built there


def test_one_worker_draws_in_place_and_a_nested_block_joins_the_outer_one(tmp_path):
    with figure_workers.saved_in_parallel(1):
        figures.save_figure(grid_figure(0), tmp_path / "one.png")
        assert (tmp_path / "one.png").exists()  # written before save_figure returned
    with figure_workers.saved_in_parallel(2):
        with figure_workers.saved_in_parallel(2):
            figures.save_figure(grid_figure(1), tmp_path / "nested.png")
        assert figures._parallel_saver is not None  # the outer block's, still on
    assert (tmp_path / "nested.png").exists()


def test_a_figures_error_is_raised_at_the_end_once_the_others_are_written(tmp_path):
    (tmp_path / "taken.png").mkdir()  # a folder where the PNG should go
    with pytest.raises(IsADirectoryError):
        with figure_workers.saved_in_parallel(2):
            figures.save_figure(grid_figure(0), tmp_path / "taken.png")
            figures.save_figure(grid_figure(1), tmp_path / "fine.png")
    assert (tmp_path / "fine.png").exists()


def test_figures_of_a_worker_that_ends_are_drawn_here_with_a_warning(monkeypatch, tmp_path,
                                                                      caplog):
    monkeypatch.setattr(figure_workers, "WORKER_COMMAND", (
        sys.executable, "-c", "import sys; print('no figures today', file=sys.stderr); "
                              "sys.exit(3)"))
    with caplog.at_level(logging.WARNING):
        with figure_workers.saved_in_parallel(2):
            for index in range(3):
                figures.save_figure(grid_figure(index), tmp_path / "workers" / f"{index}.png")
            figures.save_drawn(tmp_path / "workers" / "drawn.png", figures.draw_heat_maps,
                               [[figures.HeatMap(np.eye(3), title="m")]], title="drawn",
                               colorbar_label="score")
    np.testing.assert_array_equal(pixels(tmp_path / "workers" / "drawn.png"), pixels(
        figures.save_drawn(tmp_path / "drawn_here.png", figures.draw_heat_maps,
                           [[figures.HeatMap(np.eye(3), title="m")]], title="drawn",
                           colorbar_label="score")))
    for index in range(3):
        figures.save_figure(grid_figure(index), tmp_path / "here.png")
        np.testing.assert_array_equal(pixels(tmp_path / "workers" / f"{index}.png"),
                                      pixels(tmp_path / "here.png"))
    (warning,) = [record.getMessage() for record in caplog.records
                  if "figure process ended" in record.getMessage()]
    assert "exit status 3" in warning and "no figures today" in warning
    assert "drawing the 4 figure(s) it left in this process instead" in warning


def test_a_worker_that_cannot_start_leaves_its_figures_to_this_process(monkeypatch, tmp_path,
                                                                       caplog):
    monkeypatch.setattr(figure_workers, "WORKER_COMMAND", (str(tmp_path / "no_such_python"),))
    with caplog.at_level(logging.WARNING):
        with figure_workers.saved_in_parallel(2):
            figures.save_figure(grid_figure(0), tmp_path / "drawn.png")
    assert (tmp_path / "drawn.png").exists()
    assert any("could not start a figure process" in record.getMessage()
               for record in caplog.records)
