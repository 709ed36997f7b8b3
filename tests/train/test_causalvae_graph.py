"""How CausalVAE's A starts (train/causalvae_graph.py), bad graph and label input, and
the counterfactual scores' arithmetic (evaluation/counterfactual_scores.py)."""

import json

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from causal_disent import causalvae_interventions, models
from causal_disent.data import registry
from causal_disent.evaluation import causalvae_evaluation
from causal_disent.evaluation import counterfactual_scores as cs
from causal_disent.runs import causalvae as causalvae_run
from causal_disent.train import causalvae_graph, causalvae_stage
from configs import causalvae_pendulum

PENDULUM_GRAPH = np.array(registry.get_dataset("pendulum").causal_graph)


def test_gradient_mask_keeps_a_on_its_support_through_adam_steps():
    support = np.array([[0, 1], [0, 0]], np.float32)
    params = {"scm": {"adjacency": jnp.array([[0.0, 1.0], [0.0, 0.0]])}, "other": jnp.ones(3)}
    tx = optax.chain(causalvae_run.adjacency_gradient_mask(support), optax.adam(0.1))
    state = tx.init(params)
    grads = {"scm": {"adjacency": jnp.ones((2, 2))}, "other": jnp.ones(3)}
    for _ in range(3):
        updates, state = tx.update(grads, state, params)
        params = optax.apply_updates(params, updates)
    adjacency = np.asarray(params["scm"]["adjacency"])
    assert adjacency[0, 1] < 1.0  # the edge moved
    np.testing.assert_array_equal(adjacency * (1 - support), 0.0)  # nothing else did
    assert np.all(np.asarray(params["other"]) < 1.0)


def test_without_a_support_the_mask_passes_every_update():
    tx = causalvae_run.adjacency_gradient_mask(None)
    grads = {"scm": {"adjacency": jnp.ones((2, 2))}}
    updates, _ = tx.update(grads, tx.init(grads))
    np.testing.assert_array_equal(updates["scm"]["adjacency"], 1.0)


def test_pc_result_is_saved_and_reused(tmp_path, monkeypatch):
    objective = causalvae_pendulum.get_config("tiny").causalvae.objective
    rng = np.random.default_rng(0)
    causes = rng.uniform(size=(400, 2))
    labels = np.column_stack([causes, causes.sum(1) ** 2, causes[:, 0] - causes[:, 1]])
    first = causalvae_graph.discovered_graph(labels, objective, tmp_path, seed=0)
    assert json.loads((tmp_path / causalvae_graph.DISCOVERY_FILE).read_text()) == first

    def fail(*args, **kwargs):
        raise AssertionError("PC ran again although its result was saved")

    monkeypatch.setattr(causalvae_graph, "pc", fail)
    assert causalvae_graph.discovered_graph(labels, objective, tmp_path, seed=0) == first
    with pytest.raises(AssertionError, match="ran again"):  # other settings: recomputed
        causalvae_graph.discovered_graph(labels, objective, tmp_path, seed=1)


def test_learned_dag_starts_a_and_is_its_support(tmp_path, monkeypatch):
    config = causalvae_pendulum.get_config("tiny")
    model = models.build_causalvae(config.causalvae.model, (96, 96, 4))
    saved = {"dag": PENDULUM_GRAPH.tolist()}
    monkeypatch.setattr(causalvae_graph, "discovered_graph", lambda *args: saved)
    config.causalvae.objective.learned_edge_init = 0.5
    start = causalvae_graph.initial_graph(config.causalvae.objective, model, None, None,
                                          tmp_path, 0)
    np.testing.assert_array_equal(start.adjacency, 0.5 * PENDULUM_GRAPH)
    np.testing.assert_array_equal(start.support, PENDULUM_GRAPH)
    assert start.report["graph_learning"] == "ci_tests"
    config.causalvae.objective.restrict_to_learned_graph = False
    free = causalvae_graph.initial_graph(config.causalvae.objective, model, None, None,
                                         tmp_path, 0)
    assert free.support is None


def test_learned_graph_report_knows_the_equivalence_class():
    flow = np.array(registry.get_dataset("flow").causal_graph)
    reversed_root = flow.copy()
    reversed_root[0, 1], reversed_root[1, 0] = 0, 1  # water -> ball: same class
    assert causalvae_evaluation.graph_report(reversed_root, flow)["in_true_equivalence_class"]
    no_collider = flow.copy()
    no_collider[3, 2], no_collider[2, 3] = 0, 1  # flow -> hole: the v-structure is gone
    assert not causalvae_evaluation.graph_report(no_collider, flow)["in_true_equivalence_class"]


# ---- bad input: one-line errors ------------------------------------------------------


