"""The `vae` stage (β-VAE): one step is an Adam step on the bound loss, a tiny run end
to end (results, figure, rerun skipped), its metric card, and bad configs refused
before compiling; a tiny run with Gaussian pixels on colour images; the later models' step (AnnealedVAE's step from the state), a
tiny β-TCVAE run, and FactorVAE's step (both networks, each by its own Adam), tiny
run and metric card. Tiny networks (configs/*_dsprites_synth.py:tiny)."""

import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from PIL import Image

from causal_disent.data import registry
from causal_disent.evaluation import vae_evaluation
from causal_disent.objectives.vae import bind_loss
from causal_disent.runs import metrics_log
from causal_disent.runs import vae as vae_run
from causal_disent.train import image_stages, runner, stages, vae_stage
from causal_disent.train.state import train_step
from configs import (
    annealedvae_dsprites_synth,
    betatcvae_dsprites_synth,
    betavae_dsprites_synth,
    betavae_shapes3d_synth,
    factorvae_dsprites_synth,
)
from tests.helpers import check_card_encodes_the_encoder_mean, check_tiny_vae_run


def tiny_config():
    return betavae_dsprites_synth.get_config("tiny")


def test_one_step_is_an_adam_step_on_the_bound_beta_vae_loss():
    config = tiny_config()
    dataset = registry.dataset_from_config(config.data)
    model = vae_run.build_model(config, dataset)
    state = vae_run.create_state(model, dataset.image_shape, jax.random.key(0),
                                 vae_run.optimizer(config.vae.optim))
    batch = {"image": dataset.images(np.arange(4))}
    loss_fn = bind_loss(config.vae.objective, model)
    new_state, metrics = jax.jit(lambda s, b, r: train_step(s, b, r, loss_fn=loss_fn))(
        state, batch, jax.random.key(1))
    # The step's sample is drawn from fold_in(rng, step).
    (loss, terms), grads = jax.value_and_grad(loss_fn, has_aux=True)(
        state.params, batch, jax.random.fold_in(jax.random.key(1), 0))
    np.testing.assert_allclose(metrics["loss"], loss, rtol=1e-5)
    np.testing.assert_allclose(metrics["kl_per_latent"], terms["kl_per_latent"], rtol=1e-5)
    lr, eps = config.vae.optim.learning_rate, config.vae.optim.eps
    # Adam's first step from zero moments is −lr·g / (|g| + eps).
    expected = jax.tree.map(lambda p, g: p - lr * g / (np.abs(g) + eps), state.params, grads)
    jax.tree.map(lambda new, want: np.testing.assert_allclose(new, want, atol=1e-7),
                 new_state.params, expected)


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("vae")
    return workdir, stages.run(tiny_config(), workdir)


def test_tiny_end_to_end_run_writes_results_and_figure(tiny_run):
    workdir, results = tiny_run
    saved = json.loads((workdir / "results.json").read_text())["vae"]
    assert saved == json.loads(json.dumps(results["vae"]))
    assert saved["steps"] == 4 and saved["num_images"] == 20
    assert saved["objective"] == {"name": "beta_vae", "beta": 4.0}
    for key in ("test_bce", "test_mse", "test_kl"):
        assert np.isfinite(saved[key]), key
    assert 0 <= saved["test_mse"] <= 1 and saved["test_bce"] > 0
    assert saved["test_nll"] == saved["test_bce"]  # Bernoulli pixels
    assert len(saved["test_kl_per_latent"]) == 3
    np.testing.assert_allclose(sum(saved["test_kl_per_latent"]), saved["test_kl"], atol=1e-3)
    assert (workdir / "figures" / "vae_reconstructions.png").stat().st_size > 0
    with Image.open(workdir / "figures" / "vae_traversals.png") as traversals:
        assert traversals.height > 3 * 64 and traversals.width > 3 * 7 * 64  # 3 latents
    rows = metrics_log.read_rows(workdir, validation=False)  # training rows
    assert [row["step"] for row in rows] == [1, 2, 3, 4]
    for row in rows:
        assert {"loss", "reconstruction", "kl", "kl_per_latent", "elbo"} <= set(row)
        assert np.isfinite(row["loss"])
    # The learning curve: test NLL, BCE, MSE and KL on 8 test images every 2 steps.
    validation = metrics_log.read_rows(workdir, validation=True)
    assert [row["step"] for row in validation] == [0, 2, 4] == [
        point["step"] for point in saved["curve"]]
    assert all(set(row) == {"stage", "step", "split", "test_nll", "test_bce", "test_mse",
                            "test_kl"} for row in validation)
    assert (workdir / "figures" / "vae_learning_curve.png").exists()


