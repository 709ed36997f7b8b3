"""CT-VAE action-retrieval scores on hand-made probabilities, and the confusion
figure."""

import numpy as np
import pytest
from PIL import Image

from causal_disent.evaluation import ct_evaluation

# F = 2 factors, A = 4 actions: (f0+, f1+, f0-, f1-).
NAMES = ["f0+", "f1+", "f0-", "f1-"]


def one_hot_probs(predicted, num_actions=4):
    """Probabilities whose argmax is `predicted`, with some mass elsewhere."""
    probs = np.full((len(predicted), num_actions), 0.1)
    probs[np.arange(len(predicted)), predicted] = 0.7
    return probs / probs.sum(-1, keepdims=True)


@pytest.fixture
def scores():
    true = np.array([0, 0, 0, 1, 1, 2, 2, 2, 2, 3])
    predicted = np.array([0, 2, 1, 1, 1, 2, 0, 2, 3, 3])
    return ct_evaluation.action_retrieval_scores(one_hot_probs(predicted), true)


def test_action_confusion_counts_true_against_predicted(scores):
    assert scores["action_confusion"] == [
        [1, 1, 1, 0],
        [0, 2, 0, 0],
        [1, 0, 2, 1],
        [0, 0, 0, 1],
    ]
    # The existing keys are unchanged and agree with the new matrix.
    matrix = np.array(scores["action_confusion"])
    assert scores["action_accuracy"] == np.trace(matrix) / matrix.sum() == 0.6
    assert scores["per_action_accuracy"] == pytest.approx([1 / 3, 1.0, 0.5, 1.0])
    # Folded: each prediction's factor is its argmax's (0.7 ≥ 0.1 + 0.1), so the
    # factor confusion sums the action matrix over directions.
    folded = matrix.reshape(2, 2, 2, 2).sum(axis=(0, 2))
    assert scores["confusion"] == folded.tolist() == [[5, 2], [0, 3]]
    assert scores["factor_accuracy"] == 0.8


def test_pair_mix_scores_are_the_pair_mean_on_the_authors_mix():
    """Reweighting balanced test pairs to the authors' mix (factor f's share ∝ its
    size − 1) gives the plain accuracy of a test set drawn in that mix, here the
    same pairs per action repeated (size − 1) times: sizes 3 and 5 weigh f1's
    actions twice f0's."""
    predicted_per_action = {0: [0, 2, 1, 0], 1: [1, 1, 3, 0], 2: [2, 2, 2, 0], 3: [3, 1, 1, 1]}
    def pairs(repeats):
        true = [a for a, preds in predicted_per_action.items() for _ in range(repeats[a]) for _ in preds]
        predicted = [p for a, preds in predicted_per_action.items() for _ in range(repeats[a]) for p in preds]
        return ct_evaluation.action_retrieval_scores(one_hot_probs(predicted), np.array(true))
    balanced = pairs({0: 1, 1: 1, 2: 1, 3: 1})
    authors = pairs({0: 2, 1: 4, 2: 2, 3: 4})
    mixed = ct_evaluation.pair_mix_scores(balanced, factor_sizes=(3, 5))
    assert mixed["action_accuracy"] == pytest.approx(authors["action_accuracy"])
    assert mixed["factor_accuracy"] == pytest.approx(authors["factor_accuracy"])
    assert mixed["action_accuracy"] != pytest.approx(balanced["action_accuracy"])
    assert ct_evaluation.pair_mix_scores(
        ct_evaluation.action_retrieval_scores(one_hot_probs([0, 1]), np.array([0, 1])),
        factor_sizes=(3, 5)) is None


def test_action_without_pairs_gets_an_empty_row():
    scores = ct_evaluation.action_retrieval_scores(one_hot_probs([0, 1]), np.array([0, 1]))
    assert scores["action_confusion"][2] == [0, 0, 0, 0]
    assert scores["per_action_accuracy"][2] is None


def test_confusion_figure_is_a_png(scores, tmp_path):
    path = ct_evaluation.save_confusion_figure(scores, NAMES, tmp_path / "figures" / "c.png")
    assert path == tmp_path / "figures" / "c.png"
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert path.stat().st_size > 10_000
    with Image.open(path) as image:
        width, height = image.size
        pixels = np.asarray(image.convert("L"))
    assert width > 300 and height > 300
    assert pixels.std() > 10  # not a blank canvas


