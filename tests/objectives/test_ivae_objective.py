"""The iVAE's losses (objectives/ivae.py) against float64 NumPy hand computations on
linear stand-ins, the KL between diagonal Gaussians, the loss = β-VAE's under a
N(0, I) prior, the missing auxiliary variable refused (by the loss, and by the
stage before compiling), a `:tiny` run end to end, and the identifiability
benchmark's core at a tiny size."""

import dataclasses
import importlib

import flax.linen as nn
import jax
import jax.numpy as jnp
import ml_collections
import numpy as np
import pytest

from causal_disent.data import registry
from causal_disent.objectives import ivae as ivae_objectives
from causal_disent.objectives import vae as vae_objectives
from causal_disent.runs import vae as vae_run
from causal_disent.train import stages, vae_stage
from configs import betavae_dsprites_synth, ivae_dsprites_synth
from tests.helpers import check_card_encodes_the_encoder_mean, check_tiny_vae_run
from tests.objectives.test_vae_objectives import (
    BATCH,
    LOG_VARIANCE,
    MEAN,
    PARAMS,
    LinearVAE,
    numpy_bernoulli_nll,
)

RNG = jax.random.key(5)
U = np.array([[0.0, 1.0, 0.0], [1.0, 0.0, 0.0]], np.float32)  # one-hot, n = 3
PRIOR_PARAMS = {
    "to_prior_mean": np.array([[0.5, -1.0], [0.0, 2.0], [1.0, 1.0]], np.float32),
    "to_prior_log_variance": np.array([[0.3, 0.0], [-0.5, 1.0], [0.0, 0.0]], np.float32),
}


def numpy_gaussian_kl(mean_q, log_variance_q, mean_p, log_variance_p):
    """KL(N(μ_q, σ_q²) ‖ N(μ_p, σ_p²)) in float64, from the variances."""
    var_q = np.exp(np.asarray(log_variance_q, np.float64))
    var_p = np.exp(np.asarray(log_variance_p, np.float64))
    difference = np.asarray(mean_q, np.float64) - np.asarray(mean_p, np.float64)
    return 0.5 * (np.log(var_p / var_q) + (var_q + difference**2) / var_p - 1.0)


def test_gaussian_kl_by_hand_and_against_the_standard_normal_one():
    mean_p = np.array([[1.0, -1.0], [0.0, 2.0]], np.float32)
    log_variance_p = np.array([[np.log(4.0), 0.0], [-1.0, 0.5]], np.float32)
    np.testing.assert_allclose(
        ivae_objectives.gaussian_kl(MEAN, LOG_VARIANCE, mean_p, log_variance_p),
        numpy_gaussian_kl(MEAN, LOG_VARIANCE, mean_p, log_variance_p), rtol=1e-6)
    # KL(N(0, 1) ‖ N(1, 4)) = ½(log 4 + (1 + 1) / 4 − 1).
    np.testing.assert_allclose(
        ivae_objectives.gaussian_kl(0.0, 0.0, 1.0, np.log(4.0)),
        0.5 * (np.log(4.0) + 0.5 - 1.0), rtol=1e-6)
    # Against N(0, I) it is the VAE family's KL; against itself, 0.
    np.testing.assert_allclose(
        ivae_objectives.gaussian_kl(MEAN, LOG_VARIANCE, 0.0, 0.0),
        vae_objectives.gaussian_kl_to_standard_normal(MEAN, LOG_VARIANCE), rtol=1e-6)
    np.testing.assert_allclose(
        ivae_objectives.gaussian_kl(MEAN, LOG_VARIANCE, MEAN, LOG_VARIANCE), 0.0, atol=1e-7)


def test_gaussian_nll_by_hand():
    x = np.array([[1.0, -2.0], [0.0, 0.5]], np.float32)
    mean = np.array([[0.5, -2.0], [1.0, 0.0]], np.float32)
    variance = 0.1
    by_hand = (0.5 * ((x - mean) ** 2 / variance + np.log(2 * np.pi * variance))).sum(axis=1)
    np.testing.assert_allclose(ivae_objectives.gaussian_nll(x, mean, variance), by_hand,
                               rtol=1e-6)