def test_the_learning_curve_and_the_test_scores_share_one_compiled_scorer(tmp_path):
    config = tiny_config()
    dataset = registry.dataset_from_config(config.data)
    model = vae_run.build_model(config, dataset)
    mesh = stages.make_data_mesh()
    params = jax.jit(vae_run.state_factory(config, model, dataset.image_shape,
                                           jax.random.key(0)))().params
    vae_evaluation.vae_evaluator.cache_clear()
    vae_stage.curve_evaluator(model, dataset, np.arange(4), mesh, config.vae, tmp_path, config)
    scores = vae_evaluation.evaluate_vae(model, params, dataset, np.arange(4), mesh,
                                         config.vae.train.eval_batch_size)
    assert scores["num_images"] == 4
    assert vae_evaluation.vae_evaluator.cache_info().misses == 1  # one scorer, one compile


def test_finished_run_is_skipped_on_rerun(tiny_run, monkeypatch):
    workdir, results = tiny_run

    def must_not_run(*args, **kwargs):
        raise AssertionError("a finished stage was trained or evaluated again")

    monkeypatch.setattr(runner, "fit", must_not_run)
    monkeypatch.setattr(vae_evaluation, "evaluate_vae", must_not_run)
    monkeypatch.setattr(image_stages.reconstruction, "save_reconstruction_figure",
                        must_not_run)
    again = stages.run(tiny_config(), workdir)
    assert again["vae"] == json.loads(json.dumps(results["vae"]))


def test_metric_card_of_a_trained_run(tiny_run):
    from causal_disent.evaluation import card, representations, trained_runs

    workdir, _ = tiny_run
    run = trained_runs.open_run(workdir, stages.make_data_mesh(), batch_size=8)
    assert run.family == "vae" and list(run.representations) == ["encoder_mean"]
    images = run.dataset.images(np.arange(3))
    codes = run.representations["encoder_mean"](images)
    model, params = vae_run.load_trained(run.config, workdir, stages.make_data_mesh(),
                                         run.dataset)
    mean, _ = model.apply({"params": params}, images / 255.0, method=model.encode)
    np.testing.assert_allclose(codes, mean, rtol=1e-5, atol=1e-6)
    cached = representations.CachedCodes(run.dataset, run.representations["encoder_mean"])
    scored = card.metric_card(run.dataset, cached, ["mig"], num_samples=30)
    assert set(scored["metrics"]) == {"mig"}
    causal = run.causal_scores()  # the interventional-consistency scores
    assert set(causal) == {"consistency"}
    assert np.asarray(causal["consistency"]["inv"]).shape == (3, 3)


def test_negative_beta_is_refused_before_compiling(tmp_path):
    config = tiny_config()
    config.vae.objective.beta = -1.0
    with pytest.raises(stages.InvalidRunError, match="vae.objective.beta must be >= 0"):
        stages.run(config, tmp_path)
    assert not (tmp_path / "checkpoints").exists()


