"""CausalVAE stage: a step of each variant, a tiny run end to end, interventions on the
latent codes, and clear errors on bad input. Tiny networks (configs/...:tiny)."""

import functools
import json
import re

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from PIL import Image

from causal_disent import causalvae_interventions, models
from causal_disent.data import registry
from causal_disent.evaluation import causalvae_evaluation
from causal_disent.models import scm
from causal_disent.models.causalvae import VARIANTS
from causal_disent.objectives import causalvae as cv
from causal_disent.objectives.causalvae_variants import LOSSES, LossWeights
from causal_disent.runs import causalvae as causalvae_run
from causal_disent.train import causalvae_graph, causalvae_stage, runner, stages
from configs import causalvae_pendulum
from tests.helpers import run_intervene

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
    return causalvae_run.label_scaling("pendulum", labels)


def build(variant: str, image_shape):
    return models.build_causalvae(tiny_config(variant).causalvae.model, image_shape)


@pytest.mark.parametrize("variant", VARIANTS)
def test_one_train_step_of_each_variant_is_an_adam_step_on_its_loss(variant, pendulum,
                                                                   scaling):
    dataset, batch = pendulum
    config = tiny_config(variant).causalvae
    model = build(variant, dataset.image_shape)
    state = causalvae_run.create_state(model, dataset.image_shape, jax.random.key(0),
                                         1e-3, config.objective.initial_penalty)
    step = jax.jit(causalvae_stage.make_train_step(model, scaling, config.objective))
    new_state, metrics = step(state, batch, jax.random.key(1))
    assert int(new_state.step) == 1
    # The reference: the variant's loss with the config's weights and the state's λ, ρ,
    # and its gradient at the initial parameters (the losses draw no randomness).
    loss_fn = functools.partial(
        LOSSES[variant], model=model, scaling=scaling,
        weights=causalvae_stage.loss_weights(config.objective), lagrangian=state.lagrangian,
    )
    (loss, terms), grads = jax.value_and_grad(loss_fn, has_aux=True)(state.params, batch, None)
    np.testing.assert_allclose(metrics["loss"], loss, rtol=1e-5)
    np.testing.assert_allclose(metrics["grad_norm"], optax.tree.norm(grads), rtol=1e-5)
    for name, value in terms.items():
        np.testing.assert_allclose(metrics[name], value, rtol=1e-5, atol=1e-6, err_msg=name)
    # Adam's first step from zero moments is −lr·g / (|g| + eps) (bias corrections cancel).
    expected = jax.tree.map(lambda p, g: p - 1e-3 * g / (jnp.abs(g) + 1e-8), state.params,
                            grads)
    jax.tree.map(lambda new, want: np.testing.assert_allclose(new, want, atol=1e-6),
                 new_state.params, expected)
    if model.has_causal_layer:
        # The Lagrangian state is kept (step 1 is not due at lagrangian_update_every_steps
        # = 2) and reported; A moved off its zero initialisation.
        assert config.objective.lagrangian_update_every_steps == 2
        assert lagrangian_values(new_state) == (0.0, config.objective.initial_penalty, np.inf)
        assert (float(metrics["multiplier"]), float(metrics["penalty"])) == (
            0.0, config.objective.initial_penalty)
        assert np.any(new_state.params["scm"]["adjacency"] != 0)
    else:
        assert "scm" not in new_state.params and "multiplier" not in metrics


def expected_outer_update(lagrangian, constraint, *, progress_rate, penalty_growth,
                          max_penalty):
    """`update_augmented_lagrangian`'s documented rule in plain Python on
    (λ, ρ, H_prev) floats: ((λ, ρ, H_prev), "grow" or "accept")."""
    multiplier, penalty, previous = lagrangian
    if constraint > progress_rate * previous and penalty < max_penalty:
        return (multiplier, min(penalty * penalty_growth, max_penalty), previous), "grow"
    return (multiplier + penalty * constraint, penalty, constraint), "accept"


def lagrangian_values_of(lagrangian):
    return tuple(float(x) for x in (lagrangian.multiplier, lagrangian.penalty,
                                    lagrangian.previous_constraint))


def lagrangian_values(state):
    return lagrangian_values_of(state.lagrangian)


