"""The Ladder VAE's loss (objectives/ladder_vae.py): its pieces and the loss against
float64 NumPy hand computations, the KL warm-up (also under jit and from the train
state's step), its weights' checks, and a tiny run of the `vae` stage end to end with
its metric card (configs/laddervae_dsprites_synth.py:tiny)."""

import json

import flax.linen as nn
import jax
import jax.numpy as jnp
import ml_collections
import numpy as np
import pytest

from causal_disent.data import registry
from causal_disent.models.ladder_vae import precision_weighted
from causal_disent.objectives import ladder_vae
from causal_disent.objectives import vae as vae_objectives
from causal_disent.runs import vae as vae_run
from causal_disent.train import stages, vae_stage
from configs import laddervae_dsprites_synth
from tests.helpers import check_tiny_vae_run
from tests.objectives.test_vae_objectives import BATCH, numpy_bernoulli_nll, numpy_kl

RNG = jax.random.key(7)


# --- pieces -----------------------------------------------------------------------

def numpy_gaussian_kl(q_mean, q_log_variance, p_mean, p_log_variance):
    """KL(N(μ_q, σ_q²) ‖ N(μ_p, σ_p²)) from its definition's terms, float64."""
    q_variance = np.exp(np.asarray(q_log_variance, np.float64))
    p_variance = np.exp(np.asarray(p_log_variance, np.float64))
    return (0.5 * np.log(p_variance / q_variance)
            + (q_variance + (np.asarray(q_mean, np.float64) - p_mean) ** 2)
            / (2.0 * p_variance) - 0.5)


def test_gaussian_kl_by_hand():
    q_mean = np.array([[0.5, -1.0, 2.0]], np.float32)
    q_log_variance = np.array([[0.0, np.log(0.5), -1.0]], np.float32)
    p_mean = np.array([[0.5, 1.0, -0.5]], np.float32)
    p_log_variance = np.array([[0.0, np.log(2.0), 0.7]], np.float32)
    kl = ladder_vae.gaussian_kl(q_mean, q_log_variance, p_mean, p_log_variance)
    np.testing.assert_allclose(kl, numpy_gaussian_kl(q_mean, q_log_variance, p_mean,
                                                     p_log_variance), rtol=1e-5)
    # A distribution against itself: 0; against N(0, 1): the family's standard KL.
    np.testing.assert_allclose(kl[0, 0], 0.0, atol=1e-7)
    np.testing.assert_allclose(
        ladder_vae.gaussian_kl(q_mean, q_log_variance, 0.0, 0.0),
        vae_objectives.gaussian_kl_to_standard_normal(q_mean, q_log_variance), rtol=1e-6)


@pytest.mark.parametrize("step, weight", [(0, 0.0), (1, 0.25), (3, 0.75), (4, 1.0),
                                          (100, 1.0)])
def test_warmup_weight_rises_linearly_to_one(step, weight):
    np.testing.assert_allclose(ladder_vae.kl_warmup_weight(jnp.int32(step), 4), weight,
                               rtol=1e-6)
    traced = jax.jit(lambda s: ladder_vae.kl_warmup_weight(s, 4))(jnp.int32(step))
    assert traced.dtype == jnp.float32
    np.testing.assert_allclose(traced, weight, rtol=1e-6)


def test_no_warmup_is_full_weight_from_the_start():
    np.testing.assert_allclose(ladder_vae.kl_warmup_weight(jnp.int32(0), 0), 1.0)


def test_layer_sums_split_bottom_layer_first():
    np.testing.assert_allclose(
        ladder_vae.layer_sums(jnp.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0]), (2, 3, 1)),
        [3.0, 12.0, 6.0])


# --- the loss on a stand-in with known parameters -----------------------------------

class LinearLadder(nn.Module):
    """A two-layer stand-in with LadderVAE's `ladder_pass` and known parameters: 2x2x1
    images, linear bottom-up estimates (2 latents below, 1 above), a linear top-down
    prior p(z_1 | z_2) and linear logits of z_1."""

    latent_sizes = (2, 1)
    num_latents = 3
    likelihood = "bernoulli"

    def setup(self):
        for name, shape in PARAMS_SHAPES.items():
            setattr(self, name, self.param(name, nn.initializers.zeros, shape))

    def ladder_pass(self, images, noise):
        x = images.reshape(images.shape[0], -1)
        top_mean, top_log_variance = x @ self.top_mean, x @ self.top_log_variance
        z_top = top_mean + jnp.exp(0.5 * top_log_variance) * noise[:, 2:]
        prior_mean, prior_log_variance = z_top @ self.prior_mean, z_top @ self.prior_log_variance
        mean, log_variance = precision_weighted(x @ self.bottom_mean,
                                                x @ self.bottom_log_variance, prior_mean,
                                                prior_log_variance)
        z_bottom = mean + jnp.exp(0.5 * log_variance) * noise[:, :2]
        zeros = jnp.zeros_like(top_mean)
        return {"posterior_mean": jnp.concatenate([mean, top_mean], axis=1),
                "posterior_log_variance": jnp.concatenate([log_variance, top_log_variance],
                                                          axis=1),
                "prior_mean": jnp.concatenate([prior_mean, zeros], axis=1),
                "prior_log_variance": jnp.concatenate([prior_log_variance, zeros], axis=1),
                "z": jnp.concatenate([z_bottom, z_top], axis=1),
                "logits": (z_bottom @ self.to_logits).reshape(-1, 2, 2, 1)}