class LinearIVAE(LinearVAE):
    """LinearVAE with a linear prior on u: (μ(u), log λ(u)) = (u·P, u·Q)."""

    def setup(self):
        super().setup()
        self.to_prior_mean = self.param("to_prior_mean", nn.initializers.zeros, (3, 2))
        self.to_prior_log_variance = self.param("to_prior_log_variance",
                                                nn.initializers.zeros, (3, 2))

    def prior(self, auxiliary):
        return auxiliary @ self.to_prior_mean, auxiliary @ self.to_prior_log_variance


def test_ivae_loss_equals_the_hand_computation():
    beta = 2.5
    loss, metrics = ivae_objectives.ivae_loss(
        {**PARAMS, **PRIOR_PARAMS}, {**BATCH, "auxiliary": U}, RNG, model=LinearIVAE(),
        beta=beta)
    # By hand: x in [0, 1], (μ, log σ²) = x·W, z = μ + σ·ε with the loss's noise,
    # logits = z·V, prior (u·P, u·Q); per image Σ BCE and Σ_j KL_j; batch means.
    x = BATCH["image"].reshape(2, 4).astype(np.float64) / 255.0
    mean, log_variance = x @ PARAMS["to_mean"], x @ PARAMS["to_log_variance"]
    noise = np.asarray(jax.random.normal(RNG, (2, 2)), np.float64)
    z = mean + np.exp(0.5 * log_variance) * noise
    reconstruction = numpy_bernoulli_nll(z @ PARAMS["to_logits"], x).mean()
    kl_per_latent = numpy_gaussian_kl(mean, log_variance, U @ PRIOR_PARAMS["to_prior_mean"],
                                      U @ PRIOR_PARAMS["to_prior_log_variance"]).mean(axis=0)
    np.testing.assert_allclose(metrics["reconstruction"], reconstruction, rtol=1e-5)
    np.testing.assert_allclose(metrics["kl_per_latent"], kl_per_latent, rtol=1e-5)
    np.testing.assert_allclose(metrics["kl"], kl_per_latent.sum(), rtol=1e-5)
    np.testing.assert_allclose(metrics["elbo"], -(reconstruction + kl_per_latent.sum()),
                               rtol=1e-5)
    np.testing.assert_allclose(loss, reconstruction + beta * kl_per_latent.sum(), rtol=1e-5)
    assert set(metrics) == {"reconstruction", "kl", "kl_per_latent", "elbo"}


def test_ivae_loss_under_a_standard_normal_prior_is_the_beta_vae_loss():
    zero_prior = jax.tree.map(np.zeros_like, PRIOR_PARAMS)
    ours, our_metrics = ivae_objectives.ivae_loss(
        {**PARAMS, **zero_prior}, {**BATCH, "auxiliary": U}, RNG, model=LinearIVAE(),
        beta=3.0)
    theirs, their_metrics = vae_objectives.beta_vae_loss(PARAMS, BATCH, RNG,
                                                         model=LinearVAE(), beta=3.0)
    np.testing.assert_allclose(ours, theirs, rtol=1e-6)
    jax.tree.map(lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-6),
                 our_metrics, their_metrics)


def test_ivae_loss_refuses_a_batch_without_u():
    with pytest.raises(ValueError, match=r"the 'ivae' loss needs the observed auxiliary "
                                         r"variable u, batch\['auxiliary'\]: set "
                                         r"vae.auxiliary.factor"):
        ivae_objectives.ivae_loss({**PARAMS, **PRIOR_PARAMS}, BATCH, RNG, model=LinearIVAE(),
                                  beta=1.0)


class LinearVectorIVAE(nn.Module):
    """A vector stand-in: x [B, 3], u [B, 2]; (μ, log σ²) = [x, u]·(E, F), g(z) = z·G,
    prior (u·P, u·Q), decoder variance 0.2."""

    decoder_variance = 0.2

    def setup(self):
        for name, shape in (("E", (5, 2)), ("F", (5, 2)), ("G", (2, 3)), ("P", (2, 2)),
                            ("Q", (2, 2))):
            setattr(self, name, self.param(name, nn.initializers.zeros, shape))

    def encode(self, x, auxiliary):
        inputs = jnp.concatenate([x, auxiliary], axis=-1)
        return inputs @ self.E, inputs @ self.F

    def decode(self, latents):
        return latents @ self.G

    def prior(self, auxiliary):
        return auxiliary @ self.P, auxiliary @ self.Q