@pytest.mark.parametrize("override, message", [
    (lambda c: setattr(c.vae.model, "num_latents", 0), "vae.model.num_latents must be positive"),
    (lambda c: setattr(c.vae.model, "likelihood", "poisson"),
     "vae.model.likelihood must be one of .'bernoulli', 'gaussian'., got 'poisson'"),
    (lambda c: setattr(c.vae.model, "encoder_widths", (4,) * 7),
     "vae.model.encoder_widths has 7 stride-2 layers.*divisible by 128; got 64x64"),
    (lambda c: setattr(c.vae.objective, "name", "betavae"), "vae.objective.name 'betavae'"),
    (lambda c: setattr(c.vae.optim, "b2", 1.0), "0 <= b2 < 1"),
    (lambda c: setattr(c.vae.train, "num_steps", 0), "vae.train.num_steps must be positive"),
    # The test consistency scores are n × n matrices: 12 million latents trained, then
    # were killed scoring them.
    (lambda c: setattr(c.vae.model, "num_latents", 12_000_000),
     r"consistency scores of 12,000,000 units are two 12,000,000 × 12,000,000 matrices, "
     r"about [\d,.]+ GiB .* lower vae.model.num_latents \(12000000\)"),
])
def test_bad_config_fails_before_compiling(override, message, tmp_path):
    config = tiny_config()
    override(config)
    with pytest.raises(stages.InvalidRunError, match=message):
        stages.validate(config, tmp_path, stages.make_data_mesh())


def test_tiny_run_with_gaussian_pixels_on_colour_images(tmp_path):
    config = betavae_shapes3d_synth.get_config("tiny")
    config.vae.model.likelihood = "gaussian"
    results = stages.run(config, tmp_path)["vae"]
    # σ² = ½: −log p(x | z) = Σ (x − σ(logits))² + ½ log π per pixel, so the test NLL is
    # N·(MSE + ½ log π) over the N = 64·64·3 values of an image.
    values = 64 * 64 * 3
    assert results["test_nll"] == pytest.approx(
        values * (results["test_mse"] + 0.5 * np.log(np.pi)), rel=1e-4)
    assert np.isfinite(results["test_bce"]) and results["test_bce"] != results["test_nll"]


def tiny_state_and_batch(config):
    dataset = registry.dataset_from_config(config.data)
    model = vae_run.build_model(config, dataset)
    state = vae_run.create_state(model, dataset.image_shape, jax.random.key(0),
                                 vae_run.optimizer(config.vae.optim))
    return model, state, {"image": dataset.images(np.arange(4))}


def test_vae_train_step_is_train_step_for_a_loss_without_step():
    config = tiny_config()
    model, state, batch = tiny_state_and_batch(config)
    loss_fn = bind_loss(config.vae.objective, model)
    ours = vae_stage.vae_train_step(state, batch, jax.random.key(1), loss_fn=loss_fn)
    plain = train_step(state, batch, jax.random.key(1), loss_fn=loss_fn)
    jax.tree.map(np.testing.assert_array_equal, ours, plain)


@pytest.mark.parametrize("step, capacity", [(0, 0.0), (5, 12.5), (20, 25.0)])
def test_annealed_vae_step_reads_the_step_from_the_state(step, capacity):
    config = annealedvae_dsprites_synth.get_config("tiny")
    config.vae.objective.iteration_threshold = 10
    model, state, batch = tiny_state_and_batch(config)
    loss_fn = bind_loss(config.vae.objective, model)
    run_step = jax.jit(lambda s, b, r: vae_stage.vae_train_step(s, b, r, loss_fn=loss_fn))
    _, metrics = run_step(state.replace(step=jnp.int32(step)), batch,
                          jax.random.key(1))
    np.testing.assert_allclose(metrics["capacity"], capacity, rtol=1e-6)


def test_tiny_beta_tc_vae_run_end_to_end(tmp_path):
    results = stages.run(betatcvae_dsprites_synth.get_config("tiny"), tmp_path)["vae"]
    check_tiny_vae_run(tmp_path, results, {"name": "beta_tc_vae", "beta": 6.0},
                       ("loss", "mi", "tc", "dimension_wise_kl"))


def factor_state_and_batch(config):
    dataset = registry.dataset_from_config(config.data)
    model = vae_run.build_model(config, dataset)
    state = vae_run.state_factory(config, model, dataset.image_shape, jax.random.key(0))()
    loss_fn = bind_loss(config.vae.objective, model,
                        discriminator=vae_run.build_discriminator(config))
    return loss_fn, state, {"image": dataset.images(np.arange(8))}


