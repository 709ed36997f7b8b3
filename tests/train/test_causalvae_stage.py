"""CausalVAE stage: a step of each variant, a tiny run end to end, interventions on the
latent codes, and clear errors on bad input. Tiny networks (configs/...:tiny)."""

import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from causal_disent import causalvae_interventions, models
from causal_disent.data import registry
from causal_disent.models.causalvae import VARIANTS
from causal_disent.objectives import causalvae as cv
from causal_disent.objectives.causalvae_variants import LOSSES, LossWeights
from causal_disent.train import causalvae_stage, stages
from configs import causalvae_pendulum

BATCH = 4


def tiny_config(variant: str = "causalvae"):
    config = causalvae_pendulum.get_config("tiny")
    config.causalvae.model.variant = variant
    return config


@pytest.fixture(scope="module")
def pendulum():
    dataset = registry.get_dataset("pendulum")
    index = np.array([0, 500, 3000, 7000])
    return dataset, {"image": dataset.images(index),
                     "labels": dataset.labels(index).astype(np.float32)}


@pytest.fixture(scope="module")
def scaling(pendulum):
    dataset, _ = pendulum
    labels = dataset.labels(np.arange(dataset.num_images))
    return causalvae_stage.label_scaling("pendulum", labels)


def build(variant: str, image_shape):
    return models.build_causalvae(tiny_config(variant).causalvae.model, image_shape)


@pytest.mark.parametrize("variant", VARIANTS)
def test_one_train_step_of_each_variant_is_finite(variant, pendulum, scaling):
    dataset, batch = pendulum
    config = tiny_config(variant).causalvae
    model = build(variant, dataset.image_shape)
    state = causalvae_stage.create_state(model, dataset.image_shape, jax.random.key(0),
                                         1e-3, config.objective.initial_penalty)
    step = jax.jit(causalvae_stage.make_train_step(model, scaling, config.objective))
    new_state, metrics = step(state, batch, jax.random.key(1))
    assert int(new_state.step) == 1
    for name, value in metrics.items():
        assert np.all(np.isfinite(value)), name
    for leaf in jax.tree.leaves(new_state.params):
        assert np.all(np.isfinite(leaf))
    if model.has_causal_layer:
        assert "dag_constraint" in metrics and "penalty" in metrics
        # A moved off its zero initialisation (l_u for CausalVAE, reconstruction for unsup).
        assert np.any(new_state.params["scm"]["adjacency"] != 0)
    else:
        assert "scm" not in new_state.params


def test_lagrangian_updates_on_schedule(pendulum, scaling):
    dataset, batch = pendulum
    config = tiny_config().causalvae
    config.objective.lagrangian_update_every_steps = 1
    config.objective.dag_tolerance = -1.0  # update even while H(A) is ~0
    model = build("causalvae", dataset.image_shape)
    state = causalvae_stage.create_state(model, dataset.image_shape, jax.random.key(0),
                                         1e-3, 1.0)
    step = jax.jit(causalvae_stage.make_train_step(model, scaling, config.objective))
    state, _ = step(state, batch, jax.random.key(1))
    # The first outer update is always accepted (h_prev = inf): h_prev becomes H(A).
    assert np.isfinite(float(state.lagrangian.previous_constraint))


@pytest.mark.parametrize("variant", ["causalvae", "condition_vae"])
def test_label_prior_weight_scales_only_the_label_prior_kls(variant, pendulum, scaling):
    dataset, batch = pendulum
    model = build(variant, dataset.image_shape)
    params = model.init(jax.random.key(0), jnp.zeros((1, *dataset.image_shape)))["params"]
    lagrangian = cv.AugmentedLagrangian.create(multiplier=0.5, penalty=3.0)

    def loss(weight):
        weights = LossWeights(mask_prior_weight=0.7, label_prior_weight=weight)
        return LOSSES[variant](params, batch, None, model=model, scaling=scaling,
                               weights=weights, lagrangian=lagrangian)

    loss_1, terms = loss(1.0)
    loss_5, terms_5 = loss(5.0)
    prior_kls = terms["kl_label_prior"] + 0.7 * terms.get("mask_prior_kl", 0.0)
    np.testing.assert_allclose(loss_5 - loss_1, 4.0 * prior_kls, rtol=1e-3)
    # The reported −ELBO stays Eq. 10's, whatever the weight.
    np.testing.assert_allclose(terms_5["negative_elbo"], terms["negative_elbo"], rtol=1e-6)


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("causalvae")
    results = stages.run(tiny_config(), workdir)
    return workdir, results