def test_vector_ivae_loss_equals_the_hand_computation():
    rng = np.random.default_rng(0)
    params = {name: rng.normal(scale=0.5, size=shape).astype(np.float32) for name, shape in
              (("E", (5, 2)), ("F", (5, 2)), ("G", (2, 3)), ("P", (2, 2)), ("Q", (2, 2)))}
    batch = {"x": rng.normal(size=(4, 3)).astype(np.float32),
             "auxiliary": np.eye(2, dtype=np.float32)[[0, 1, 1, 0]]}
    beta = 1.5
    loss, metrics = ivae_objectives.vector_ivae_loss(params, batch, RNG,
                                                     model=LinearVectorIVAE(), beta=beta)
    p = {name: value.astype(np.float64) for name, value in params.items()}
    inputs = np.hstack([batch["x"], batch["auxiliary"]]).astype(np.float64)
    mean, log_variance = inputs @ p["E"], inputs @ p["F"]
    z = mean + np.exp(0.5 * log_variance) * np.asarray(jax.random.normal(RNG, (4, 2)))
    residual = batch["x"] - z @ p["G"]
    reconstruction = (0.5 * (residual**2 / 0.2 + np.log(2 * np.pi * 0.2))).sum(axis=1).mean()
    u = batch["auxiliary"].astype(np.float64)
    kl = numpy_gaussian_kl(mean, log_variance, u @ p["P"], u @ p["Q"]).sum(axis=1).mean()
    np.testing.assert_allclose(metrics["reconstruction"], reconstruction, rtol=1e-5)
    np.testing.assert_allclose(metrics["kl"], kl, rtol=1e-5)
    np.testing.assert_allclose(loss, reconstruction + beta * kl, rtol=1e-5)
    with pytest.raises(ValueError, match="set vae.auxiliary.factor"):
        ivae_objectives.vector_ivae_loss(params, {"x": batch["x"]}, RNG,
                                         model=LinearVectorIVAE(), beta=beta)


def numpy_log_normal(x, mean, variance):
    return -0.5 * (np.log(2 * np.pi) + np.log(variance) + (x - mean) ** 2 / variance)


@pytest.mark.parametrize("weights", [(100.0, 1.0, 0.0, 10.0), (1.0, 1.0, 1.0, 1.0)])
def test_weighted_vector_ivae_loss_is_the_authors_elbo(weights):
    """cleanIVAE.elbo of the iVAE authors (ilkhem/iVAE, models/nets.py) written out in
    float64 NumPy: their configs' weights, and all ones (the sampled negative ELBO)."""
    from scipy.special import logsumexp

    rng = np.random.default_rng(1)
    params = {name: rng.normal(scale=0.5, size=shape).astype(np.float32) for name, shape in
              (("E", (5, 2)), ("F", (5, 2)), ("G", (2, 3)), ("P", (2, 2)), ("Q", (2, 2)))}
    batch = {"x": rng.normal(size=(6, 3)).astype(np.float32),
             "auxiliary": np.eye(2, dtype=np.float32)[[0, 1, 1, 0, 1, 0]]}
    loss, metrics = ivae_objectives.vector_ivae_weighted_loss(
        params, batch, RNG, model=LinearVectorIVAE(), weights=weights, dataset_size=50)
    p = {name: value.astype(np.float64) for name, value in params.items()}
    inputs = np.hstack([batch["x"], batch["auxiliary"]]).astype(np.float64)
    g, v = inputs @ p["E"], np.exp(inputs @ p["F"])
    z = g + np.sqrt(v) * np.asarray(jax.random.normal(RNG, (6, 2)), np.float64)
    u = batch["auxiliary"].astype(np.float64)
    log_px = numpy_log_normal(batch["x"], z @ p["G"], 0.2).sum(axis=-1)
    log_qz_given_xu = numpy_log_normal(z, g, v).sum(axis=-1)
    log_pz_given_u = numpy_log_normal(z, u @ p["P"], np.exp(u @ p["Q"])).sum(axis=-1)
    pairs = numpy_log_normal(z[:, None], g[None], v[None])  # [i, j, k]
    log_qz = logsumexp(pairs.sum(axis=-1), axis=1) - np.log(6 * 50)
    log_qz_product = (logsumexp(pairs, axis=1) - np.log(6 * 50)).sum(axis=-1)
    a, b, c, d = weights
    want = -(a * log_px - b * (log_qz_given_xu - log_qz) - c * (log_qz - log_qz_product)
             - d * (log_qz_product - log_pz_given_u)).mean()
    np.testing.assert_allclose(loss, want, rtol=1e-5)
    np.testing.assert_allclose(metrics["reconstruction"], -log_px.mean(), rtol=1e-5)
    np.testing.assert_allclose(metrics["mi"] + metrics["tc"] + metrics["dimension_wise_kl"],
                               (log_qz_given_xu - log_pz_given_u).mean(), rtol=1e-5, atol=1e-5)