PARAMS = {
    "bottom_mean": np.array([[1.0, 0.0], [0.0, -1.0], [0.5, 0.5], [0.0, 2.0]], np.float32),
    "bottom_log_variance": np.array([[0.2, 0.0], [0.0, -0.4], [0.1, 0.0], [0.0, 0.3]],
                                    np.float32),
    "top_mean": np.array([[0.5], [-1.0], [0.0], [1.5]], np.float32),
    "top_log_variance": np.array([[-0.3], [0.0], [0.4], [0.1]], np.float32),
    "prior_mean": np.array([[0.8, -0.6]], np.float32),
    "prior_log_variance": np.array([[0.5, -0.7]], np.float32),
    "to_logits": np.array([[1.0, -1.0, 0.5, 0.0], [0.0, 2.0, -0.5, 1.0]], np.float32),
}
PARAMS_SHAPES = {name: value.shape for name, value in PARAMS.items()}


def numpy_ladder_loss(beta, weight, rng=RNG):
    """By hand, in float64, on BATCH: (loss, per-layer KL [2], reconstruction), the
    posterior of z_1 as the normalised product of its two Gaussians."""
    p = {name: value.astype(np.float64) for name, value in PARAMS.items()}
    x = BATCH["image"].reshape(2, 4).astype(np.float64) / 255.0
    noise = np.asarray(jax.random.normal(rng, (2, 3)), np.float64)
    top_mean, top_log_variance = x @ p["top_mean"], x @ p["top_log_variance"]
    z_top = top_mean + np.exp(0.5 * top_log_variance) * noise[:, 2:]
    prior_mean, prior_variance = z_top @ p["prior_mean"], np.exp(z_top @ p["prior_log_variance"])
    likelihood_mean = x @ p["bottom_mean"]
    likelihood_variance = np.exp(x @ p["bottom_log_variance"])
    variance = 1.0 / (1.0 / likelihood_variance + 1.0 / prior_variance)
    mean = variance * (likelihood_mean / likelihood_variance + prior_mean / prior_variance)
    z_bottom = mean + np.sqrt(variance) * noise[:, :2]
    reconstruction = numpy_bernoulli_nll(z_bottom @ p["to_logits"], x).mean()
    kl_bottom = numpy_gaussian_kl(mean, np.log(variance), prior_mean, np.log(prior_variance))
    kl_top = numpy_kl(top_mean, top_log_variance)
    kl_per_layer = np.array([kl_bottom.sum(axis=1).mean(), kl_top.sum(axis=1).mean()])
    return reconstruction + beta * weight * kl_per_layer.sum(), kl_per_layer, reconstruction


@pytest.mark.parametrize("step, weight", [(0, 0.0), (3, 0.3), (10, 1.0), (25, 1.0)])
def test_ladder_vae_loss_equals_the_hand_computation(step, weight):
    beta = 2.0
    loss, metrics = ladder_vae.ladder_vae_loss(PARAMS, BATCH, RNG, model=LinearLadder(),
                                               beta=beta, warmup_steps=10,
                                               step=jnp.int32(step))
    want, kl_per_layer, reconstruction = numpy_ladder_loss(beta, weight)
    np.testing.assert_allclose(metrics["kl_weight"], weight, rtol=1e-6)
    np.testing.assert_allclose(metrics["reconstruction"], reconstruction, rtol=1e-5)
    np.testing.assert_allclose(metrics["kl_per_layer"], kl_per_layer, rtol=1e-5)
    np.testing.assert_allclose(metrics["kl"], kl_per_layer.sum(), rtol=1e-5)
    np.testing.assert_allclose(metrics["kl_per_latent"][2], kl_per_layer[1], rtol=1e-5)
    np.testing.assert_allclose(metrics["elbo"], -(reconstruction + kl_per_layer.sum()),
                               rtol=1e-5)
    np.testing.assert_allclose(loss, want, rtol=1e-5)


# --- the loss on the tiny LadderVAE --------------------------------------------------

@pytest.fixture(scope="module")
def tiny_model_state_and_batch():
    config = laddervae_dsprites_synth.get_config("tiny")
    dataset = registry.dataset_from_config(config.data)
    model = vae_run.build_model(config, dataset)
    state = vae_run.create_state(model, dataset.image_shape, jax.random.key(0),
                                 vae_run.optimizer(config.vae.optim))
    return config, model, state, {"image": dataset.images(np.arange(4))}