def test_lagrangian_updates_on_schedule(pendulum, scaling):
    dataset, batch = pendulum
    objective = tiny_config().causalvae.objective
    objective.lagrangian_update_every_steps = 2
    objective.dag_tolerance = 1e-3
    # A cap that the growth reaches (clipped: 10 -> 50), after which updates accept.
    schedule = dict(progress_rate=0.25, penalty_growth=10.0, max_penalty=50.0)
    objective.update(schedule)
    model = build("causalvae", dataset.image_shape)
    step = jax.jit(causalvae_stage.make_train_step(model, scaling, objective))

    def constraint(state):
        return float(cv.dag_constraint(state.params["scm"]["adjacency"], objective.dag_c))

    # A 2-cycle 0 <-> 1 of weight 0.5: H(A) = 12a² + 2a⁴ with a = 0.5²/4 (weight 1
    # would make I − Aᵀ singular). Adam at 1e-3 barely moves A in 10 steps, so H
    # stays near 0.047, never falls to a quarter of its last accepted value, and ρ
    # grows until it reaches max_penalty.
    cyclic = np.zeros((4, 4), np.float32)
    cyclic[0, 1] = cyclic[1, 0] = 0.5
    state = causalvae_run.create_state(model, dataset.image_shape, jax.random.key(0),
                                         1e-3, 1.0, initial_adjacency=cyclic)
    np.testing.assert_allclose(constraint(state), 12 / 16**2 + 2 / 16**4, rtol=1e-5)
    expected = lagrangian_values(state)
    assert expected == (0.0, 1.0, np.inf)
    branches = []
    for _ in range(10):
        before = state.lagrangian
        constraint_before = constraint(state)
        state, metrics = step(state, batch, jax.random.key(1))
        # The loss of this step used the state's λ, ρ at H(A) before the step.
        np.testing.assert_allclose(metrics["dag_constraint"], constraint_before, rtol=1e-5)
        np.testing.assert_allclose(
            metrics["dag_penalty"],
            float(before.multiplier) * constraint_before
            + 0.5 * float(before.penalty) * constraint_before**2,
            rtol=1e-5,
        )
        h = constraint(state)  # H(A) after the optimiser step: what the update reads
        assert h > objective.dag_tolerance
        if int(state.step) % objective.lagrangian_update_every_steps == 0:
            expected, branch = expected_outer_update(expected, h, **schedule)
            branches.append(branch)
            np.testing.assert_allclose(lagrangian_values(state), expected, rtol=1e-5)
        else:  # not due: the Lagrangian state is left bit for bit
            for new, old in zip(jax.tree.leaves(state.lagrangian), jax.tree.leaves(before)):
                np.testing.assert_array_equal(new, old)
        np.testing.assert_array_equal(metrics["multiplier"], state.lagrangian.multiplier)
        np.testing.assert_array_equal(metrics["penalty"], state.lagrangian.penalty)
    # The first update is accepted (H_prev = inf), then ρ grows 1 -> 10 -> 50 (capped)
    # and, at the cap, updates are accepted again: λ = H₂ + 50·H₈ + 50·H₁₀.
    assert branches == ["accept", "grow", "grow", "accept", "accept"]
    assert int(state.step) == 10 and expected[1] == schedule["max_penalty"]

    # Below dag_tolerance no update is made, even when one is due: from A = 0, two
    # Adam steps at 1e-3 leave H(A) far below 1e-3, and the state keeps λ = 0, ρ = 1,
    # H_prev = inf (where an update, always accepted from H_prev = inf, would have set
    # H_prev = H).
    state = causalvae_run.create_state(model, dataset.image_shape, jax.random.key(0),
                                         1e-3, 1.0)
    initial = state.lagrangian
    for _ in range(2):
        state, _ = step(state, batch, jax.random.key(1))
    assert int(state.step) % objective.lagrangian_update_every_steps == 0
    assert constraint(state) <= objective.dag_tolerance
    for new, old in zip(jax.tree.leaves(state.lagrangian), jax.tree.leaves(initial)):
        np.testing.assert_array_equal(new, old)


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