def test_tiny_end_to_end_run_writes_results_and_figure(tiny_run):
    workdir, results = tiny_run
    saved = json.loads((workdir / "results.json").read_text())["causalvae"]
    assert saved == json.loads(json.dumps(results["causalvae"]))
    assert saved["steps"] == 4 and saved["num_images"] == 24
    for key in ("mic", "tic", "test_bce", "test_mse"):
        assert np.isfinite(saved[key]), key
    assert 0 <= saved["mic"] <= 100 and 0 <= saved["tic"] <= 100
    assert len(saved["mic_per_concept"]) == 4
    assert isinstance(saved["shd"], int) and 0 <= saved["shd"] <= 6
    assert np.asarray(saved["learned_adjacency"]).shape == (4, 4)
    assert saved["true_graph"] == [[0, 0, 1, 1], [0, 0, 1, 1], [0, 0, 0, 0], [0, 0, 0, 0]]
    figure = workdir / "figures" / "causalvae_interventions.png"
    assert figure.stat().st_size > 0
    rows = [json.loads(line) for line in (workdir / "metrics.jsonl").read_text().splitlines()]
    assert [row["step"] for row in rows] == [1, 2, 3, 4]
    assert all(np.isfinite(row["loss"]) for row in rows)


def test_finished_run_is_skipped_on_rerun(tiny_run):
    workdir, results = tiny_run
    again = stages.run(tiny_config(), workdir)
    assert again["causalvae"]["mic"] == pytest.approx(results["causalvae"]["mic"])



def test_metric_card_of_a_trained_run(tiny_run):
    from causal_disent.evaluation import card, representations, trained_runs

    workdir, results = tiny_run
    run = trained_runs.open_run(workdir, stages.make_data_mesh(), batch_size=8)
    assert run.family == "causalvae" and list(run.representations) == ["encoder_mean",
                                                                        "concepts"]
    images = run.dataset.images(np.arange(3))
    assert run.representations["encoder_mean"](images).shape == (3, 16)  # n * k
    cached = representations.CachedCodes(run.dataset, run.representations["concepts"])
    scored = card.metric_card(run.dataset, cached, ["mig", "factorvae"], num_samples=30)
    assert set(scored["metrics"]) == {"mig", "factorvae"}
    # The causal scores are recomputed from the checkpoint: the run's own figures.
    causal = run.causal_scores()
    for key in ("mic", "tic", "shd"):
        assert causal[key] == pytest.approx(results["causalvae"][key], abs=1e-4), key

@pytest.fixture(scope="module")
def true_graph_model(pendulum):
    """A tiny CausalVAE whose A is Pendulum's true graph (0, 1 -> 2, 3)."""
    dataset, batch = pendulum
    model = build("causalvae", dataset.image_shape)
    params = model.init(jax.random.key(0), jnp.zeros((1, *dataset.image_shape)))["params"]
    params = jax.tree.map(lambda x: x, params)  # a mutable copy of the nested dict
    params["scm"]["adjacency"] = jnp.asarray(dataset.causal_graph, jnp.float32)
    return model, params, batch["image"]


def codes(model, params, images, **intervention):
    if not intervention:
        return np.asarray(model.apply(
            {"params": params}, images.astype(np.float32) / 255)["decoded_z"])
    return causalvae_interventions.intervened_codes(model, params, images, **intervention)


def test_intervening_on_a_cause_moves_its_children(true_graph_model):
    model, params, images = true_graph_model
    before = codes(model, params, images)
    after = codes(model, params, images, concept=0, value=2.5)
    np.testing.assert_allclose(after[:, 0], 2.5)
    np.testing.assert_allclose(after[:, 1], before[:, 1], atol=1e-5)  # not a child
    for child in (2, 3):
        assert np.abs(after[:, child] - before[:, child]).max() > 1e-4, child


def test_intervening_on_an_effect_leaves_its_causes(true_graph_model):
    model, params, images = true_graph_model
    before = codes(model, params, images)
    for at_input in (False, True):
        after = codes(model, params, images, concept=2, value=-3.0, at_input=at_input)
        np.testing.assert_allclose(after[:, 2], -3.0)
        for other in (0, 1, 3):
            np.testing.assert_allclose(after[:, other], before[:, other], atol=1e-5)