def test_ivae_is_a_loss_of_the_family_with_one_weight():
    assert vae_objectives.LOSSES["ivae"] is ivae_objectives.ivae_loss
    assert vae_objectives.loss_weight_names("ivae") == ("beta",)
    objective = ml_collections.ConfigDict({"name": "ivae", "beta": 2.0})
    bound = vae_objectives.bind_loss(objective, LinearIVAE(), dataset_size=10)
    want, _ = ivae_objectives.ivae_loss({**PARAMS, **PRIOR_PARAMS},
                                        {**BATCH, "auxiliary": U}, RNG, model=LinearIVAE(),
                                        beta=2.0)
    np.testing.assert_allclose(bound({**PARAMS, **PRIOR_PARAMS}, {**BATCH, "auxiliary": U},
                                     RNG)[0], want, rtol=1e-6)


# --- the stage: refused configs, one step, a tiny run ------------------------------

def drop_auxiliary(config):
    del config.vae["auxiliary"]


@pytest.mark.parametrize("make_config, override, message", [
    (ivae_dsprites_synth.get_config, drop_auxiliary,
     r"vae.auxiliary.factor is missing: the 'ivae' loss conditions its prior on an "
     r"observed auxiliary variable u; set it to one of dsprites_synth's factors \(shape, "),
    (ivae_dsprites_synth.get_config,
     lambda c: setattr(c.vae.auxiliary, "factor", "colour"),
     "vae.auxiliary.factor 'colour' is not a factor of dsprites_synth"),
    (ivae_dsprites_synth.get_config, lambda c: setattr(c.vae.model, "prior_hidden", 0),
     "vae.model.prior_hidden must be positive, got 0"),
    (betavae_dsprites_synth.get_config,
     lambda c: setattr(c.vae, "auxiliary", ml_collections.ConfigDict({"factor": "shape"})),
     "vae.auxiliary is set but the 'beta_vae' loss's model uses no auxiliary variable"),
])
def test_bad_ivae_config_fails_before_compiling(make_config, override, message, tmp_path):
    config = make_config("tiny")
    override(config)
    with pytest.raises(stages.InvalidRunError, match=message):
        stages.validate(config, tmp_path, stages.make_data_mesh())
    assert not (tmp_path / "checkpoints").exists()