def test_confusion_figure_without_pairs_for_an_action_and_many_actions(tmp_path):
    """Rows with no pair (accuracy None) and more actions than get annotations."""
    many = 30
    true = np.arange(many) % (many - 1)  # the last action has no pair
    scores = ct_evaluation.action_retrieval_scores(one_hot_probs(true, many), true)
    names = [f"a{i}" for i in range(many)]
    path = ct_evaluation.save_confusion_figure(scores, names, tmp_path / "many.png")
    assert path.stat().st_size > 10_000


def test_confusion_figure_rejects_mismatched_names(scores, tmp_path):
    with pytest.raises(ValueError, match="3 action names"):
        ct_evaluation.save_confusion_figure(scores, NAMES[:3], tmp_path / "c.png")


# --------------------------------------------------------------------------- #
# The paper's figures, on an untrained tiny CT-VAE (configs/ctvae_shapes3d.py:tiny)
# --------------------------------------------------------------------------- #
@pytest.fixture(scope="module")
def shapes3d():
    from causal_disent.data import registry

    return registry.get_dataset("shapes3d_synth")


@pytest.fixture(scope="module")
def tiny_ctvae(shapes3d):
    import jax
    import jax.numpy as jnp

    from causal_disent import ct_interventions
    from causal_disent.data import transitions
    from causal_disent.runs import ct as ct_run
    from causal_disent.runs import mcqvae as mcqvae_run
    from tests.helpers import tiny_config

    config = tiny_config()
    mcqvae = mcqvae_run.build_model(config, shapes3d)
    transition = ct_run.build_model(config, shapes3d)
    # Compiled initialisation: op by op, it takes several times longer on CPU.
    mcqvae_params = jax.jit(lambda key: mcqvae.init(
        key, jnp.zeros((1, *shapes3d.image_shape)))["params"])(jax.random.key(0))
    params = jax.jit(lambda key: transition.init(
        {"params": key, "gumbel": key, "noise": key},
        jnp.zeros((1, transition.num_nodes), jnp.int32), jnp.zeros((1,), jnp.int32),
    )["params"])(jax.random.key(1))
    return ct_interventions.CTVAE(
        mcqvae=mcqvae, mcqvae_params=mcqvae_params, transition=transition,
        transition_params=params, image_shape=tuple(shapes3d.image_shape),
        latent_shape=mcqvae.code_grid_shape(shapes3d.image_shape),
        action_names=tuple(transitions.dataset_action_names(shapes3d)),
    )