def test_the_learning_curve_and_the_test_scores_share_one_compiled_scorer(pendulum, tmp_path):
    dataset, batch = pendulum
    model = build("causalvae", dataset.image_shape)
    params = jax.jit(functools.partial(causalvae_run.create_state, model, dataset.image_shape,
                                       jax.random.key(0), 1e-3, 1.0))().params
    mesh, indices = stages.make_data_mesh(), np.array([0, 500, 3000, 7000])
    causalvae_evaluation.concept_scorer.cache_clear()
    causalvae_stage.curve_evaluator(model, dataset, indices, batch["labels"], mesh, BATCH,
                                    tmp_path)
    scored = causalvae_evaluation.concept_codes_and_errors(model, params, dataset, indices,
                                                           mesh, BATCH)
    assert scored["concept_codes"].shape == (4, 4)
    assert causalvae_evaluation.concept_scorer.cache_info().misses == 1  # one compile


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
    assert saved["true_graph"] == [[0, 0, 1, 1], [0, 0, 1, 1], [0, 0, 0, 0], [0, 0, 0, 0]]
    # The graph scores follow from the learned A (rounded to 4 decimals in the file).
    learned = np.asarray(saved["learned_adjacency"])
    assert learned.shape == (4, 4)
    graph = (np.abs(learned) > saved["graph_threshold"]).astype(int)
    np.fill_diagonal(graph, 0)
    assert saved["learned_graph"] == graph.tolist()
    true = np.asarray(saved["true_graph"])
    assert saved["shd"] == sum(  # node pairs whose edges differ in either direction
        graph[i, j] != true[i, j] or graph[j, i] != true[j, i]
        for i in range(4) for j in range(i + 1, 4)
    )
    np.testing.assert_allclose(
        saved["dag_constraint"], cv.dag_constraint(jnp.asarray(learned, jnp.float32)),
        rtol=1e-2, atol=1e-5,
    )
    figure = workdir / "figures" / "causalvae_interventions.png"
    assert figure.stat().st_size > 0
    rows = [json.loads(line) for line in (workdir / "metrics.jsonl").read_text().splitlines()]
    training = [row for row in rows if "split" not in row]
    assert [row["step"] for row in training] == [1, 2, 3, 4]
    assert all(np.isfinite(row["loss"]) for row in training)
    # The learning curve: MIC / TIC and test BCE every 2 steps on 16 test images.
    validation = [row for row in rows if "split" in row]
    assert [row["step"] for row in validation] == [0, 2, 4] == [
        point["step"] for point in saved["curve"]]
    assert all(0 <= row["mic"] <= 100 and np.isfinite(row["test_bce"]) for row in validation)


def test_tiny_run_learns_its_graph_by_pc_and_scores_counterfactuals(tiny_run):
    workdir, results = tiny_run
    saved = results["causalvae"]
    discovery = json.loads((workdir / "graph_discovery.json").read_text())
    assert saved["graph_learning"] == "ci_tests" and saved["discovery"] == discovery
    # Training may not add edges outside the learned DAG (A's updates are masked).
    outside = np.asarray(saved["learned_adjacency"]) * (1 - np.asarray(discovery["dag"]))
    np.testing.assert_array_equal(outside, 0.0)
    scores = saved["counterfactual"]
    assert scores["num_images"] == 8
    assert list(scores["concepts"]) == list(registry.get_dataset("pendulum").label_names)
    for entry in scores["concepts"].values():
        for name in ("model", "model_reconstruction"):
            assert 0 < entry[name]["changed_fraction"] < 1
            assert 0 <= entry[name]["mse_kept"] <= 1 and 0 <= entry[name]["mse_changed"] <= 1
    assert scores["concepts"]["shadow_length"]["descendants"] == []
    assert scores["concepts"]["pendulum_angle"]["descendants"] == [
        "shadow_length", "shadow_position"]


def test_figure_rows_start_with_the_input_and_pair_each_model_row_with_the_truth(
        true_graph_model, pendulum, scaling):
    """Per concept: the input image, then the model's do(z_c = v) (set at the mask
    layer's input for a concept with children), and under that row the input image,
    then the simulator's true counterfactuals do(c = v)."""
    model, params, _ = true_graph_model
    dataset, _ = pendulum
    index = 500
    values = causalvae_evaluation.intervention_values(
        dataset.labels(np.arange(0, dataset.num_images, 7)), 3)
    assert values.shape == (4, 3)
    latent = (values - scaling.prior_offset[:, None]) / scaling.prior_scale[:, None]
    has_children = np.asarray(dataset.causal_graph).sum(axis=1) > 0
    rows = causalvae_evaluation.intervention_rows(model, params, dataset, index, values,
                                                  latent, has_children)
    image = dataset.images(np.array([index]))[0]
    assert rows.shape == (8, 4, *dataset.image_shape) and rows.dtype == np.uint8
    for row in rows:
        np.testing.assert_array_equal(row[0], image)
    repeated = np.repeat(image[None], 3, axis=0)
    for concept in range(4):
        np.testing.assert_array_equal(rows[2 * concept, 1:], causalvae_interventions.intervene(
            model, params, repeated, concept, latent[concept],
            at_input=bool(has_children[concept])))
        np.testing.assert_array_equal(rows[2 * concept + 1, 1:], dataset.counterfactual_images(
            np.full(3, index), concept, values[concept]))