def test_one_step_trains_the_prior_on_the_batchs_u():
    config = ivae_dsprites_synth.get_config("tiny")
    dataset = registry.dataset_from_config(config.data)
    model = vae_run.build_model(config, dataset)
    state = vae_run.create_state(model, dataset.image_shape, jax.random.key(0),
                                 vae_run.optimizer(config.vae.optim))
    indices = np.arange(0, 737_280, 737_280 // 8)  # all three shapes
    u = vae_run.auxiliary_variable(config, dataset)(indices)
    np.testing.assert_array_equal(u.argmax(axis=1),
                                  dataset.index_to_factors(indices)[:, 0])  # shape
    batch = {"image": dataset.images(indices), "auxiliary": u}
    loss_fn = vae_objectives.bind_loss(config.vae.objective, model)
    new_state, metrics = jax.jit(
        lambda s, b, r: vae_stage.vae_train_step(s, b, r, loss_fn=loss_fn))(
        state, batch, jax.random.key(1))
    (loss, _), grads = jax.value_and_grad(loss_fn, has_aux=True)(
        state.params, batch, jax.random.fold_in(jax.random.key(1), 0))
    np.testing.assert_allclose(metrics["loss"], loss, rtol=1e-5)
    # The KL to p(z | u) reaches the prior network: it moves with the encoder and decoder.
    for group in ("encoder", "decoder", "conditional_prior"):
        moved = jax.tree.map(lambda new, old: float(np.abs(new - old).max()),
                             new_state.params[group], state.params[group])
        assert max(jax.tree.leaves(moved)) > 0.5 * config.vae.optim.learning_rate, group
    prior_output = grads["conditional_prior"]["log_variance"]["output"]["kernel"]
    assert float(jnp.abs(prior_output).sum()) > 0


@pytest.fixture(scope="module")
def tiny_ivae_run(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("ivae")
    return workdir, stages.run(ivae_dsprites_synth.get_config("tiny"), workdir)


def test_tiny_ivae_run_end_to_end_and_its_metric_card(tiny_ivae_run):
    workdir, results = tiny_ivae_run
    check_tiny_vae_run(workdir, results["vae"], {"name": "ivae", "beta": 1.0},
                       ("loss", "reconstruction", "kl", "elbo"))
    # The card encodes images alone: the encoder mean of q(z | x), no u needed.
    check_card_encodes_the_encoder_mean(workdir, {"encoder", "decoder", "conditional_prior"})


# --- the identifiability benchmark's core, at a tiny size ----------------------------

def load_benchmark():
    """benchmarks/ivae_identifiability.py (a script folder; the repository root is on
    sys.path, tests/conftest.py)."""
    return importlib.import_module("benchmarks.ivae_identifiability")


AUTHORS_NETWORK = dict(activation="xtanh", encoder_heads="separate", dense_init="torch")
# The authors' data, objective and schedule besides (a few epochs of it).
AUTHORS_SETUP = dict(AUTHORS_NETWORK, matrices="uniform_lower_quartile",
                     mixing_activation="xtanh", mixing_slope=0.1, repeat_matrix=True,
                     loss_weights="100,1,0,10", learning_rate=0.01, epochs=3,
                     plateau_factor=0.1)


@pytest.mark.parametrize("network", [{}, AUTHORS_NETWORK, AUTHORS_SETUP],
                         ids=["ours", "authors_network", "authors_setup"])
def test_identifiability_benchmark_core_runs_at_a_tiny_size(network):
    benchmark = load_benchmark()
    settings = benchmark.Settings(num_sources=2, num_segments=5, points_per_segment=40,
                                  num_layers=2, hidden=8, num_hidden_layers=1, batch_size=16,
                                  steps=4, steps_per_call=4, **network)
    result = benchmark.trial(0, settings)
    assert set(result) == {"ivae", "vae", "rotation"}  # no linear-mixing gap at L = 2
    for name in benchmark.MODELS:
        assert 0.0 <= result[name]["mcc"] <= 1.0 and np.isfinite(result[name]["final_loss"])
        assert 0.0 <= result[name]["mcc_of_samples"] <= 1.0
        assert result[name]["seconds"] > 0
        if "epochs" in network:  # each epoch's rate: 0.01, then 0.01 or 0.001
            rates = result[name]["learning_rates"]
            assert len(rates) == 3 and rates[0] == 0.01 and set(rates) <= {0.01, 0.001, 1e-4}
    assert 0.0 <= result["rotation"]["mcc"] <= 1.0


def test_posterior_samples_have_the_encoders_mean_and_variance():
    mean = np.tile([[1.0, -2.0, 0.0]], (200_000, 1))
    log_variance = np.log(np.tile([[0.25, 4.0, 1e-12]], (200_000, 1)))
    sampled = load_benchmark().posterior_samples(mean, log_variance, np.random.default_rng(0))
    np.testing.assert_allclose(sampled.mean(axis=0), [1.0, -2.0, 0.0], atol=0.01)
    np.testing.assert_allclose(sampled.std(axis=0), [0.5, 2.0, 1e-6], rtol=0.01)


def test_the_plateau_schedule_is_pytorchs_with_patience_0():
    schedule = load_benchmark().PlateauSchedule(0.01, factor=0.1)
    # Better (the first always is), then a loss within 1e-4 of the best (not better:
    # the rate falls), better again, then worse twice (it falls each time).
    rates = [schedule.step(loss) for loss in (5.0, 4.9996, 4.0, 4.5, 4.2)]
    np.testing.assert_allclose(rates, [0.01, 0.001, 0.001, 1e-4, 1e-5])
    # A negative best: "below best·(1 − 1e-4)" lets a loss a little above it count.
    negative = load_benchmark().PlateauSchedule(0.01, factor=0.1)
    assert [negative.step(loss) for loss in (-600.0, -599.99, -599.0)] == [0.01, 0.01, 0.001]


def test_identifiability_benchmark_summary_and_arguments():
    benchmark = load_benchmark()
    trials = [{"ivae": {"mcc": mcc, "mcc_of_samples": mcc - 0.2, "seconds": 2.0},
               "vae": {"mcc": 0.5, "mcc_of_samples": 0.4, "seconds": 1.0},
               "rotation": {"mcc": 0.6, "seconds": 0.0}} for mcc in (0.9, 0.7)]
    summary = benchmark.summarise(trials)
    assert list(summary) == ["ivae", "vae", "rotation"]
    assert summary["ivae"] == pytest.approx({"mcc_mean": 0.8, "mcc_std": 0.1, "mcc_min": 0.7,
                                             "mcc_max": 0.9, "seconds_mean": 2.0,
                                             "mcc_of_samples_mean": 0.6,
                                             "mcc_of_samples_std": 0.1})
    assert "mcc_of_samples_mean" not in summary["rotation"]
    assert summary["vae"]["mcc_std"] == 0.0
    parsed, seeds = benchmark.parse_settings(["--seeds=2", "--steps=7",
                                              "--matrices=lower_quartile"])
    assert seeds == [0, 1] and parsed.steps == 7 and parsed.matrices == "lower_quartile"
    assert parsed.num_segments == benchmark.Settings().num_segments
    assert (parsed.prior_mean, parsed.prior_hidden_layers) == ("zero", 2)  # the authors'
    with pytest.raises(SystemExit, match="error: --prior_hidden_layers must be 1 with "
                                         "prior_mean 'learned'"):
        benchmark.parse_settings(["--prior_mean=learned"])
    with pytest.raises(SystemExit, match=r"error: --activation must be one of \('leaky_relu', "):
        benchmark.parse_settings(["--activation=relu"])
    with pytest.raises(SystemExit, match=r"error: --mixing_activation 'relu' is unknown; "
                                         r"known: leaky_relu, xtanh"):
        benchmark.parse_settings(["--mixing_activation=relu"])
    with pytest.raises(SystemExit, match=r"error: --loss_weights must be four numbers "
                                         r"a,b,c,d \(the authors': 100,1,0,10\), got '1,2'"):
        benchmark.parse_settings(["--loss_weights=1,2"])
    with pytest.raises(SystemExit, match=r"error: --steps=0 --epochs=0 train nothing"):
        benchmark.parse_settings(["--steps=0"])
    with pytest.raises(SystemExit, match=r"error: --batch_size=0: give 1 or more"):
        benchmark.parse_settings(["--batch_size=0"])
    parsed, _ = benchmark.parse_settings(["--repeat_matrix=true", "--loss_weights=100,1,0,10"])
    assert parsed.repeat_matrix is True and benchmark.loss_weights(parsed) == (100, 1, 0, 10)
    assert benchmark.parse_settings(["--repeat_matrix=false"])[0].repeat_matrix is False


def test_mean_field_gap_vanishes_for_orthogonal_mixing_only():
    from causal_disent.data import nonlinear_ica

    benchmark = load_benchmark()
    data = nonlinear_ica.make_nonlinear_ica(seed=0, num_sources=2, num_segments=3,
                                            points_per_segment=2, num_layers=1)
    assert abs(benchmark.linear_mean_field_gap(data, 0.01)) < 1e-9
    # Columns at 60°: Λ = WᵀW / σ² + diag(1 / σ_m²) has off-diagonal cos 60° / σ², and
    # the gap is ½ log(Λ11·Λ22 / det Λ), averaged over the segments.
    weight = np.array([[1.0, 0.5], [0.0, np.sqrt(0.75)]])
    skewed = dataclasses.replace(data, weights=(weight,))
    gaps = []
    for stds in data.stds:
        precision = weight.T @ weight / 0.01 + np.diag(1 / stds**2)
        gaps.append(0.5 * np.log(precision[0, 0] * precision[1, 1]
                                 / np.linalg.det(precision)))
    np.testing.assert_allclose(benchmark.linear_mean_field_gap(skewed, 0.01), np.mean(gaps),
                               rtol=1e-9)
    assert np.mean(gaps) > 0.1
    with pytest.raises(ValueError, match="needs linear mixing"):
        benchmark.linear_mean_field_gap(dataclasses.replace(data, weights=(weight, weight)),
                                        0.01)
