"""Loading a trained CausalVAE for interventions in label units."""

import jax
import numpy as np
import pytest

from causal_disent import causalvae_interventions as cvi
from causal_disent.runs import causalvae as causalvae_run
from causal_disent.runs.config_file import read_config
from causal_disent.train import stages
from causal_disent.utils.sharding import make_data_mesh
from configs import causalvae_pendulum


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("causalvae_tiny")
    config = causalvae_pendulum.get_config("tiny")
    config.causalvae.train.num_steps = 2
    config.causalvae.train.num_counterfactual_images = 0
    stages.run(config, workdir)
    return workdir


def test_load_restores_the_run_with_its_split_and_label_scaling(tiny_run):
    run = cvi.TrainedCausalVAE.load(tiny_run)
    config = read_config(tiny_run)
    _, params = causalvae_run.load_trained(config, tiny_run, make_data_mesh(), run.dataset)
    jax.tree.map(np.testing.assert_array_equal, run.params, jax.device_get(params))
    assert run.dataset.name == "pendulum" and len(run.split["train"]) == 5482
    expected = causalvae_run.label_scaling(
        "pendulum", run.dataset.labels(run.split["train"]).astype(np.float32))
    np.testing.assert_array_equal(run.scaling.prior_offset, expected.prior_offset)
    np.testing.assert_array_equal(run.scaling.prior_scale, expected.prior_scale)


def test_codes_of_labels_is_the_label_priors_mean(tiny_run):
    run = cvi.TrainedCausalVAE.load(tiny_run)
    labels = run.dataset.labels(run.split["test"][:3])
    codes = run.codes_of_labels(labels)
    np.testing.assert_allclose(codes * run.scaling.prior_scale + run.scaling.prior_offset,
                               labels, rtol=1e-5)
    np.testing.assert_allclose(run.codes_of_labels(labels[:, 2], concept=2), codes[:, 2])
    images = run.dataset.images(run.split["test"][:3])
    out = cvi.intervene(run.model, run.params, images, concept=0, value=codes[:, 0])
    assert out.shape == images.shape and out.dtype == np.uint8