def test_intervention_values_run_from_the_5th_to_the_95th_percentile():
    labels = np.stack([np.arange(101.0), -2 * np.arange(101.0)], axis=1)
    values = causalvae_evaluation.intervention_values(labels, 5)
    np.testing.assert_allclose(values, [[5, 27.5, 50, 72.5, 95],
                                        [-190, -145, -100, -55, -10]])


def test_a_run_compared_with_itself_scores_the_same(tiny_run):
    workdir, results = tiny_run
    config = tiny_config()
    config.causalvae.train.compare_workdirs = (str(workdir),)
    dataset = registry.get_dataset("pendulum")
    mesh = jax.sharding.Mesh(np.array(jax.devices()[:1]), ("data",))
    compared = causalvae_evaluation.compared_models(config, mesh, dataset)
    assert list(compared) == ["causalvae_per_concept"]
    split = dataset.predefined_split()
    labels = dataset.labels(np.arange(dataset.num_images)).astype(np.float32)
    scaling = causalvae_run.label_scaling("pendulum", labels[split["train"]])
    test = causalvae_run.evaluation_indices(config, split)
    scores = causalvae_evaluation.counterfactuals(config, dataset, test, labels[test], scaling,
                                             {"model": compared["causalvae_per_concept"],
                                              **compared})
    for entry in scores["concepts"].values():
        assert entry["model"] == entry["causalvae_per_concept"]
    assert scores["num_images"] == results["causalvae"]["counterfactual"]["num_images"]


def test_comparing_with_a_missing_or_foreign_run_is_refused(tiny_run, tmp_path):
    workdir, _ = tiny_run
    config = tiny_config()
    mesh = jax.sharding.Mesh(np.array(jax.devices()[:1]), ("data",))
    dataset = registry.get_dataset("pendulum")
    config.causalvae.train.compare_workdirs = (str(tmp_path / "nothing"),)
    with pytest.raises(ValueError, match="not found.*must list the --workdir of finished"):
        causalvae_evaluation.compared_models(config, mesh, dataset)
    foreign = json.loads((workdir / "config.json").read_text())
    foreign["data"]["name"] = "flow"
    (tmp_path / "config.json").write_text(json.dumps(foreign))
    config.causalvae.train.compare_workdirs = (str(tmp_path),)
    with pytest.raises(ValueError, match="was trained on 'flow', not 'pendulum'"):
        causalvae_evaluation.compared_models(config, mesh, dataset)


def test_finished_run_is_skipped_on_rerun(tiny_run, monkeypatch):
    workdir, results = tiny_run

    def must_not_run(*args, **kwargs):
        raise AssertionError("a finished stage was trained or evaluated again")

    # Retraining or re-evaluating would give the same scores (same seed), so the test
    # fails if either is reached at all.
    monkeypatch.setattr(runner, "fit", must_not_run)
    for name in ("evaluate", "save_intervention_figure"):
        monkeypatch.setattr(causalvae_evaluation, name, must_not_run)
    again = stages.run(tiny_config(), workdir)
    assert again["causalvae"] == json.loads(json.dumps(results["causalvae"]))