def test_loss_of_the_tiny_ladder_is_its_pass_scored_by_hand(tiny_model_state_and_batch):
    _, model, state, batch = tiny_model_state_and_batch
    loss, metrics = ladder_vae.ladder_vae_loss(state.params, batch, RNG, model=model,
                                               beta=3.0, warmup_steps=0, step=jnp.int32(0))
    images = batch["image"] / np.float32(255.0)
    outputs = model.apply({"params": state.params}, images,
                          jax.random.normal(RNG, (4, model.num_latents)),
                          method=model.ladder_pass)
    outputs = {name: np.asarray(value, np.float64) for name, value in outputs.items()}
    kl = numpy_gaussian_kl(outputs["posterior_mean"], outputs["posterior_log_variance"],
                           outputs["prior_mean"], outputs["prior_log_variance"]).mean(axis=0)
    reconstruction = numpy_bernoulli_nll(outputs["logits"], images).mean()
    np.testing.assert_allclose(metrics["kl_per_latent"], kl, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(metrics["kl_per_layer"], [kl[:2].sum(), kl[2]], rtol=1e-4)
    np.testing.assert_allclose(metrics["reconstruction"], reconstruction, rtol=1e-5)
    np.testing.assert_allclose(loss, reconstruction + 3.0 * kl.sum(), rtol=1e-5)


@pytest.fixture(scope="module")
def tiny_stage_step(tiny_model_state_and_batch):
    """The stage's jitted step on the bound loss, compiled once for the module."""
    config, model, _, _ = tiny_model_state_and_batch
    loss_fn = vae_objectives.bind_loss(config.vae.objective, model)
    return jax.jit(lambda s, b, r: vae_stage.vae_train_step(s, b, r, loss_fn=loss_fn))


@pytest.mark.parametrize("step, weight", [(0, 0.0), (1, 0.5), (2, 1.0), (7, 1.0)])
def test_the_stage_step_reads_the_warmup_step_from_the_state(tiny_model_state_and_batch,
                                                            tiny_stage_step, step, weight):
    config, _, state, batch = tiny_model_state_and_batch
    assert config.vae.objective.warmup_steps == 2
    _, metrics = tiny_stage_step(state.replace(step=jnp.int32(step)), batch,
                                 jax.random.key(1))
    np.testing.assert_allclose(metrics["kl_weight"], weight, rtol=1e-6)
    assert metrics["kl_per_layer"].shape == (2,)


# --- weights ----------------------------------------------------------------------

def test_the_ladder_loss_is_listed_with_its_weights_and_takes_the_step():
    assert vae_objectives.LOSSES["ladder_vae"] is ladder_vae.ladder_vae_loss
    assert vae_objectives.loss_weight_names("ladder_vae") == ("beta", "warmup_steps")
    bound = vae_objectives.bind_loss(ml_collections.ConfigDict(
        {"name": "ladder_vae", "beta": 1.0, "warmup_steps": 10}), LinearLadder())
    assert vae_objectives.takes_argument(bound, "step")
    with pytest.raises(ValueError, match=r"^vae.objective.warmup_steps must be >= 0, got -1$"):
        vae_objectives.check_objective_config(ml_collections.ConfigDict(
            {"name": "ladder_vae", "beta": 1.0, "warmup_steps": -1}))


# --- a tiny run -------------------------------------------------------------------

@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("ladder_vae")
    return workdir, stages.run(laddervae_dsprites_synth.get_config("tiny"), workdir)


def test_tiny_run_end_to_end_logs_the_layers_and_the_warmup(tiny_run):
    workdir, results = tiny_run
    saved = json.loads((workdir / "results.json").read_text())["vae"]
    assert saved == json.loads(json.dumps(results["vae"]))
    rows = check_tiny_vae_run(workdir, saved,
                              {"name": "ladder_vae", "beta": 1.0, "warmup_steps": 2},
                              ("loss", "kl", "kl_weight"))
    assert (workdir / "figures" / "vae_reconstructions.png").stat().st_size > 0
    # Row n is the step from state.step = n − 1: w = 0, ½, 1, 1.
    np.testing.assert_allclose([row["kl_weight"] for row in rows], [0.0, 0.5, 1.0, 1.0])
    for row in rows:
        assert len(row["kl_per_layer"]) == 2 and len(row["kl_per_latent"]) == 3
        np.testing.assert_allclose(sum(row["kl_per_layer"]), row["kl"], rtol=1e-4)


def test_metric_card_of_the_tiny_run_scores_both_layers_posterior_means(tiny_run):
    from causal_disent.evaluation import card, representations, trained_runs

    workdir, _ = tiny_run
    mesh = stages.make_data_mesh()
    run = trained_runs.open_run(workdir, mesh, batch_size=8)
    assert run.family == "vae" and list(run.representations) == ["encoder_mean"]
    images = run.dataset.images(np.arange(3))
    codes = run.representations["encoder_mean"](images)
    model, params = vae_run.load_trained(run.config, workdir, mesh, run.dataset)
    assert type(model).__name__ == "LadderVAE" and codes.shape == (3, 3)
    mean, _ = model.apply({"params": params}, images / 255.0, method=model.encode)
    np.testing.assert_allclose(codes, mean, rtol=1e-5, atol=1e-6)
    cached = representations.CachedCodes(run.dataset, run.representations["encoder_mean"])
    scored = card.metric_card(run.dataset, cached, ["mig"], num_samples=30)
    assert set(scored["metrics"]) == {"mig"}