def test_intervention_rows_start_with_the_input_image_then_its_reconstruction(
        tiny_ctvae, shapes3d):
    from causal_disent import ct_interventions

    split = {"test": np.array([5, 9])}
    start, description = ct_evaluation.intervention_start(shapes3d, split)
    middle = [size // 2 for size in shapes3d.factor_sizes]
    assert shapes3d.index_to_factors(np.array([start]))[0].tolist() == middle
    assert description == "every factor at its middle value"
    image = shapes3d.images(np.array([start]))[0]
    rows = ct_evaluation.chained_interventions(tiny_ctvae, image, times=2)
    assert rows.shape == (12, 4, 64, 64, 3) and rows.dtype == np.uint8
    for action, row in enumerate(rows):
        np.testing.assert_array_equal(row[0], image)  # the dataset's image, not a decoding
        np.testing.assert_array_equal(
            row[1:], ct_interventions.apply_action(tiny_ctvae, image, action, 2))
    assert ct_evaluation.chain_column_labels(2) == ["input", "reconstruction", "×1", "×2"]


def test_structure_figures_have_colour_bars_and_name_every_action(tiny_ctvae):
    names = list(tiny_ctvae.action_names)
    num_codebooks, height, width = tiny_ctvae.latent_shape
    nodes = num_codebooks * height * width
    rng = np.random.default_rng(0)
    mask, adjacency = rng.random((12, nodes)), rng.random((12, nodes, nodes))
    masks = ct_evaluation.draw_mask_figure(mask, names, tiny_ctvae.latent_shape, "on test")
    graphs = ct_evaluation.draw_adjacency_figure(adjacency, names, tiny_ctvae.latent_shape,
                                                 "on test")
    for figure in (masks, graphs):
        assert [ax.get_label() for ax in figure.axes].count("<colorbar>") == 1
        assert "Fig. 6" in figure.get_suptitle() and "on test" in figure.get_suptitle()
    mask_panels = [ax for ax in masks.axes if ax.images]
    assert len(mask_panels) == 12 * num_codebooks
    # Rows are actions (labelled on the first column), columns codebooks.
    assert [ax.get_ylabel() for ax in mask_panels[::num_codebooks]] == names
    assert [ax.get_title() for ax in mask_panels[:num_codebooks]] == [
        f"codebook {c}" for c in range(num_codebooks)]
    graph_panels = [ax for ax in graphs.axes if ax.images]
    assert [ax.get_title() for ax in graph_panels] == names
    assert {(ax.get_xlabel(), ax.get_ylabel()) for ax in graph_panels} == {
        ("parent node j", "child node i")}
    # Each panel shows its action's matrix as given (M[i, j] at row i, column j), and
    # each mask panel its codebook's h × w grid of the action's mask.
    np.testing.assert_array_equal(graph_panels[3].images[0].get_array(), adjacency[3])
    np.testing.assert_array_equal(
        mask_panels[3 * num_codebooks + 1].images[0].get_array(),
        mask[3].reshape(num_codebooks, height, width)[1])


def test_save_figures_writes_the_three_figures(tiny_ctvae, shapes3d, tmp_path):
    import jax

    ct_evaluation.save_figures(
        model=tiny_ctvae.transition, params=tiny_ctvae.transition_params,
        mcqvae=tiny_ctvae.mcqvae, mcqvae_params=tiny_ctvae.mcqvae_params, dataset=shapes3d,
        split={"test": np.arange(4)}, rng=jax.random.key(0), figures_dir=tmp_path,
        times=2, num_structure_images=4)
    for name in ("ct_interventions.png", "ct_structure_masks.png",
                 "ct_structure_adjacency.png"):
        with Image.open(tmp_path / name) as image:
            assert image.format == "PNG" and np.asarray(image.convert("L")).std() > 10


def test_retrieval_scores_give_each_actions_thresholded_structure_densities(tiny_ctvae):
    """The headline's densities are the most likely masks and graphs of the pairs' X,
    averaged per action, as the layer gives them; the draws' are their sampled ones."""
    import jax

    from causal_disent.utils.sharding import make_data_mesh

    layer, params = tiny_ctvae.transition, tiny_ctvae.transition_params
    rng = np.random.default_rng(0)
    x_codes = rng.integers(0, layer.num_codes, (6, layer.num_nodes)).astype(np.int32)
    y_codes = rng.integers(0, layer.num_codes, (6, layer.num_nodes)).astype(np.int32)
    actions = rng.integers(0, layer.num_actions, 6)
    scores = ct_evaluation.retrieval_scores(
        layer, params, x_codes, y_codes, actions, make_data_mesh(), 4, jax.random.key(3),
        headline="most_likely", num_draws=2)

    most_likely = layer.with_structure("most_likely")
    every = most_likely.apply({"params": params}, x_codes, method=most_likely.all_actions,
                              rngs={"gumbel": jax.random.key(0), "noise": jax.random.key(0)})
    mask = np.asarray(every["mask"])  # [A, n, N]
    assert set(np.unique(mask)) <= {0.0, 1.0}  # thresholded, not probabilities
    np.testing.assert_allclose(scores["densities"]["mask_density"], mask.mean(axis=(1, 2)),
                               rtol=1e-5)
    np.testing.assert_allclose(scores["densities"]["edge_density"],
                               np.asarray(every["adjacency"]).mean(axis=(1, 2, 3)), rtol=1e-5)
    for densities in (scores["densities"], scores["draws"]["densities"]):
        for values in densities.values():
            assert len(values) == layer.num_actions and all(0 <= v <= 1 for v in values)

    from causal_disent.train import ct_stage
    names = tiny_ctvae.action_names
    point = ct_stage.curve_point(scores, names)
    assert point[f"mask_density/{names[0]}"] == scores["densities"]["mask_density"][0]
    assert (point[f"edge_density_draws_mean/{names[-1]}"]
            == scores["draws"]["densities"]["edge_density"][-1])
