"""The real-data CT-VAE configs of the paper's Table 1 (Cars3D, Sprites, dSprites) run
both stages end to end on fixtures in the real on-disk formats: Cars3D built by its
builder from a fake archive of Reed et al. 2015, dSprites and Sprites written as TFDS
records with the real features. The grids are shrunk (tests/tiny_real_grid.py); the
configs, the readers and the training are the shipped ones. The dSprites run is also
the suite's end-to-end run on single-channel images."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

pytest.importorskip("tensorflow_datasets")

from causal_disent.data import tfds_datasets as td  # noqa: E402
from causal_disent.data.tfds_builders import cars3d, reed2015, sprites  # noqa: E402
from tests.data.test_tfds_datasets import (build, car_mat, grid_tuples, pil,  # noqa: E402
                                           prepare_official, write_archive)
from tests.helpers import REPO_ROOT  # noqa: E402

# Every factor takes at least two values (an action moves each), and the grid is large
# enough that each action has pairs inside the 15 % test split.
CARS3D_SIZES = (4, 24, 4)
DSPRITES_SIZES = (3, 2, 4, 4, 4)
SPRITES_SIZES = (2, 2, 2, 2, 2, 2, 2, 5, 4)


def run_tiny(class_name, sizes, config, data_dir, workdir):
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT), JAX_PLATFORMS="cpu")
    result = subprocess.run(
        [sys.executable, "-m", "tests.tiny_real_grid", class_name, ",".join(map(str, sizes)),
         f"--config={REPO_ROOT / 'configs' / config}:tiny",
         f"--config.data.data_dir={data_dir}", f"--workdir={workdir}"],
        env=env, capture_output=True, text=True, timeout=600, cwd=REPO_ROOT)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-3000:]
    return json.loads((workdir / "results.json").read_text())


def labelled(image, names, factors, values=None):
    example = {"image": pil(image)}
    for f, (name, index) in enumerate(zip(names, factors)):
        example[f"label_{name}"] = int(index)
        if values is not None:
            example[f"value_{name}"] = np.float32(values[f][index])
    return example


def test_cars3d_config_on_the_archive_builders_output(tmp_path):
    manual = tmp_path / "manual"
    manual.mkdir()
    write_archive(manual / reed2015.ARCHIVE_NAME,
                  {f"data/cars/car_{car + 1:03d}_mesh.mat": car_mat(car)
                   for car in range(CARS3D_SIZES[2])})
    build(cars3d.Cars3d, tmp_path / "data", manual)
    results = run_tiny("Cars3D", CARS3D_SIZES, "ctvae_cars3d.py", tmp_path / "data",
                       tmp_path / "run")
    assert results["mcqvae"]["steps"] == 6 and results["ct"]["steps"] == 6
    assert results["ct"]["action_names"] == ["elevation+", "azimuth+", "object+",
                                             "elevation-", "azimuth-", "object-"]


def test_dsprites_config_on_single_channel_tfds_records(tmp_path):
    examples = []
    for factors in grid_tuples(DSPRITES_SIZES, np.random.default_rng(0)):
        image = np.zeros((64, 64, 1), np.uint8)
        # A binary blob whose place and size follow the factors, as TFDS stores it (0/1).
        top, left = 4 * factors[3], 4 * factors[4]
        image[top : top + 8 + 4 * factors[1], left : left + 8 + factors[0] + factors[2]] = 1
        examples.append(labelled(image, td.DSprites.factor_names, factors,
                                 td.DSprites.factor_values))
    prepare_official("dsprites", tmp_path, {"train": examples})
    results = run_tiny("DSprites", DSPRITES_SIZES, "ctvae_dsprites.py", tmp_path,
                       tmp_path / "run")
    assert results["mcqvae"]["steps"] == 6 and results["ct"]["steps"] == 6
    assert len(results["ct"]["per_action_accuracy"]) == 10
    # The figures draw single-channel images too.
    assert (tmp_path / "run" / "figures" / "ct_interventions.png").exists()


def test_sprites_config_on_records_with_the_builders_features(tmp_path):
    examples = []
    rng = np.random.default_rng(1)
    for factors in grid_tuples(SPRITES_SIZES, rng):
        image = np.full((64, 64, 3), 20 * factors[:3], np.uint8)
        image[16:48, 24:40] = 25 * factors[6:]
        example = labelled(image, sprites.ATTRIBUTE_NAMES, factors[:7])
        character = int(np.ravel_multi_index(tuple(factors[:7]), SPRITES_SIZES[:7]))
        example.update(label_action=int(factors[7]), label_view=int(factors[8]),
                       character=character, frame=0, num_frames=1)
        examples.append(example)
    prepare_official("sprites", tmp_path, {"train": examples})
    results = run_tiny("Sprites", SPRITES_SIZES, "ctvae_sprites.py", tmp_path,
                       tmp_path / "run")
    assert results["mcqvae"]["steps"] == 6 and results["ct"]["steps"] == 6
    assert len(results["ct"]["per_action_accuracy"]) == 18