def test_intervene_returns_images(true_graph_model):
    model, params, images = true_graph_model
    out = causalvae_interventions.intervene(model, params, images, concept=1, value=0.5)
    assert out.shape == images.shape and out.dtype == np.uint8
    assert causalvae_interventions.intervene(model, params, images[0], 1, 0.5).shape == images.shape[1:]


def test_bad_inputs_give_clear_errors(pendulum, scaling, true_graph_model, tmp_path):
    dataset, batch = pendulum
    model, params, images = true_graph_model
    # labels of the wrong width
    loss = LOSSES["causalvae"]
    narrow = {**batch, "labels": batch["labels"][:, :3]}
    with pytest.raises(ValueError, match=r"labels must be \[B, 4\]"):
        loss(params, narrow, None, model=model, scaling=scaling,
             weights=causalvae_stage.loss_weights(tiny_config().causalvae.objective),
             lagrangian=None)
    # latent codes whose width is not n·k
    with pytest.raises(ValueError, match=r"latent width 15 != num_concepts·concept_dim"):
        model.apply({"params": params}, jnp.zeros((2, 15)), method="decode")
    # images of another size
    with pytest.raises(ValueError, match=r"images must be \[B, 96, 96, 4\]"):
        model.apply({"params": params}, jnp.zeros((2, 64, 64, 4)))
    with pytest.raises(ValueError, match="out of range"):
        causalvae_interventions.intervene(model, params, images, concept=4, value=0.0)
    # a config whose n does not match the dataset's labels, an unknown variant
    config = tiny_config()
    config.causalvae.model.num_concepts = 3
    with pytest.raises(stages.InvalidRunError, match="num_concepts = 3 .* 4 labels"):
        stages.validate(config, tmp_path, stages.make_data_mesh())
    config = tiny_config("beta_vae")
    with pytest.raises(stages.InvalidRunError, match="variant 'beta_vae' is unknown"):
        stages.validate(config, tmp_path, stages.make_data_mesh())
    config = tiny_config()
    config.data.name = "shapes3d_synth"
    with pytest.raises(stages.InvalidRunError, match="no concept labels"):
        stages.validate(config, tmp_path, stages.make_data_mesh())


def test_bad_objective_settings_are_rejected(tmp_path):
    config = tiny_config()
    config.causalvae.objective.initial_adjacency = ((0.0, 1.0), (0.0, 0.0))
    with pytest.raises(stages.InvalidRunError, match="initial_adjacency must be empty or 4x4"):
        stages.validate(config, tmp_path, stages.make_data_mesh())
    config = tiny_config()
    config.causalvae.objective.label_prior_weight = 0.0
    with pytest.raises(stages.InvalidRunError, match="label_prior_weight must be positive"):
        stages.validate(config, tmp_path, stages.make_data_mesh())


def test_a_hand_made_initial_adjacency_replaces_the_pretraining(tmp_path):
    config = tiny_config()
    true_graph = registry.get_dataset("pendulum").causal_graph
    config.causalvae.objective.initial_adjacency = tuple(map(tuple, true_graph.tolist()))
    config.causalvae.train.num_steps = 2
    saved = stages.run(config, tmp_path)["causalvae"]
    assert "pretrained_adjacency" not in saved
    assert saved["initial_adjacency"] == true_graph.tolist()
    # Two Adam steps at 1e-3 move each entry by at most ~2e-3: A is still the graph.
    np.testing.assert_allclose(saved["learned_adjacency"], true_graph, atol=0.01)
    assert saved["shd"] == 0


def test_pretraining_of_a_on_labels_drives_the_dag_constraint_down(pendulum, scaling):
    dataset, _ = pendulum
    unit = np.asarray(scaling.unit_interval(dataset.labels(np.arange(0, 7308, 7)).astype(np.float32)))
    adjacency, lagrangian, history = causalvae_stage.pretrain_adjacency(
        unit, num_steps=600, update_every=100, learning_rate=1e-2, initial_penalty=1.0,
        dag_c=1.0, progress_rate=0.25, penalty_growth=10.0, max_penalty=1e8,
        dag_tolerance=1e-8,
    )
    assert adjacency.shape == (4, 4) and np.all(np.isfinite(adjacency))
    assert [row["step"] for row in history] == [100, 200, 300, 400, 500, 600]
    assert float(lagrangian.penalty) >= 1.0