def test_factor_vae_step_updates_both_networks_each_by_its_own_adam():
    config = factorvae_dsprites_synth.get_config("tiny")
    config.vae.discriminator.optim.learning_rate = 3e-3  # not the VAE's 1e-4
    loss_fn, state, batch = factor_state_and_batch(config)
    assert set(state.params) == {"vae", "discriminator"}
    new_state, metrics = jax.jit(
        lambda s, b, r: vae_stage.vae_train_step(s, b, r, loss_fn=loss_fn))(
        state, batch, jax.random.key(1))
    (loss, terms), grads = jax.value_and_grad(loss_fn, has_aux=True)(
        state.params, batch, jax.random.fold_in(jax.random.key(1), 0))
    np.testing.assert_allclose(metrics["loss"], loss, rtol=1e-5)
    np.testing.assert_allclose(metrics["tc"], terms["tc"], rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(metrics["vae_loss"] + metrics["discriminator_loss"],
                               metrics["loss"], rtol=1e-5)
    for group, optim in (("vae", config.vae.optim),
                         ("discriminator", config.vae.discriminator.optim)):
        # Adam's first step from zero moments is −lr·g / (|g| + eps), whatever b1, b2.
        expected = jax.tree.map(
            lambda p, g, lr=optim.learning_rate, eps=optim.eps: p - lr * g / (np.abs(g) + eps),
            state.params[group], grads[group])
        jax.tree.map(lambda new, want: np.testing.assert_allclose(new, want, atol=1e-7),
                     new_state.params[group], expected)
        moved = jax.tree.map(lambda new, old: float(np.abs(new - old).max()),
                             new_state.params[group], state.params[group])
        assert max(jax.tree.leaves(moved)) > 0.5 * optim.learning_rate, group


def test_beta_vae_state_has_no_discriminator():
    config = tiny_config()
    assert vae_run.build_discriminator(config) is None
    _, state, _ = tiny_state_and_batch(config)
    assert set(state.params) == {"encoder", "decoder"}
    assert set(vae_run.signature(config)) == {"data", "model"}


@pytest.fixture(scope="module")
def tiny_factor_run(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("factor_vae")
    return workdir, stages.run(factorvae_dsprites_synth.get_config("tiny"), workdir)


def test_tiny_factor_vae_run_end_to_end_and_its_metric_card(tiny_factor_run):
    workdir, results = tiny_factor_run
    check_tiny_vae_run(workdir, results["vae"], {"name": "factor_vae", "gamma": 30.0},
                       ("loss", "vae_loss", "tc", "discriminator_loss"))
    # The VAE's parameters, not the discriminator's.
    check_card_encodes_the_encoder_mean(workdir, {"encoder", "decoder"})


def drop_discriminator(config):
    del config.vae["discriminator"]


@pytest.mark.parametrize("make_config, override, message", [
    (factorvae_dsprites_synth.get_config, drop_discriminator,
     r"vae.discriminator \(model, optim\) is missing: the 'factor_vae' loss"),
    (factorvae_dsprites_synth.get_config,
     lambda c: setattr(c.vae.discriminator.model, "hidden_units", 0),
     "vae.discriminator.model.hidden_units must be positive"),
    (factorvae_dsprites_synth.get_config,
     lambda c: setattr(c.vae.discriminator.optim, "b2", 1.0),
     "vae.discriminator.optim needs 0 <= b1 < 1 and 0 <= b2 < 1"),
    (factorvae_dsprites_synth.get_config,
     lambda c: setattr(c.vae.objective, "gamma", -1.0), "vae.objective.gamma must be >= 0"),
    (betavae_dsprites_synth.get_config,
     lambda c: setattr(c.vae, "discriminator", factorvae_dsprites_synth.get_config(
         "tiny").vae.discriminator),
     "vae.discriminator is set but the 'beta_vae' loss trains no discriminator"),
])
def test_bad_factor_vae_config_fails_before_compiling(make_config, override, message,
                                                      tmp_path):
    config = make_config("tiny")
    override(config)
    with pytest.raises(stages.InvalidRunError, match=message):
        stages.validate(config, tmp_path, stages.make_data_mesh())