@pytest.mark.parametrize("adjacency, message", [
    (np.zeros((3, 3)), r"must be empty or 4x4 \(one row and column per concept\); got shape \(3, 3\)"),
    (np.eye(4), "has a directed cycle"),
    ([[0, 1, 0, 0], [0, 0, 1, 0], [1, 0, 0, 0], [0, 0, 0, 0]], "has a directed cycle"),
    ([[0, np.nan, 0, 0]] + [[0] * 4] * 3, "non-finite"),
])
def test_bad_hand_set_adjacency_is_refused_with_one_line(adjacency, message):
    with pytest.raises(ValueError, match=message) as error:
        causalvae_graph.check_hand_set_adjacency(adjacency, 4)
    assert "\n" not in str(error.value)


def test_bad_hand_set_adjacency_is_refused_before_training(tmp_path):
    config = causalvae_pendulum.get_config("tiny")
    config.causalvae.objective.initial_adjacency = ((0, 1, 0, 0), (1, 0, 0, 0),
                                                    (0, 0, 0, 0), (0, 0, 0, 0))
    mesh = jax.sharding.Mesh(np.array(jax.devices()[:1]), ("data",))
    with pytest.raises(ValueError, match="directed cycle"):
        causalvae_stage.validate(config, mesh, tmp_path)


def test_labels_with_nan_are_refused_with_one_line():
    labels = np.ones((5, 4), np.float32)
    labels[3, 2] = np.nan
    with pytest.raises(ValueError, match="training label 2 of example 3 is nan") as error:
        causalvae_stage.check_finite_labels(labels, "pendulum")
    assert "\n" not in str(error.value)


def test_intervention_on_a_concept_out_of_range_is_refused():
    config = causalvae_pendulum.get_config("tiny")
    model = models.build_causalvae(config.causalvae.model, (96, 96, 4))
    images = np.zeros((1, 96, 96, 4), np.uint8)
    with pytest.raises(ValueError, match="concept 4 is out of range: the model has 4 concepts"):
        causalvae_interventions.intervene(model, {}, images, 4, 0.0)


@pytest.mark.parametrize("field, value, message", [
    ("model.decoder", "deconv", "causalvae.model.decoder 'deconv' is unknown"),
    ("objective.graph_learning", "magic", "graph_learning 'magic' is unknown"),
    ("objective.ci_alpha", 1.5, "0 < ci_alpha < 1.*got ci_alpha=1.5,"),
    ("objective.learned_edge_init", 0.0, "learned_edge_init must be nonzero"),
    ("objective.label_prior_weight", -1.0, "label_prior_weight must be positive, got -1.0"),
    ("train.graph_threshold", -0.5, "got graph_threshold=-0.5, figure_values="),
    ("optim.learning_rate", 0.0, "learning_rate must be positive, got 0.0"),
])
def test_bad_graph_settings_are_refused(tmp_path, field, value, message):
    config = causalvae_pendulum.get_config("tiny")
    section, name = field.split(".")
    config.causalvae[section][name] = value
    mesh = jax.sharding.Mesh(np.array(jax.devices()[:1]), ("data",))
    with pytest.raises(ValueError, match=message):
        causalvae_stage.validate(config, mesh, tmp_path)


# ---- counterfactual scores --------------------------------------------------------


def test_region_errors_by_hand():
    factual = np.zeros((1, 2, 2, 4), np.uint8)
    truth = factual.copy()
    truth[0, 0, 0, :3] = 255  # the intervention changes one pixel of four
    predicted = truth.copy()
    predicted[0, 1, 1, 0] = 255  # the model also disturbs a kept pixel, in one channel
    errors = cs.region_errors(predicted, truth, factual)
    assert errors["changed_fraction"] == 0.25
    assert errors["mse_changed"] == 0.0
    assert errors["mse_kept"] == pytest.approx((1 / 3) / 3)
    assert errors["mse"] == pytest.approx((1 / 3) / 4)


def test_concept_kinds_of_the_true_graphs():
    assert cs.concept_kinds(PENDULUM_GRAPH) == ["root", "root", "leaf", "leaf"]
    flow = registry.get_dataset("flow").causal_graph
    assert cs.concept_kinds(flow) == ["root", "intermediate", "leaf", "root"]


def test_counterfactual_pairs_spread_images_and_borrow_other_labels():
    indices = np.arange(100, 200)
    labels = np.arange(100, dtype=np.float64)[:, None] * np.ones((1, 4))
    chosen, values = cs.counterfactual_pairs(indices, labels, 5, seed=0)
    np.testing.assert_array_equal(chosen, [100, 125, 150, 174, 199])
    assert values.shape == (5, 4) and len(np.unique(values[:, 0])) == 5
    assert set(values[:, 0]) <= set(labels[:, 0])


def test_a_missing_compared_run_is_refused_before_training(tmp_path):
    config = causalvae_pendulum.get_config("tiny")
    config.causalvae.train.compare_workdirs = (str(tmp_path / "not_a_run"),)
    mesh = jax.sharding.Mesh(np.array(jax.devices()[:1]), ("data",))
    with pytest.raises(ValueError, match="not found.*must list the --workdir of finished"):
        causalvae_stage.validate(config, mesh, tmp_path)
