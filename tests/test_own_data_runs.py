"""One's own data end to end, as a researcher runs it: each format `files` reads
(`.npz`, HDF5, an image folder with its CSV files and the authors' pairs) trains
`:tiny` for every model family its labels allow (CT-VAE, a zoo VAE, CausalVAE)
through `python -m causal_disent.main --config.data.name=files
--config.data.path=P`, and is scored by `python -m causal_disent.evaluate`.

The runs share one worker's compilation cache (tests/conftest.py): the second run
of a family compiles little."""

import json
import os
import subprocess
import sys

import pytest

from tests.helpers import REPO_ROOT
from tests.own_data_fixtures import HALF_AND_HALF, write_hdf5, write_image_folder, write_npz

CT = "configs/ctvae_shapes3d.py:tiny"
VAE = "configs/betavae_dsprites_synth.py:tiny"
CAUSALVAE = "configs/causalvae_pendulum.py:tiny"
THREE_CONCEPTS = "--config.causalvae.model.num_concepts=3"


def run(module, *args):
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT), JAX_PLATFORMS="cpu")
    result = subprocess.run([sys.executable, "-m", module, *map(str, args)], env=env,
                            capture_output=True, text=True, timeout=600, cwd=REPO_ROOT)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-3000:]
    return result


def train(config, path, workdir, *flags):
    run("causal_disent.main", f"--config={config}", "--config.data.name=files",
        f"--config.data.path={path}", f"--workdir={workdir}", *flags)
    return json.loads((workdir / "results.json").read_text())


def score(workdir, metrics="all"):
    run("causal_disent.evaluate", f"--workdir={workdir}", f"--metrics={metrics}",
        "--num_samples=200")
    return json.loads((workdir / "metrics_card.json").read_text())


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return tmp_path_factory.mktemp("own_runs")


def test_npz_trains_ct_vae_a_vae_and_causalvae_and_is_scored(folder):
    path = write_npz(folder / "grid.npz")
    ct = train(CT, path, folder / "npz_ct", HALF_AND_HALF)
    assert ct["mcqvae"]["steps"] == 6 and ct["ct"]["steps"] == 6
    assert ct["ct"]["action_chance"] == pytest.approx(1 / 6)
    card = score(folder / "npz_ct", "mig,betavae")
    [scored] = card["representations"].values()
    assert set(scored["metrics"]) == {"mig", "betavae"}
    vae = train(VAE, path, folder / "npz_vae")
    assert vae["vae"]["steps"] > 0
    causalvae = train(CAUSALVAE, path, folder / "npz_causalvae", THREE_CONCEPTS)
    result = causalvae["causalvae"]
    assert result["label_names"] == ["hue", "height", "width"]
    assert result["true_graph"] == [[0, 1, 1], [0, 0, 1], [0, 0, 0]]
    assert result["shd"] is not None


def test_hdf5_grid_trains_ct_vae_and_a_vae_and_is_scored(folder):
    pytest.importorskip("h5py")
    path = write_hdf5(folder / "grid.h5")
    ct = train(CT, path, folder / "h5_ct", HALF_AND_HALF)
    assert ct["ct"]["steps"] == 6
    train(VAE, path, folder / "h5_vae")
    card = score(folder / "h5_vae", "mig,factorvae")
    [scored] = card["representations"].values()
    assert scored["dataset"]["factor_names"] == ["colour", "row", "column"]
    assert set(scored["metrics"]) == {"mig", "factorvae"}


def test_an_image_folder_off_the_grid_trains_ct_vae_on_its_pairs_a_vae_and_causalvae(folder):
    path = write_image_folder(folder / "images", count=120)
    ct = train(CT, path, folder / "folder_ct", HALF_AND_HALF,
               "--config.ct.train.code_cache_batch_size=120")  # as its error says
    assert ct["ct"]["steps"] == 6 and len(ct["ct"]["per_action_pairs"]) == 6
    card = score(folder / "folder_ct")  # all that apply: betavae and factorvae need a grid
    assert "betavae and factorvae set one factor's value" in card["metrics_not_run"]
    [scored] = card["representations"].values()
    assert set(scored["metrics"]) == {
        "mig", "sap", "dci", "modularity_explicitness", "unsupervised", "infomec"}
    train(VAE, path, folder / "folder_vae")
    causalvae = train(CAUSALVAE, path, folder / "folder_causalvae", THREE_CONCEPTS)
    assert causalvae["causalvae"]["true_graph"] is None  # no causal_graph.csv: no SHD
    assert causalvae["causalvae"]["shd"] is None
