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