def test_metric_card_of_a_trained_run(tiny_run):
    from causal_disent.evaluation import card, representations, trained_runs

    workdir, results = tiny_run
    run = trained_runs.open_run(workdir, stages.make_data_mesh(), batch_size=8)
    assert run.family == "causalvae" and list(run.representations) == ["encoder_mean",
                                                                        "concepts"]
    images = run.dataset.images(np.arange(3))
    exogenous = run.representations["encoder_mean"](images)
    assert exogenous.shape == (3, 16)  # n * k
    # "concepts" is the causal layer's z = (I − Aᵀ)⁻¹ ε with the run's learned A.
    learned = np.asarray(results["causalvae"]["learned_adjacency"])  # rounded to 1e-4
    expected = np.einsum("ij,bjk->bik", np.linalg.inv(np.eye(4) - learned.T),
                         exogenous.reshape(3, 4, 4)).reshape(3, 16)
    np.testing.assert_allclose(run.representations["concepts"](images), expected,
                               atol=1e-3 * max(1.0, np.abs(exogenous).max()))
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
    # The children are the mask layer's g_i(A_i ∘ z) + ε_i with z_0 = 2.5 in z.
    observed = model.apply({"params": params}, images.astype(np.float32) / 255)
    set_cause = observed["z"].at[:, 0].set(2.5)
    mask = scm.MaskLayer(model.num_concepts, model.concept_dim, model.mechanism_hidden)
    expected = mask.apply({"params": params["mask"]}, set_cause, params["scm"]["adjacency"],
                          observed["exogenous"])["z"]
    for child in (2, 3):
        np.testing.assert_allclose(after[:, child], expected[:, child], rtol=1e-4,
                                   atol=1e-5)
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
    # 255·σ(logits) of the model's do(z_1 = 0.5), rounded (±1 for rounding at .5).
    logits = model.apply({"params": params}, images.astype(np.float32) / 255, 1, 0.5,
                         method="intervene")["reconstruction_logits"]
    expected = np.round(255 * np.asarray(jax.nn.sigmoid(logits), np.float64))
    assert np.abs(out.astype(np.int64) - expected).max() <= 1
    one = causalvae_interventions.intervene(model, params, images[0], 1, 0.5)
    assert one.shape == images.shape[1:] and one.dtype == np.uint8
    assert np.abs(one.astype(np.int64) - expected[0]).max() <= 1


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
    schedule = dict(progress_rate=0.25, penalty_growth=10.0, max_penalty=1e8)
    adjacency, lagrangian, history = causalvae_graph.pretrain_adjacency(
        unit, num_steps=600, update_every=100, learning_rate=1e-2, initial_penalty=1.0,
        dag_c=1.0, dag_tolerance=1e-8, **schedule,
    )
    assert adjacency.shape == (4, 4) and np.all(np.isfinite(adjacency))
    assert [row["step"] for row in history] == [100, 200, 300, 400, 500, 600]
    # A is nearly acyclic (H ~ 1e-3 after 600 steps, from ~0.09 after the first 100),
    # and the last entry of the history is the returned A's H.
    constraint = float(cv.dag_constraint(jnp.asarray(adjacency), 1.0))
    assert constraint < 5e-3
    dag_constraints = [row["dag_constraint"] for row in history]
    assert dag_constraints[-1] < max(dag_constraints) / 20
    np.testing.assert_allclose(dag_constraints[-1], constraint, rtol=1e-4)
    # λ, ρ after each outer update follow the documented rule replayed on the history's
    # H (every H here is above the tolerance), and the last equal the returned state's.
    replayed = (0.0, 1.0, np.inf)
    branches = []
    for row in history:
        replayed, branch = expected_outer_update(replayed, row["dag_constraint"], **schedule)
        branches.append(branch)
        np.testing.assert_allclose([row["multiplier"], row["penalty"]], replayed[:2],
                                   rtol=1e-5)
    assert {"grow", "accept"} <= set(branches)
    assert (history[-1]["multiplier"], history[-1]["penalty"]) == (
        float(lagrangian.multiplier), float(lagrangian.penalty))
    np.testing.assert_allclose(lagrangian_values_of(lagrangian), replayed, rtol=1e-5)


def test_intervene_on_a_concept_writes_a_labelled_strip(tiny_run, tmp_path):
    workdir, _ = tiny_run
    out = tmp_path / "strip.png"
    result = run_intervene(workdir, "--index=3", "--concept=pendulum_angle",
                           "--values=-20,0,20,900", f"--out={out}")
    assert result.returncode == 0, result.stderr[-3000:]
    assert f"intervention strip: {out}" in result.stdout
    assert not re.search(r"^[IW]\d{4} ", result.stderr, re.MULTILINE), result.stderr
    # Off the training labels' range: drawn, and said to be extrapolated.
    assert re.search(r"^warning: --values 900 lie outside the training labels of "
                     r"pendulum_angle \(-?[\d.]+ to [\d.]+\); the model never saw them",
                     result.stderr, re.MULTILINE), result.stderr
    with Image.open(out) as strip:
        width, height = strip.size
    assert width > 6 * 96 > height  # input, reconstruction and four values
